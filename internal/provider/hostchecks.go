package provider

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Plan-time checks against the host: what a plan can know will fail is refused before apply
// starts, with the attribute, the value, what is allowed and how to fix it.

// sourceProblem checks a disk source (a volume name in pool, or an absolute path) on the host.
// It returns the volume when the source is one, and the judgement of the path (its Problem is
// "" when none). A path no pool holds is refused unless allowHostPaths; then hostPathProblem
// judges the file it reaches (by its text only on a host whose files cannot be seen, which
// Unseen says). A volume's own file is judged too where it can be seen: a link in a pool's
// directory must not lead to /etc.
func sourceProblem(ctx context.Context, b backend.Backend, pool, source string, allowHostPaths bool) (*backend.VolumeInfo, pathJudgement, error) {
	facts := hostFactsOf(b)
	info, err := b.LookupVolume(ctx, pool, source)
	if errors.Is(err, backend.ErrNotFound) && facts.Local && strings.HasPrefix(source, "/") {
		// A link to a pool's volume is that volume (libvirt resolves links too, but refreshes
		// only the pool whose directory the path names).
		if resolved, rerr := filepath.EvalSymlinks(source); rerr == nil && resolved != source {
			if rinfo, lerr := b.LookupVolume(ctx, pool, resolved); lerr == nil {
				info, err = rinfo, nil
			}
		}
	}
	switch {
	case errors.Is(err, backend.ErrNotFound):
		if !strings.HasPrefix(source, "/") {
			return nil, pathJudgement{Problem: fmt.Sprintf("there is no volume %q in storage pool %q (`virsh vol-list %s` lists them). Create the volume first, or give the absolute path of a volume of another pool", source, pool, pool)}, nil
		}
		if !allowHostPaths {
			return nil, pathJudgement{Problem: fmt.Sprintf("%q is not a volume of any storage pool on this host. Disk sources are storage volumes: put the file in a pool's directory (then `virsh pool-refresh <pool>`), or set allow_host_paths = true in the provider block to attach host files outside pools", source)}, nil
		}
		return nil, hostPathProblem(source, diskPath, false, facts), nil
	case err != nil:
		return nil, pathJudgement{}, err
	}
	if facts.Local && strings.HasPrefix(info.Path, "/") {
		// libvirt vouches for its volumes: only a file this machine shows to be a system file or
		// a character device is refused (one the provider may not see is left to libvirt).
		if j := hostPathProblem(info.Path, diskPath, true, facts); j.Problem != "" && j.Resolved != "" && info.Kind != backend.VolumeDir {
			return &info, pathJudgement{Problem: fmt.Sprintf("volume %q of pool %q: %s", info.Name, info.Pool, j.Problem)}, nil
		}
	}
	switch info.Kind {
	case backend.VolumeFile, backend.VolumeBlock:
		return &info, pathJudgement{}, nil
	case backend.VolumeDir:
		return &info, pathJudgement{Problem: fmt.Sprintf("%q is a directory, not a disk image", source)}, nil
	default:
		return &info, pathJudgement{Problem: fmt.Sprintf("%q is a %s volume; a disk source must be a file or a block device", source, info.Kind)}, nil
	}
}

// checkSource adds sourceProblem's verdict as an error on the attribute at p, or a warning when
// the host's files could not be seen.
func checkSource(ctx context.Context, diags *diag.Diagnostics, b backend.Backend, p path.Path, what, pool, source string, allowHostPaths bool) *backend.VolumeInfo {
	info, j, err := sourceProblem(ctx, b, pool, source, allowHostPaths)
	if err != nil {
		diags.AddAttributeError(p, "Cannot check "+what, err.Error())
		return nil
	}
	if j.Problem != "" {
		diags.AddAttributeError(p, "Invalid "+what, what+": "+j.Problem+".")
	} else if j.Unseen {
		summary, detail := unseenWarning(what, source, hostFactsOf(b).Name)
		diags.AddAttributeWarning(p, summary, detail)
	}
	return info
}

// checkPool refuses a storage pool that does not exist or does not run.
func checkPool(ctx context.Context, diags *diag.Diagnostics, b backend.Backend, p path.Path, pool string) bool {
	info, err := b.LookupPool(ctx, pool)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		diags.AddAttributeError(p, "Storage pool not found", fmt.Sprintf("pool %q does not exist on this libvirt host (`virsh pool-list --all` lists them). Create it, or name an existing pool.", pool))
		return false
	case err != nil:
		diags.AddAttributeError(p, "Cannot check the storage pool", err.Error())
		return false
	case !info.Active:
		diags.AddAttributeError(p, "Storage pool not running", fmt.Sprintf("pool %q exists but is not active. Start it with `virsh pool-start %s` (and `virsh pool-autostart %s`).", pool, pool, pool))
		return false
	}
	return true
}

// checkNetwork refuses a libvirt network that does not exist or does not run.
func checkNetwork(ctx context.Context, diags *diag.Diagnostics, b backend.Backend, p path.Path, network string) {
	active, err := b.LookupNetwork(ctx, network)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		diags.AddAttributeError(p, "Network not found", fmt.Sprintf("network %q does not exist on this libvirt host (`virsh net-list --all` lists them). Name an existing network, or use type = \"user\".", network))
	case err != nil:
		diags.AddAttributeError(p, "Cannot check the network", err.Error())
	case !active:
		diags.AddAttributeError(p, "Network not running", fmt.Sprintf("network %q exists but is not active. Start it with `virsh net-start %s`.", network, network))
	}
}

// checkLimits refuses vCPUs and memory beyond what the host allows a domain of that type.
func checkLimits(ctx context.Context, diags *diag.Diagnostics, b backend.Backend, domainType string, vcpu, memoryMiB int64, vcpuPath, memoryPath path.Path) {
	l, err := b.Limits(ctx, domainType)
	if err != nil {
		diags.AddError("Cannot read the host's limits", err.Error())
		return
	}
	if vcpu > l.MaxVCPU {
		diags.AddAttributeError(vcpuPath, "Too many vCPUs", fmt.Sprintf("vcpu = %d, but a %s domain on this host has at most %d. Use %d or fewer.", vcpu, domainType, l.MaxVCPU, l.MaxVCPU))
	}
	if memoryMiB > l.MemoryMiB {
		diags.AddAttributeError(memoryPath, "More memory than the host has", fmt.Sprintf("memory_mib = %d, but the host has %d MiB in all. Use %d or less.", memoryMiB, l.MemoryMiB, l.MemoryMiB))
	}
}

// checkGroupHost checks the group's plan against the host: on create everything, on update
// what changed (a host that changed behind Terraform's back must not block an unrelated
// change, such as a scale-in).
func (r *statefulGroupResource) checkGroupHost(ctx context.Context, diags *diag.Diagnostics, plan, prior *statefulGroupModel) {
	b := r.data.Backend
	t := plan.Template
	var pt *templateModel
	if prior != nil {
		pt = prior.Template
	}
	changed := func(now, before attr.Value) bool { return prior == nil || pt == nil || !now.Equal(before) }
	tp := path.Root("template")
	poolOK := true
	if !r.checkHosts(ctx, diags, plan, prior) {
		return
	}
	if known(plan.Pool) && prior == nil {
		poolOK = checkPool(ctx, diags, b, path.Root("pool"), plan.Pool.ValueString())
	}
	for i, n := range t.NetworkInterface {
		if !known(n.Type, n.Network) || n.Type.ValueString() != "network" || n.Network.ValueString() == "" {
			continue
		}
		if pt != nil && i < len(pt.NetworkInterface) && !changed(n.Network, pt.NetworkInterface[i].Network) {
			continue
		}
		checkNetwork(ctx, diags, b, tp.AtName("network_interface").AtListIndex(i).AtName("network"), n.Network.ValueString())
	}
	if bd := t.BootDisk; bd != nil && known(bd.SourceImage, bd.SizeMiB, plan.Pool) && !bd.SourceImage.IsNull() && poolOK {
		var before *bootDiskModel
		if pt != nil {
			before = pt.BootDisk
		}
		if before == nil || changed(bd.SourceImage, before.SourceImage) || changed(bd.SizeMiB, before.SizeMiB) {
			p := tp.AtName("boot_disk")
			info := checkSource(ctx, diags, b, p.AtName("source_image"), "source_image", plan.Pool.ValueString(), bd.SourceImage.ValueString(), r.data.AllowHostPaths)
			if info != nil && uint64(bd.SizeMiB.ValueInt64())<<20 < info.CapacityBytes {
				need := (info.CapacityBytes + 1<<20 - 1) >> 20
				diags.AddAttributeError(p.AtName("size_mib"), "Boot disk smaller than its image",
					fmt.Sprintf("size_mib = %d, but source_image %q has a virtual size of %d MiB: a boot disk cannot be smaller than its image. Use size_mib = %d or more.", bd.SizeMiB.ValueInt64(), bd.SourceImage.ValueString(), need, need))
			}
		}
	}
	if known(t.VCPU, t.MemoryMiB) && (pt == nil || changed(t.VCPU, pt.VCPU) || changed(t.MemoryMiB, pt.MemoryMiB) || changed(t.DomainType, pt.DomainType)) {
		domainType := t.DomainType.ValueString()
		if !known(t.DomainType) || t.DomainType.IsNull() {
			var err error
			if domainType, err = b.DefaultDomainType(ctx); err != nil {
				diags.AddError("Cannot tell whether the host runs KVM", err.Error())
				return
			}
		}
		checkLimits(ctx, diags, b, domainType, t.VCPU.ValueInt64(), t.MemoryMiB.ValueInt64(), tp.AtName("vcpu"), tp.AtName("memory_mib"))
	}
}

// checkHosts refuses a distribution_policy host that no provider host block names, and checks
// that the group's pool runs on each host the plan adds. A host the group already uses is not
// read: one that does not answer must not block a change, its members are UNKNOWN instead.
func (r *statefulGroupResource) checkHosts(ctx context.Context, diags *diag.Diagnostics, plan, prior *statefulGroupModel) bool {
	if plan.Distribution == nil || !known(plan.Distribution.Hosts) {
		return true
	}
	hosts := plan.hosts(ctx, diags)
	var before []string
	if prior != nil {
		before = prior.hosts(ctx, diags)
		if len(before) == 0 {
			before = []string{engine.DefaultHost}
		}
	}
	at := path.Root("distribution_policy").AtName("hosts")
	names := r.data.Reconciler.HostNames()
	ok := true
	for i, h := range hosts {
		if !slices.Contains(names, h) {
			diags.AddAttributeError(at.AtListIndex(i), "Unknown host",
				fmt.Sprintf("distribution_policy.hosts[%d] = %q, but the provider has no host of that name. The provider's hosts: %s (default is its own uri). Add a host block named %q to the provider, or name one of these.", i, h, strings.Join(names, ", "), h))
			ok = false
		}
	}
	if !ok || !known(plan.Pool) {
		return ok
	}
	pool := plan.Pool.ValueString()
	for i, h := range hosts {
		if h == engine.DefaultHost || slices.Contains(before, h) {
			continue // the default host's pool is checked with the pool attribute
		}
		b := r.data.Reconciler.Hosts[h]
		info, err := b.LookupPool(ctx, pool)
		switch {
		case errors.Is(err, backend.ErrNotFound):
			diags.AddAttributeError(at.AtListIndex(i), "Storage pool not found on host",
				fmt.Sprintf("pool %q does not exist on host %q: every host of a group needs the group's pool. Create it there (`virsh -c <its uri> pool-define-as ...`), or leave the host out.", pool, h))
			ok = false
		case err != nil:
			diags.AddAttributeError(at.AtListIndex(i), "Cannot check the storage pool on host", fmt.Sprintf("host %q: %s", h, err))
			ok = false
		case !info.Active:
			diags.AddAttributeError(at.AtListIndex(i), "Storage pool not running on host",
				fmt.Sprintf("pool %q exists on host %q but is not active. Start it there with `virsh pool-start %s`.", pool, h, pool))
			ok = false
		}
	}
	return ok
}
