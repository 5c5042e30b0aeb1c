package config

import (
	"context"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

type PerInstanceConfigModel struct {
	ID                           types.String         `tfsdk:"id"`
	Group                        types.String         `tfsdk:"group"`
	Name                         types.String         `tfsdk:"name"`
	PreservedState               *PreservedStateModel `tfsdk:"preserved_state"`
	MinimalAction                types.String         `tfsdk:"minimal_action"`
	MostDisruptiveAllowedAction  types.String         `tfsdk:"most_disruptive_allowed_action"`
	RemoveInstanceOnDestroy      types.Bool           `tfsdk:"remove_instance_on_destroy"`
	RemoveInstanceStateOnDestroy types.Bool           `tfsdk:"remove_instance_state_on_destroy"`
	Preserve                     types.String         `tfsdk:"preserve"`
	Status                       types.String         `tfsdk:"status"`
	Timeouts                     timeouts.Value       `tfsdk:"timeouts"`
}

type PreservedStateModel struct {
	Disk      []configDiskModel `tfsdk:"disk"`
	NetworkIP []networkIPModel  `tfsdk:"network_ip"`
	Metadata  types.Map         `tfsdk:"metadata"`
}

type networkIPModel struct {
	Interface types.String `tfsdk:"interface"`
	Address   types.String `tfsdk:"address"`
}

type configDiskModel struct {
	DeviceName types.String `tfsdk:"device_name"`
	Source     types.String `tfsdk:"source"`
	Mode       types.String `tfsdk:"mode"`
	DeleteRule types.String `tfsdk:"delete_rule"`
}

func (m *PerInstanceConfigModel) known() bool {
	if !providerdata.Known(m.Group, m.Name, m.MinimalAction, m.MostDisruptiveAllowedAction) {
		return false
	}
	if ps := m.PreservedState; ps != nil {
		if !providerdata.Known(ps.Metadata) {
			return false
		}
		for _, d := range ps.Disk {
			if !providerdata.Known(d.DeviceName, d.Source, d.Mode, d.DeleteRule) {
				return false
			}
		}
		for _, n := range ps.NetworkIP {
			if !providerdata.Known(n.Interface, n.Address) {
				return false
			}
		}
	}
	return true
}

// entry converts the model into the config as the group record keeps it.
func (m *PerInstanceConfigModel) entry(ctx context.Context) (engine.ConfigEntry, diag.Diagnostics) {
	var diags diag.Diagnostics
	e := engine.DefaultConfigEntry()
	if a, err := engine.ParseAction(m.MinimalAction.ValueString()); err == nil {
		e.MinimalAction = a
	}
	if a, err := engine.ParseAction(m.MostDisruptiveAllowedAction.ValueString()); err == nil {
		e.MostDisruptiveAllowed = a
	}
	e.RemoveInstanceOnDestroy = m.RemoveInstanceOnDestroy.ValueBool()
	e.RemoveStateOnDestroy = m.RemoveInstanceStateOnDestroy.ValueBool()
	e.Preserve = m.Preserve.ValueString()
	if ps := m.PreservedState; ps != nil {
		for _, d := range ps.Disk {
			e.Config.Disks = append(e.Config.Disks, engine.ConfigDisk{
				DeviceName: d.DeviceName.ValueString(), Source: d.Source.ValueString(),
				Mode: d.Mode.ValueString(), DeleteRule: d.DeleteRule.ValueString(),
			})
		}
		e.Config.Metadata = providerdata.StringMap(ctx, ps.Metadata, &diags)
		for _, n := range ps.NetworkIP {
			e.Config.NetworkIPs = append(e.Config.NetworkIPs, engine.NetworkIP{Interface: n.Interface.ValueString(), Address: n.Address.ValueString()})
		}
		slices.SortFunc(e.Config.NetworkIPs, func(a, b engine.NetworkIP) int { return strings.Compare(a.Interface, b.Interface) })
	}
	return e, diags
}

// fromEntry fills the model from the group record. What the record cannot tell apart (no block,
// an empty block, an empty map) keeps the shape the state already has, so that a refresh never
// shows a difference that is not one.
func (m *PerInstanceConfigModel) fromEntry(e engine.ConfigEntry) {
	m.MinimalAction = types.StringValue(e.MinimalAction.String())
	m.MostDisruptiveAllowedAction = types.StringValue(e.MostDisruptiveAllowed.String())
	m.RemoveInstanceOnDestroy = types.BoolValue(e.RemoveInstanceOnDestroy)
	m.RemoveInstanceStateOnDestroy = types.BoolValue(e.RemoveStateOnDestroy)
	m.Preserve = providerdata.OptionalString(e.Preserve)
	c := e.Config
	if len(c.Disks) == 0 && len(c.Metadata) == 0 && len(c.NetworkIPs) == 0 {
		if m.PreservedState != nil && len(m.PreservedState.Disk) == 0 && len(m.PreservedState.NetworkIP) == 0 && len(m.PreservedState.Metadata.Elements()) == 0 {
			return
		}
		m.PreservedState = nil
		return
	}
	ps := &PreservedStateModel{Disk: []configDiskModel{}, NetworkIP: []networkIPModel{}, Metadata: types.MapNull(types.StringType)}
	for _, d := range c.Disks {
		ps.Disk = append(ps.Disk, configDiskModel{
			DeviceName: types.StringValue(d.DeviceName), Source: types.StringValue(d.Source),
			Mode: providerdata.OptionalString(d.Mode), DeleteRule: providerdata.OptionalString(d.DeleteRule),
		})
	}
	for _, n := range c.NetworkIPs {
		ps.NetworkIP = append(ps.NetworkIP, networkIPModel{Interface: types.StringValue(n.Interface), Address: types.StringValue(n.Address)})
	}
	if len(c.Metadata) > 0 {
		ps.Metadata = providerdata.MapValue(c.Metadata)
	} else if m.PreservedState != nil && !m.PreservedState.Metadata.IsNull() && len(m.PreservedState.Metadata.Elements()) == 0 {
		ps.Metadata = m.PreservedState.Metadata
	}
	m.PreservedState = ps
}
