package group

import (
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The snapshots the data source virt_managed_instances shows of each member
// (update_policy.snapshot).

// snapshotView is one snapshot of a member's disk.
type snapshotView struct {
	DeviceName       string `tfsdk:"device_name"`
	Volume           string `tfsdk:"volume"`
	Tag              string `tfsdk:"tag"`
	TemplateRevision string `tfsdk:"template_revision"`
	TakenAt          string `tfsdk:"taken_at"`
	KeptUntil        string `tfsdk:"kept_until"`
}

// snapshotsAttribute is the schema of an instance's snapshots.
func snapshotsAttribute() schema.Attribute {
	return schema.ListNestedAttribute{
		MarkdownDescription: "The snapshots the group keeps of the member's preserved disks (`update_policy.snapshot`), oldest first: taken by a rollout after the member's graceful stop, before the new template ran.",
		Computed:            true,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"device_name":       schema.StringAttribute{Computed: true, MarkdownDescription: "The disk's device name."},
			"volume":            schema.StringAttribute{Computed: true, MarkdownDescription: "The volume in the group's pool that holds the snapshot (a qcow2 internal snapshot: `qemu-img snapshot -l` lists it)."},
			"tag":               schema.StringAttribute{Computed: true, MarkdownDescription: "The snapshot's name in the volume."},
			"template_revision": schema.StringAttribute{Computed: true, MarkdownDescription: "The template revision the member was on when the snapshot was taken: the one a rollback goes back to."},
			"taken_at":          schema.StringAttribute{Computed: true, MarkdownDescription: "When the apply that took it was planned (RFC 3339)."},
			"kept_until":        schema.StringAttribute{Computed: true, MarkdownDescription: "When the first apply after it deletes it (RFC 3339): `retention` (as the group's `update_policy.snapshot` gives it now) after the end of the apply that took it. Empty while no apply of the group has succeeded since it was taken (its rollout failed or was rolled back, or was cut off): it may hold the only copy of the data from before its rollout, so it is kept, beside any later rollout's snapshot, until an apply succeeds; its retention counts from the end of that apply."},
		}},
	}
}

// snapshotsView is the member's snapshots as the group's inventory keeps them.
func snapshotsView(inv engine.Inventory, policy engine.UpdatePolicy, member string) []snapshotView {
	out := []snapshotView{}
	stamp := func(ms int64) string {
		if ms == 0 {
			return ""
		}
		return time.UnixMilli(ms).UTC().Format(time.RFC3339)
	}
	for _, m := range inv.Snapshots(member) {
		keptUntil := ""
		if m.ReadyAt > 0 {
			keptUntil = stamp(policy.KeepUntil(m.ReadyAt))
		}
		out = append(out, snapshotView{DeviceName: engine.DeviceOf(member, m.Name), Volume: m.Name, Tag: m.Tag, TemplateRevision: m.Revision,
			TakenAt: stamp(m.TakenAt), KeptUntil: keptUntil})
	}
	return out
}
