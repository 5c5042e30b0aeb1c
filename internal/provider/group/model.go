package group

import (
	"context"
	"encoding/json"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"

	pathpkg "path"
	"sort"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var pathGroup = path.Root("group")

type StatefulGroupModel struct {
	ID               types.String        `tfsdk:"id"`
	Name             types.String        `tfsdk:"name"`
	BaseInstanceName types.String        `tfsdk:"base_instance_name"`
	Pool             types.String        `tfsdk:"pool"`
	TargetSize       types.Int64         `tfsdk:"target_size"`
	Running          types.Bool          `tfsdk:"running"`
	ShutdownTimeout  types.String        `tfsdk:"shutdown_timeout"`
	Template         *TemplateModel      `tfsdk:"template"`
	UpdatePolicy     *updatePolicyModel  `tfsdk:"update_policy"`
	ScaleInPolicy    *scaleInPolicyModel `tfsdk:"scale_in_policy"`
	Distribution     *DistributionModel  `tfsdk:"distribution_policy"`
	AutoHealing      *autoHealingModel   `tfsdk:"auto_healing"`
	Preservation     *preservationModel  `tfsdk:"failed_instance_preservation"`
	AdoptExisting    types.Bool          `tfsdk:"adopt_existing"`
	Abandon          types.Set           `tfsdk:"abandon"`
	Instances        types.String        `tfsdk:"instances"` // the JSON of []InstanceRow (see protocol/instances.go)
	Timeouts         timeouts.Value      `tfsdk:"timeouts"`
}

type TemplateModel struct {
	DomainType       types.String    `tfsdk:"domain_type"`
	VCPU             types.Int64     `tfsdk:"vcpu"`
	MemoryMiB        types.Int64     `tfsdk:"memory_mib"`
	BootDisk         *BootDiskModel  `tfsdk:"boot_disk"`
	Disk             []DiskModel     `tfsdk:"disk"`
	NetworkInterface []nicModel      `tfsdk:"network_interface"`
	Metadata         types.Map       `tfsdk:"metadata"`
	Labels           types.Map       `tfsdk:"labels"`
	Description      types.String    `tfsdk:"description"`
	ConsoleLogDir    types.String    `tfsdk:"console_log_dir"`
	CloudInit        *cloudInitModel `tfsdk:"cloud_init"`
	// HardwareModel is the firmware, machine, cpu and devices (devices_model.go): embedded, so
	// its attributes are the block's own, and a VM option is added there, not here.
	HardwareModel
	// HealthCheck judges the members; it is not part of the template's revision.
	HealthCheck *healthCheckModel `tfsdk:"health_check"`
}

type cloudInitModel struct {
	UserData      types.String `tfsdk:"user_data"`
	NetworkConfig types.String `tfsdk:"network_config"`
	// UserDataWO is write-only: Terraform sends it in the configuration of an apply and never
	// keeps it, so it is null in every plan and state (see cloudInitUserData).
	UserDataWO        types.String `tfsdk:"user_data_wo"`
	UserDataWOVersion types.Int64  `tfsdk:"user_data_wo_version"`
}

// engineCloudInit is the block as the engine reads it; nil without the block.
func (c *cloudInitModel) engineCloudInit() *engine.CloudInit {
	if c == nil {
		return nil
	}
	return &engine.CloudInit{UserData: c.UserData.ValueString(), NetworkConfig: c.NetworkConfig.ValueString(), UserDataWOVersion: c.UserDataWOVersion.ValueInt64()}
}

type BootDiskModel struct {
	SourceImage types.String `tfsdk:"source_image"`
	SizeMiB     types.Int64  `tfsdk:"size_mib"`
}

type DiskModel struct {
	DeviceName types.String `tfsdk:"device_name"`
	SizeMiB    types.Int64  `tfsdk:"size_mib"`
}

type nicModel struct {
	Network types.String `tfsdk:"network"`
	Type    types.String `tfsdk:"type"`
	Address types.String `tfsdk:"address"`
}

type preservationModel struct {
	AutoPreserveFailedMax types.Int64  `tfsdk:"auto_preserve_failed_max"`
	PreserveTimeout       types.String `tfsdk:"preserve_timeout"`
}

// enginePreservation is the block as the engine reads it; nil without the block.
func (p *preservationModel) enginePreservation() *engine.FailedPreservation {
	if p == nil {
		return nil
	}
	return &engine.FailedPreservation{AutoPreserveFailedMax: int(p.AutoPreserveFailedMax.ValueInt64()), PreserveTimeout: p.PreserveTimeout.ValueString()}
}

type autoHealingModel struct {
	InitialDelay           types.String `tfsdk:"initial_delay"`
	Backoff                types.String `tfsdk:"backoff"`
	MaxConsecutiveFailures types.Int64  `tfsdk:"max_consecutive_failures"`
}

// engineAutoHealing is the block as the engine reads it; nil without the block.
func (a *autoHealingModel) engineAutoHealing() *engine.AutoHealing {
	if a == nil {
		return nil
	}
	return &engine.AutoHealing{InitialDelay: a.InitialDelay.ValueString(), Backoff: a.Backoff.ValueString(),
		MaxConsecutiveFailures: int(a.MaxConsecutiveFailures.ValueInt64())}
}

type scaleInPolicyModel struct {
	Order types.String `tfsdk:"order"`
}

type DistributionModel struct {
	Hosts types.List `tfsdk:"hosts"`
	// Drain, Rebalance and Live are null in state written before them, read back unchanged
	// before the upgrade (upgradeGroupStateV3) filled them: null means the default.
	Drain     types.List `tfsdk:"drain"`
	Rebalance types.Bool `tfsdk:"rebalance"`
	Live      types.Bool `tfsdk:"live"`
}

type updatePolicyModel struct {
	Type                        types.String   `tfsdk:"type"`
	MinimalAction               types.String   `tfsdk:"minimal_action"`
	MostDisruptiveAllowedAction types.String   `tfsdk:"most_disruptive_allowed_action"`
	MaxUnavailable              types.String   `tfsdk:"max_unavailable"`
	MinReady                    types.String   `tfsdk:"min_ready"`
	ReadyTimeout                types.String   `tfsdk:"ready_timeout"`
	OnFailure                   types.String   `tfsdk:"on_failure"`
	Snapshot                    *snapshotModel `tfsdk:"snapshot"`
	// Canary is null when not set (and in state written before it): no hold.
	Canary types.String `tfsdk:"canary"`
}

// InstanceRow is one member of `instances` as the provider keeps it: the framework holds the
// list as JSON text (see protocol/instances.go). Health is nil where state written before it had none.
type InstanceRow struct {
	Name             string  `json:"name"`
	Index            int64   `json:"index"`
	Status           string  `json:"status"`
	TemplateRevision string  `json:"template_revision"`
	CurrentAction    string  `json:"current_action"`
	PlannedAction    *string `json:"planned_action"`
	Health           *string `json:"health"`
	Host             string  `json:"host"`
}

// instanceRows reads `instances`; nil when it is null or unknown.
func instanceRows(v types.String, diags *diag.Diagnostics) []InstanceRow {
	if v.IsNull() || v.IsUnknown() {
		return nil
	}
	var rows []InstanceRow
	if err := json.Unmarshal([]byte(v.ValueString()), &rows); err != nil {
		diags.AddError("Cannot read the group's instances", err.Error())
		return nil
	}
	return rows
}

// templateKnown reports whether the template is fully known at plan time.
func (t *TemplateModel) known() bool {
	if t == nil {
		return false
	}
	if !providerdata.Known(t.DomainType, t.VCPU, t.MemoryMiB, t.Metadata, t.Labels, t.Description, t.ConsoleLogDir) {
		return false
	}
	if c := t.CloudInit; c != nil && !providerdata.Known(c.UserData, c.NetworkConfig, c.UserDataWOVersion) {
		return false
	}
	if !t.HealthCheck.known() || !t.hardwareKnown() {
		return false
	}
	if t.BootDisk != nil && !providerdata.Known(t.BootDisk.SourceImage, t.BootDisk.SizeMiB) {
		return false
	}
	for _, d := range t.Disk {
		if !providerdata.Known(d.DeviceName, d.SizeMiB) {
			return false
		}
	}
	for _, n := range t.NetworkInterface {
		if !providerdata.Known(n.Network, n.Type, n.Address) {
			return false
		}
	}
	return true
}

// engineTemplate converts the template block into the engine's template.
func (t *TemplateModel) engineTemplate(ctx context.Context, diags *diag.Diagnostics) engine.Template {
	et := engine.Template{
		Shape: engine.Shape{
			DomainType:  t.DomainType.ValueString(),
			VCPU:        t.VCPU.ValueInt64(),
			MemoryMiB:   t.MemoryMiB.ValueInt64(),
			Labels:      providerdata.StringMap(ctx, t.Labels, diags),
			Description: t.Description.ValueString(),
			CloudInit:   t.CloudInit.engineCloudInit(),
		},
		BootDisk: engine.BootDisk{SizeMiB: engine.DefaultBootDiskMiB},
		Metadata: providerdata.StringMap(ctx, t.Metadata, diags),
	}
	if dir := t.ConsoleLogDir.ValueString(); dir != "" {
		// "/var/log/x/" names the same directory as "/var/log/x".
		et.ConsoleLogDir = pathpkg.Clean(dir)
	}
	et.Hardware = t.engineHardware()
	if t.BootDisk != nil {
		et.BootDisk.SourceImage = t.BootDisk.SourceImage.ValueString()
		if !t.BootDisk.SizeMiB.IsNull() {
			et.BootDisk.SizeMiB = t.BootDisk.SizeMiB.ValueInt64()
		}
	}
	for _, d := range t.Disk {
		et.Disks = append(et.Disks, engine.Disk{DeviceName: d.DeviceName.ValueString(), SizeMiB: d.SizeMiB.ValueInt64()})
	}
	for _, n := range t.NetworkInterface {
		et.NICs = append(et.NICs, engine.NIC{Network: n.Network.ValueString(), Type: n.Type.ValueString(), Address: n.Address.ValueString()})
	}
	return et.Canonical()
}

func (u *updatePolicyModel) engineUpdatePolicy() engine.UpdatePolicy {
	p := engine.DefaultUpdatePolicy()
	if u == nil {
		return p
	}
	if !u.Type.IsNull() {
		p.Type = u.Type.ValueString()
	}
	if a, err := engine.ParseAction(u.MinimalAction.ValueString()); err == nil {
		p.MinimalAction = a
	}
	if a, err := engine.ParseAction(u.MostDisruptiveAllowedAction.ValueString()); err == nil {
		p.MostDisruptiveAllowed = a
	}
	if fixed, percent, err := engine.ParseMaxUnavailable(u.MaxUnavailable.ValueString()); err == nil {
		p.MaxUnavailable, p.MaxUnavailablePercent = fixed, percent
	}
	// Null (state written before these attributes, read back unchanged) keeps the defaults.
	if d, err := engine.MinReadyRule.Parse(u.MinReady.ValueString()); err == nil {
		p.MinReady = d
	}
	if d, err := engine.ReadyTimeoutRule.Parse(u.ReadyTimeout.ValueString()); err == nil {
		p.ReadyTimeout = d
	}
	if v := u.OnFailure.ValueString(); v != "" {
		p.OnFailure = v
	}
	p.Snapshot = u.Snapshot.engineSnapshot()
	if !u.Canary.IsNull() && !u.Canary.IsUnknown() {
		if c, err := engine.ParseCanary(u.Canary.ValueString()); err == nil {
			p.Canary = &c
		}
	}
	return p
}

// engineGroup converts the model into the engine's desired group.
func (m *StatefulGroupModel) engineGroup(ctx context.Context, diags *diag.Diagnostics) engine.Group {
	return engine.Group{
		Name:       m.Name.ValueString(),
		Base:       m.BaseInstanceName.ValueString(),
		TargetSize: int(m.TargetSize.ValueInt64()),
		Running:    m.Running.ValueBool(),
		Template:   m.Template.engineTemplate(ctx, diags),
		Policy:     m.UpdatePolicy.engineUpdatePolicy(),
		// The schema's default fills it; an imported group without it gets the default too.
		ShutdownTimeout:    m.ShutdownTimeout.ValueString(),
		ScaleInOrder:       m.scaleInOrder(),
		AutoHealing:        m.AutoHealing.engineAutoHealing(),
		FailedPreservation: m.Preservation.enginePreservation(),
		HealthCheck:        m.Template.HealthCheck.engineHealthCheck(ctx, diags),
		Hosts:              m.hosts(ctx, diags),
		Drain:              m.drained(ctx, diags),
		Rebalance:          m.rebalance(),
		ColdMoves:          m.coldMoves(),
		AdoptExisting:      m.AdoptExisting.ValueBool(),
		Abandon:            m.abandoned(ctx, diags),
	}
}

// abandoned are the names abandon lists, sorted; nil when it lists none (or is not known yet).
func (m *StatefulGroupModel) abandoned(ctx context.Context, diags *diag.Diagnostics) []string {
	if m.Abandon.IsNull() || m.Abandon.IsUnknown() {
		return nil
	}
	var names []string
	diags.Append(m.Abandon.ElementsAs(ctx, &names, false)...)
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	return names
}

// hosts are the distribution_policy's hosts; nil (the default host) without the block.
func (m *StatefulGroupModel) hosts(ctx context.Context, diags *diag.Diagnostics) []string {
	if m.Distribution == nil || m.Distribution.Hosts.IsNull() || m.Distribution.Hosts.IsUnknown() {
		return nil
	}
	var hosts []string
	diags.Append(m.Distribution.Hosts.ElementsAs(ctx, &hosts, false)...)
	return hosts
}

// drained are the distribution_policy's drain hosts, in their order; nil when it lists none (or
// they are not known yet).
func (m *StatefulGroupModel) drained(ctx context.Context, diags *diag.Diagnostics) []string {
	if m.Distribution == nil || m.Distribution.Drain.IsNull() || m.Distribution.Drain.IsUnknown() {
		return nil
	}
	var hosts []string
	diags.Append(m.Distribution.Drain.ElementsAs(ctx, &hosts, false)...)
	if len(hosts) == 0 {
		return nil
	}
	return hosts
}

// rebalance is distribution_policy.rebalance; false (the default) without the block or a value.
func (m *StatefulGroupModel) rebalance() bool {
	return m.Distribution != nil && m.Distribution.Rebalance.ValueBool()
}

// coldMoves is distribution_policy.live = false. Only an explicit false makes moves cold: without
// the block, or with a value not known yet, moves are live where the hosts allow (the default).
func (m *StatefulGroupModel) coldMoves() bool {
	d := m.Distribution
	return d != nil && !d.Live.IsNull() && !d.Live.IsUnknown() && !d.Live.ValueBool()
}

// scaleInOrder is the configured scale-in order; "" (HIGHEST_INDEX) without the block.
func (m *StatefulGroupModel) scaleInOrder() string {
	if m.ScaleInPolicy == nil || m.ScaleInPolicy.Order.IsNull() || m.ScaleInPolicy.Order.IsUnknown() {
		return ""
	}
	return m.ScaleInPolicy.Order.ValueString()
}

// instancesValue renders members as the computed instances list.
func instancesValue(members []engine.Member) (types.String, diag.Diagnostics) {
	var diags diag.Diagnostics
	rows := make([]InstanceRow, 0, len(members))
	for _, m := range members {
		planned, health := m.Planned.String(), string(m.Health)
		rows = append(rows, InstanceRow{Name: m.Name, Index: int64(m.Index), Status: string(m.Status), TemplateRevision: m.Revision,
			CurrentAction: m.CurrentAction, PlannedAction: &planned, Health: &health, Host: engine.HostOf(m.Host)})
	}
	js, err := json.Marshal(rows)
	if err != nil {
		diags.Append(diagnostics.InstancesUnrendered(err))
		return types.StringNull(), diags
	}
	return types.StringValue(string(js)), diags
}

// templateDiskPath is the path of the template's disk block named deviceName in t (or of the
// boot disk for engine.BootDeviceName), at its attribute name; the template's own path when t
// has no such block.
func templateDiskPath(t *TemplateModel, deviceName, name string) path.Path {
	tp := path.Root("template")
	if deviceName == engine.BootDeviceName {
		return tp.AtName("boot_disk").AtName(name)
	}
	if t != nil {
		for _, d := range t.Disk {
			if d.DeviceName.ValueString() == deviceName {
				return providerdata.SetBlockPath(tp.AtName("disk"), map[string]attr.Value{"device_name": d.DeviceName, "size_mib": d.SizeMiB}).AtName(name)
			}
		}
	}
	return tp
}
