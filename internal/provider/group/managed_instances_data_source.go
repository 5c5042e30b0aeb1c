package group

import (
	"context"
	"errors"
	"sort"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/datasource"
	"github.com/hashicorp/terraform-plugin-framework/datasource/schema"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ datasource.DataSource              = (*managedInstancesDataSource)(nil)
	_ datasource.DataSourceWithConfigure = (*managedInstancesDataSource)(nil)
)

// NewManagedInstancesDataSource is the factory of virt_managed_instances.
func NewManagedInstancesDataSource() datasource.DataSource { return &managedInstancesDataSource{} }

type managedInstancesDataSource struct {
	data *providerdata.ProviderData
}

type managedInstancesModel struct {
	ID               types.String           `tfsdk:"id"`
	Group            types.String           `tfsdk:"group"`
	TemplateRevision types.String           `tfsdk:"template_revision"`
	Instances        []managedInstanceModel `tfsdk:"instances"`
}

type managedInstanceModel struct {
	Name                     types.String           `tfsdk:"name"`
	Index                    types.Int64            `tfsdk:"index"`
	Status                   types.String           `tfsdk:"status"`
	Health                   types.String           `tfsdk:"health"`
	HealthReason             types.String           `tfsdk:"health_reason"`
	ConsecutiveFailures      types.Int64            `tfsdk:"consecutive_failures"`
	Preserved                types.String           `tfsdk:"preserved"`
	PreservedUntil           types.String           `tfsdk:"preserved_until"`
	CurrentAction            types.String           `tfsdk:"current_action"`
	TemplateRevision         types.String           `tfsdk:"template_revision"`
	HeldBack                 types.Bool             `tfsdk:"held_back"`
	Host                     types.String           `tfsdk:"host"`
	UUID                     types.String           `tfsdk:"uuid"`
	MACAddresses             []string               `tfsdk:"mac_addresses"`
	IPAddresses              []string               `tfsdk:"ip_addresses"`
	GraphicsPort             types.Int64            `tfsdk:"graphics_port"`
	PreservedStateFromPolicy preservedStateView     `tfsdk:"preserved_state_from_policy"`
	PreservedStateFromConfig preservedStateViewMeta `tfsdk:"preserved_state_from_config"`
	RetainedState            preservedStateViewMeta `tfsdk:"retained_state"`
	Snapshots                []snapshotView         `tfsdk:"snapshots"`
}

type preservedStateView struct {
	Disk []preservedDiskView `tfsdk:"disk"`
}

type preservedStateViewMeta struct {
	Disk      []preservedDiskView `tfsdk:"disk"`
	Metadata  map[string]string   `tfsdk:"metadata"`
	NetworkIP map[string]string   `tfsdk:"network_ip"`
}

type preservedDiskView struct {
	DeviceName string `tfsdk:"device_name"`
	Source     string `tfsdk:"source"`
	Mode       string `tfsdk:"mode"`
	DeleteRule string `tfsdk:"delete_rule"`
}

func disksView(s engine.PreservedState) []preservedDiskView {
	out := []preservedDiskView{}
	for _, d := range s.Disks {
		out = append(out, preservedDiskView{DeviceName: d.DeviceName, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].DeviceName < out[j].DeviceName })
	return out
}

// withIdentity adds what the host says of the domain: its UUID and addresses.
func withIdentity(v managedInstanceModel, ob engine.Observed) managedInstanceModel {
	v.UUID = types.StringValue(ob.UUID)
	v.MACAddresses = append([]string{}, ob.MACs...)
	v.IPAddresses = append([]string{}, ob.IPs...)
	v.GraphicsPort = types.Int64Null()
	if ob.GraphicsPort > 0 {
		v.GraphicsPort = types.Int64Value(int64(ob.GraphicsPort))
	}
	return v
}

// stateView is a preserved state with its metadata, empty lists and maps rather than null.
func stateView(s engine.PreservedState) preservedStateViewMeta {
	meta := s.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	ips := s.NetworkIPs
	if ips == nil {
		ips = map[string]string{}
	}
	return preservedStateViewMeta{Disk: disksView(s), Metadata: meta, NetworkIP: ips}
}

// withRetained shows what a member keeps of its destroyed per-instance config as retained_state,
// and not as preserved_state_from_config: no config preserves it any more, and the member's next
// update for another reason removes it (engine.RetainedConfig).
func withRetained(v managedInstanceModel, s engine.GroupState, name string, mi engine.ManagedInstance) managedInstanceModel {
	if _, ok := s.RetainedConfig(name, mi); ok {
		v.RetainedState = stateView(mi.PreservedFromConfig)
		v.PreservedStateFromConfig = stateView(engine.PreservedState{})
	}
	return v
}

func instanceView(name string, index int, host string, status engine.Status, health engine.Health, why string, heals int, action, revision string, fromPolicy, fromConfig engine.PreservedState) managedInstanceModel {
	return managedInstanceModel{
		Name: types.StringValue(name), Index: types.Int64Value(int64(index)), Status: types.StringValue(string(status)),
		Health: types.StringValue(string(health)), HealthReason: types.StringValue(why), ConsecutiveFailures: types.Int64Value(int64(heals)),
		CurrentAction: types.StringValue(action), TemplateRevision: types.StringValue(revision), HeldBack: types.BoolValue(false), Host: types.StringValue(engine.HostOf(host)),
		UUID: types.StringValue(""), MACAddresses: []string{}, IPAddresses: []string{}, GraphicsPort: types.Int64Null(),
		PreservedStateFromPolicy: preservedStateView{Disk: disksView(fromPolicy)},
		PreservedStateFromConfig: stateView(fromConfig),
		RetainedState:            stateView(engine.PreservedState{}),
		Snapshots:                []snapshotView{},
	}
}

func (d *managedInstancesDataSource) Metadata(_ context.Context, req datasource.MetadataRequest, resp *datasource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_managed_instances"
}

func (d *managedInstancesDataSource) Schema(_ context.Context, _ datasource.SchemaRequest, resp *datasource.SchemaResponse) {
	disk := schema.ListNestedAttribute{
		MarkdownDescription: "Preserved disks, by device name.",
		Computed:            true,
		NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
			"device_name": schema.StringAttribute{Computed: true, MarkdownDescription: "Device name in the instance."},
			"source":      schema.StringAttribute{Computed: true, MarkdownDescription: "Volume name in the group's pool, or absolute path."},
			"mode":        schema.StringAttribute{Computed: true, MarkdownDescription: "`READ_WRITE` or `READ_ONLY`."},
			"delete_rule": schema.StringAttribute{Computed: true, MarkdownDescription: "`NEVER` or `ON_PERMANENT_INSTANCE_DELETION`."},
		}},
	}
	resp.Schema = schema.Schema{
		MarkdownDescription: "The members of a group as the host has them: status, what is under way, template revision (and whether the group's canary holds the member back on it), and the preserved state from the stateful policy and from the per-instance config, kept apart.",
		Attributes: map[string]schema.Attribute{
			// Required.
			"group": schema.StringAttribute{
				MarkdownDescription: "Name of the group.",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
			},
			// Computed.
			"id":                schema.StringAttribute{Computed: true, MarkdownDescription: "The group's name."},
			"template_revision": schema.StringAttribute{Computed: true, MarkdownDescription: "Revision of the group's template: what a rollout takes members to. A member whose own `template_revision` differs is `held_back` by `update_policy.canary`, or not yet reached (its change is blocked, waits for its host, or its update policy is `OPPORTUNISTIC`); empty when the group reads without its record."},
			"instances": schema.ListNestedAttribute{
				MarkdownDescription: "Every member, indexed ones by index, then named ones by name; an instance the group should have and does not is `MISSING`.",
				Computed:            true,
				NestedObject: schema.NestedAttributeObject{Attributes: map[string]schema.Attribute{
					"name":                 schema.StringAttribute{Computed: true, MarkdownDescription: "Domain name."},
					"index":                schema.Int64Attribute{Computed: true, MarkdownDescription: "Index from 1; 0 for a named member."},
					"status":               schema.StringAttribute{Computed: true, MarkdownDescription: "`RUNNING`, `STOPPED`, `PAUSED`, `SUSPENDED`, `FAILED` or `MISSING`."},
					"health":               schema.StringAttribute{Computed: true, MarkdownDescription: "`HEALTHY`; `FAILED` (definition missing; crashed; shut off, paused by an I/O error or paused by QEMU with no reason given, while the group wants it running; a volume it needs gone), as the host shows it now; with `template.health_check`, `UNHEALTHY` (its probe fails `unhealthy_threshold` times in a row) or `STARTING` (its probe has not passed yet, inside `auto_healing.initial_delay` after it was created or repaired); `UNKNOWN` when its host does not answer."},
					"preserved":            schema.StringAttribute{Computed: true, MarkdownDescription: "`NO`, or how the instance is preserved for analysis: `NOW`, `WHEN_FAILED` (asked by its config) or `AUTO` (by the group's `failed_instance_preservation`)."},
					"preserved_until":      schema.StringAttribute{Computed: true, MarkdownDescription: "When the preservation ends unless released earlier (RFC 3339); empty when not preserved."},
					"consecutive_failures": schema.Int64Attribute{Computed: true, MarkdownDescription: "With `template.health_check`, for a member probed now: how many probes in a row failed, up to the last. Otherwise: autoheal repairs started in a row for this member (`auto_healing`); at `max_consecutive_failures` it is left failed until its template or config changes."},
					"health_reason":        schema.StringAttribute{Computed: true, MarkdownDescription: "What made the instance `FAILED`, with libvirt's reason for its state (`shut off (destroyed)`, `volume missing: db-1-boot.qcow2`), or `UNHEALTHY`, quoting its probe (`exit status 1: ...` and the first KiB of an exec's output, an HTTP status, a connection error); empty when healthy."},
					"current_action":       schema.StringAttribute{Computed: true, MarkdownDescription: "`NONE`, or `REFRESHING`, `RESTARTING`, `RECREATING` or `MOVING` (a move between hosts) for a change interrupted half-way."},
					"template_revision":    schema.StringAttribute{Computed: true, MarkdownDescription: "Revision of the template the instance was built or last updated from; empty when `MISSING`."},
					"held_back":            schema.BoolAttribute{Computed: true, MarkdownDescription: "Whether the group's `update_policy.canary` holds this member back on its own `template_revision` (the rollout updated as many members as the hold lets it): the member stays so, by design, until the hold is raised or removed."},
					"uuid":                 schema.StringAttribute{Computed: true, MarkdownDescription: "The domain's libvirt UUID; empty when `MISSING`."},
					"mac_addresses":        schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "MAC addresses of its network interfaces, in order (derived from the group, the member's name and the position: they survive restarts and replacements)."},
					"ip_addresses":         schema.ListAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Addresses of the member: first those its libvirt networks' DHCP host entries reserve or pin for its MAC addresses (`network_interface.address = \"reserved\"`, a per-instance config's `network_ip`), running or not; then, for a running member, those the QEMU guest agent reports when one runs, else its networks' DHCP leases; empty when not known."},
					"graphics_port":        schema.Int64Attribute{Computed: true, MarkdownDescription: "The port of a running member's graphical console (`template.graphics`), which libvirt picks when the member starts, on the host's `listen` address; null when the member has no graphics or is not running."},
					"snapshots":            snapshotsAttribute(),
					"host":                 schema.StringAttribute{Computed: true, MarkdownDescription: "The host the instance lives on (or, when `MISSING`, is to be created on): `default` (the provider's own `uri`) or the name of a provider `host` block."},
					"preserved_state_from_policy": schema.SingleNestedAttribute{
						MarkdownDescription: "What the stateful policy preserves in this instance.",
						Computed:            true,
						Attributes:          map[string]schema.Attribute{"disk": disk},
					},
					"preserved_state_from_config": schema.SingleNestedAttribute{
						MarkdownDescription: "What the instance's per-instance config preserves.",
						Computed:            true,
						Attributes: map[string]schema.Attribute{
							"disk":       disk,
							"metadata":   schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Preserved metadata."},
							"network_ip": schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Pinned addresses, by interface (`nic0`)."},
						},
					},
					"retained_state": schema.SingleNestedAttribute{
						MarkdownDescription: "What the instance keeps of a per-instance config destroyed with `remove_instance_state_on_destroy = false`: its disks are still attached and its metadata still set, but no config preserves them any more (they are not in `preserved_state_from_config`). The instance's next update for another reason (a template or config change that reaches it, a `RESTART` or `REPLACE`, an autoheal) detaches those disks (their volumes stay) and removes that metadata; until then no plan changes them. Empty otherwise.",
						Computed:            true,
						Attributes: map[string]schema.Attribute{
							"disk":       disk,
							"metadata":   schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Retained metadata."},
							"network_ip": schema.MapAttribute{Computed: true, ElementType: types.StringType, MarkdownDescription: "Retained pinned addresses, by interface: kept until the instance's next update for another reason."},
						},
					},
				}},
			},
		},
	}
}

func (d *managedInstancesDataSource) Configure(_ context.Context, req datasource.ConfigureRequest, resp *datasource.ConfigureResponse) {
	d.data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (d *managedInstancesDataSource) Read(ctx context.Context, req datasource.ReadRequest, resp *datasource.ReadResponse) {
	ctx = d.data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "managed instances read")
	var m managedInstancesModel
	resp.Diagnostics.Append(req.Config.Get(ctx, &m)...)
	if resp.Diagnostics.HasError() {
		return
	}
	group := m.Group.ValueString()
	// The record as this process's refresh of the group read it, when it did: the data source
	// reads the group as the group's own plan does.
	s, _, found, err := d.data.PlanRecord(ctx, group)
	var down *reconcile.RecordHostError
	if errors.As(err, &down) {
		d.readWithoutRecord(ctx, &m, down, resp)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	if !found {
		resp.Diagnostics.Append(diagnostics.GroupNotFound(pathGroup, group))
		return
	}
	p, o, err := d.data.Preview(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	d.data.Reconciler.Addresses(ctx, &o)
	m.ID = m.Group
	m.Instances = []managedInstanceModel{}
	m.TemplateRevision = types.StringValue(s.Group.Template.Revision())
	missing := map[string]engine.NewMember{}
	for _, c := range p.Create {
		missing[c.Name] = c
	}
	observed := map[string]engine.Observed{}
	for _, ob := range o.Observed {
		if !ob.Unmanaged {
			observed[ob.Name] = ob
		}
	}
	rev := s.Group.Template.Revision()
	for _, f := range p.Final {
		preserved, until := "NO", ""
		if d := p.Preservation[f.Name]; d.Preserved() {
			preserved, until = d.Kind, d.Until.UTC().Format(time.RFC3339)
		}
		if ob, ok := observed[f.Name]; ok {
			mi := engine.Described(ob, rev, s.TemplateRevisions)
			mh := s.Group.HealthOf(ob, o.At)
			v := withIdentity(instanceView(ob.Name, ob.Index, ob.Host, ob.Status, mh.Health, mh.Reason, ConsecutiveFailures(s.Group, ob, mh), engine.CurrentAction(mi), mi.TemplateRevision, mi.PreservedFromPolicy, mi.PreservedFromConfig), ob)
			v.Snapshots = snapshotsView(s.Inventory, s.Group.Policy, ob.Name)
			v.HeldBack = types.BoolValue(f.Planned.Held)
			m.Instances = append(m.Instances, withRetained(v, s, ob.Name, mi))
			m.Instances[len(m.Instances)-1].Preserved, m.Instances[len(m.Instances)-1].PreservedUntil = types.StringValue(preserved), types.StringValue(until)
		} else if c, ok := missing[f.Name]; ok {
			health, why := engine.HypervisorHealth(engine.Observed{Status: engine.StatusMissing}, s.Group.Running)
			m.Instances = append(m.Instances, instanceView(c.Name, c.Index, c.Host, engine.StatusMissing, health, why, 0, "NONE", "", c.Plan.PreservedFromPolicy, c.Plan.PreservedFromConfig))
			// A member the next apply builds from the held members' template is held back too.
			m.Instances[len(m.Instances)-1].HeldBack = types.BoolValue(f.Planned.Held)
			m.Instances[len(m.Instances)-1].Preserved, m.Instances[len(m.Instances)-1].PreservedUntil = types.StringValue(preserved), types.StringValue(until)
		}
	}
	resp.Diagnostics.Append(resp.State.Set(ctx, &m)...)
}

// readWithoutRecord lists the members the hosts that answer have, when the group record's own
// host does not: each as its own record on its host describes it. Members of hosts that do not
// answer are not listed, and a warning says so.
func (d *managedInstancesDataSource) readWithoutRecord(ctx context.Context, m *managedInstancesModel, cause *reconcile.RecordHostError, resp *datasource.ReadResponse) {
	s := engine.GroupState{Group: engine.Group{Name: m.Group.ValueString(), Hosts: d.data.Reconciler.HostNames()}}
	o, err := d.data.Reconciler.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(s.Group.Name, err))
		return
	}
	d.data.Reconciler.Addresses(ctx, &o)
	m.ID = m.Group
	m.TemplateRevision = types.StringValue("")
	m.Instances = []managedInstanceModel{}
	for _, ob := range o.Observed {
		mi := ob.Instance
		// Without the record, whether the group wants its members running is not known: a
		// member shut off cleanly is not counted as failed.
		g := s.Group
		g.Running = ob.Status == engine.StatusRunning
		mh := g.HealthOf(ob, o.At)
		v := withIdentity(instanceView(ob.Name, ob.Index, ob.Host, ob.Status, mh.Health, mh.Reason, ConsecutiveFailures(g, ob, mh), engine.CurrentAction(mi), mi.TemplateRevision, mi.PreservedFromPolicy, mi.PreservedFromConfig), ob)
		v.Preserved, v.PreservedUntil = types.StringValue("NO"), types.StringValue("")
		m.Instances = append(m.Instances, v)
	}
	resp.Diagnostics.Append(diagnostics.RecordUnreachableWarning(cause, "Only the members of hosts that answer are listed."))
	resp.Diagnostics.Append(resp.State.Set(ctx, m)...)
}

// ConsecutiveFailures is a member's consecutive_failures: the run of failed probes its health
// check's probes saw when the observation probed it, else the autoheal repairs started in a row.
func ConsecutiveFailures(g engine.Group, ob engine.Observed, mh engine.MemberHealth) int {
	if g.HealthCheck != nil && ob.Probe != nil {
		return mh.ConsecutiveFailures
	}
	return ob.Instance.Heals
}
