package group

import (
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/listvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// update_policy.snapshot: data-safe upgrades (engine/snapshots.go).

// snapshotBlock is update_policy's snapshot block.
func snapshotBlock() schema.Block {
	return schema.SingleNestedBlock{
		MarkdownDescription: "Snapshots the preserved disks of each member a rollout restarts or replaces onto a new template, so that a rollback (`on_failure = \"ROLLBACK\"`) puts the data back with the image. After the member's graceful stop, and before the new template touches its disks, each chosen preserved disk gets a qcow2 internal snapshot: it takes the same time whatever the disk's size, and costs space only as the new template writes over old blocks. Before any member stops, the rollout checks that the pool has room for every byte of the disks it snapshots, and stops with the numbers if not. A rollback stops the member, puts each disk back to its snapshot, then starts it on its old template. A heal, a member action or a change that needs only `REFRESH` takes no snapshot. Only volumes the group made are snapshotted (a volume a per-instance config names is the user's, and is left as it is); each disk keeps one snapshot, the next rollout's replacing it once taken, except a snapshot no apply has settled yet (its rollout failed, or was cut off, or so was its rollback): that one may hold the only copy of the data from before its rollout, and is kept beside the next rollout's until an apply of the group succeeds, then for `retention`. Snapshots are kept `retention` after the apply that took them succeeded, and shown in the data source `virt_managed_instances`. See the guide *Upgrading a database group*.",
		Attributes: map[string]schema.Attribute{
			"disks": schema.ListAttribute{
				MarkdownDescription: "The device names of the preserved disks to snapshot. Unset: every preserved disk of the member (from the stateful policy or its per-instance config). A name that is not a preserved disk of a member is not snapshotted on that member.",
				ElementType:         types.StringType,
				Optional:            true,
				Validators: []validator.List{
					listvalidator.SizeAtLeast(1),
					listvalidator.UniqueValues(),
					listvalidator.ValueStringsAre(providerdata.DeviceNameValidator),
				},
			},
			"retention": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("How long the snapshots of a rollout that succeeded are kept, from the end of its apply (its members were ready then); the first apply after that deletes them. A change applies to the snapshots already kept: made shorter, the next plan may delete them. Without the block, snapshots kept from before keep the default retention. Unset: `%q`; from `\"0s\"` to %s.", engine.FormatDuration(engine.DefaultSnapshotRetention), engine.FormatDuration(engine.SnapshotRetentionRule.Max)),
				Optional:            true,
				Validators:          []validator.String{providerdata.DurationIn(engine.SnapshotRetentionRule)},
			},
		},
	}
}

// snapshotModel is update_policy.snapshot.
type snapshotModel struct {
	Disks     types.List   `tfsdk:"disks"`
	Retention types.String `tfsdk:"retention"`
}

// engineSnapshot is the block as the engine's policy; nil when the block is not there.
func (m *snapshotModel) engineSnapshot() *engine.SnapshotPolicy {
	if m == nil {
		return nil
	}
	p := &engine.SnapshotPolicy{Retention: engine.DefaultSnapshotRetention}
	for _, e := range m.Disks.Elements() {
		if s, ok := e.(types.String); ok {
			p.Disks = append(p.Disks, s.ValueString())
		}
	}
	if d, err := engine.SnapshotRetentionRule.Parse(m.Retention.ValueString()); err == nil && !m.Retention.IsNull() {
		p.Retention = d
	}
	return p
}

// storedSnapshot is the block as the group record keeps the configuration.
func (m *snapshotModel) storedSnapshot() *store.ResourceSnapshot {
	if m == nil {
		return nil
	}
	s := &store.ResourceSnapshot{Retention: providerdata.OptString(m.Retention)}
	if !m.Disks.IsNull() {
		s.Disks = []string{}
		for _, e := range m.Disks.Elements() {
			if v, ok := e.(types.String); ok {
				s.Disks = append(s.Disks, v.ValueString())
			}
		}
	}
	return s
}

// snapshotModelOf is the block as the record keeps it, for a read or an import.
func snapshotModelOf(s *store.ResourceSnapshot) *snapshotModel {
	if s == nil {
		return nil
	}
	m := &snapshotModel{Disks: types.ListNull(types.StringType), Retention: types.StringNull()}
	if s.Disks != nil {
		elems := make([]attr.Value, 0, len(s.Disks))
		for _, d := range s.Disks {
			elems = append(elems, types.StringValue(d))
		}
		m.Disks = types.ListValueMust(types.StringType, elems)
	}
	if s.Retention != nil {
		m.Retention = types.StringValue(*s.Retention)
	}
	return m
}
