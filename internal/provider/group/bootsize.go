package group

import (
	"context"
	"encoding/binary"
	"io"
	"os"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// bootSizePath is template.boot_disk.size_mib.
var bootSizePath = path.Root("template").AtName("boot_disk").AtName("size_mib")

// planBootDiskSize fills template.boot_disk.size_mib when the configuration leaves it out and
// the plan does not know it (a create, or an update that changes the group): the size
// engine.BootDiskSizeMiB gives from the image's virtual size, read on the group's first host,
// and the size the boot disks have now. A plan that changes nothing keeps the state's value
// (the framework plans a computed attribute as its state then), and nothing is read.
func (r *StatefulGroupResource) planBootDiskSize(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan *StatefulGroupModel) {
	bd := plan.Template.BootDisk
	if bd == nil || !bd.SizeMiB.IsUnknown() || !providerdata.Known(bd.SourceImage) {
		return
	}
	var configured types.Int64
	if d := req.Config.GetAttribute(ctx, bootSizePath, &configured); d.HasError() || !configured.IsNull() {
		return // set, perhaps to a value known only at apply
	}
	var priorMiB int64
	var prior StatefulGroupModel
	if !req.State.Raw.IsNull() && !req.State.Get(ctx, &prior).HasError() && prior.Template != nil {
		priorMiB = engine.DefaultBootDiskMiB // what a template without boot_disk gave its members
		if pb := prior.Template.BootDisk; pb != nil && providerdata.Known(pb.SizeMiB) && !pb.SizeMiB.IsNull() {
			priorMiB = pb.SizeMiB.ValueInt64()
		}
	}
	image := !bd.SourceImage.IsNull()
	var imageBytes uint64
	if image && providerdata.Known(plan.Pool) {
		imageBytes = r.imageBytes(ctx, plan, bd.SourceImage.ValueString())
	}
	size := engine.BootDiskSizeMiB(image, imageBytes, priorMiB)
	tflog.Debug(ctx, "boot disk size from its image", map[string]any{"group": plan.Name.ValueString(), "image": bd.SourceImage.ValueString(), "image_bytes": imageBytes, "prior_mib": priorMiB, "size_mib": size})
	bd.SizeMiB = types.Int64Value(size)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, bootSizePath, bd.SizeMiB)...)
}

// imageBytes is the virtual size of the group's source image as its first host reports it: the
// capacity of the volume it is, or, for a host file on this machine that allow_host_paths lets
// through, what the file says. 0 when it cannot be told (the plan's checks say why, when
// something is wrong with the image).
func (r *StatefulGroupResource) imageBytes(ctx context.Context, plan *StatefulGroupModel, image string) uint64 {
	var ignored diag.Diagnostics // an unreadable list is refused by the plan's other checks
	h := engine.DefaultHost
	if hosts := plan.hosts(ctx, &ignored); len(hosts) > 0 {
		h = hosts[0]
	}
	b, err := r.Data.Host(h)
	if err != nil {
		return 0
	}
	ctx, cancel := reconcile.HostContext(ctx) // one reading of the host
	defer cancel()
	info, j, err := providerdata.SourceProblem(ctx, b, plan.Pool.ValueString(), image, r.Data.AllowHostPaths)
	switch {
	case err != nil:
		tflog.Debug(ctx, "cannot read the image's size", map[string]any{"image": image, "host": h, "error": err.Error()})
	case info != nil:
		return info.CapacityBytes
	case j.Problem == "" && j.Resolved != "":
		return localImageBytes(j.Resolved)
	}
	return 0
}

// qcow2Magic opens every qcow2 image; its header has the virtual size at bytes 24 to 31.
const qcow2Magic = "QFI\xfb"

// localImageBytes is the virtual size of the disk image at p on this machine: a qcow2 image's
// from its header, a raw file's its length; 0 when it cannot be read.
func localImageBytes(p string) uint64 {
	f, err := os.Open(p)
	if err != nil {
		return 0
	}
	defer f.Close()
	var h [32]byte
	if _, err := io.ReadFull(f, h[:]); err == nil && string(h[:4]) == qcow2Magic {
		return binary.BigEndian.Uint64(h[24:32])
	}
	fi, err := f.Stat()
	if err != nil || !fi.Mode().IsRegular() {
		return 0
	}
	return uint64(fi.Size())
}
