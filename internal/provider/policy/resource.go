package policy

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringplanmodifier"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
	"github.com/virtfleet/terraform-provider-virt/internal/validators"
)

var (
	_ resource.Resource                = (*StatefulPolicyResource)(nil)
	_ resource.ResourceWithConfigure   = (*StatefulPolicyResource)(nil)
	_ resource.ResourceWithImportState = (*StatefulPolicyResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*StatefulPolicyResource)(nil)
)

// NewStatefulPolicyResource is the factory of virt_stateful_policy.
func NewStatefulPolicyResource() resource.Resource { return &StatefulPolicyResource{} }

type StatefulPolicyResource struct {
	Data *providerdata.ProviderData
}

type StatefulPolicyModel struct {
	ID       types.String      `tfsdk:"id"`
	Group    types.String      `tfsdk:"group"`
	Disk     []PolicyDiskModel `tfsdk:"disk"`
	Timeouts timeouts.Value    `tfsdk:"timeouts"`
}

type PolicyDiskModel struct {
	DeviceName types.String `tfsdk:"device_name"`
	DeleteRule types.String `tfsdk:"delete_rule"`
}

func (m *StatefulPolicyModel) enginePolicy() engine.Policy {
	var p engine.Policy
	for _, d := range m.Disk {
		p.Disks = append(p.Disks, engine.PolicyDisk{DeviceName: d.DeviceName.ValueString(), DeleteRule: d.DeleteRule.ValueString()})
	}
	return p
}

func (m *StatefulPolicyModel) known() bool {
	for _, d := range m.Disk {
		if !providerdata.Known(d.DeviceName, d.DeleteRule) {
			return false
		}
	}
	return providerdata.Known(m.Group)
}

func policyDisksModel(p engine.Policy) []PolicyDiskModel {
	out := []PolicyDiskModel{}
	for _, d := range p.Disks {
		out = append(out, PolicyDiskModel{DeviceName: types.StringValue(d.DeviceName), DeleteRule: providerdata.OptionalString(d.DeleteRule)})
	}
	return out
}

func (r *StatefulPolicyResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_policy"
}

func (r *StatefulPolicyResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = schema.Schema{
		MarkdownDescription: "The stateful policy of a group: which template disks every member preserves across recreation, autoheal, update and scale-in. Changing it is bookkeeping only: it never restarts or replaces a member, whatever the group's `minimal_action`. Destroying it alone makes those disks stateless at once, still attached. A `terraform destroy` of the group together with its policy keeps every disk the policy preserved with `NEVER` when the destroy began.",
		Attributes: map[string]schema.Attribute{
			// Required.
			"group": schema.StringAttribute{
				MarkdownDescription: "Name of the `virt_stateful_group`. Changing it replaces the policy.",
				Required:            true,
				Validators:          []validator.String{providerdata.NameValidator},
				PlanModifiers:       []planmodifier.String{stringplanmodifier.RequiresReplace()},
			},
			// Computed.
			"id": schema.StringAttribute{
				MarkdownDescription: "The group's name.",
				Computed:            true,
				PlanModifiers:       []planmodifier.String{stringplanmodifier.UseStateForUnknown()},
			},
		},
		Blocks: map[string]schema.Block{
			"timeouts": providerdata.TimeoutsBlock(),
			"disk": schema.SetNestedBlock{
				MarkdownDescription: "A template disk every member preserves, by device name.",
				Validators:          []validator.Set{validators.UniqueAttribute("device_name")},
				NestedObject: schema.NestedBlockObject{Attributes: map[string]schema.Attribute{
					"device_name": schema.StringAttribute{
						MarkdownDescription: "Device name of a disk of the group's template.",
						Required:            true,
						Validators:          []validator.String{providerdata.DeviceNameValidator},
					},
					"delete_rule": schema.StringAttribute{
						MarkdownDescription: "`NEVER` (the default when unset) keeps the volume when its instance is deleted for good; `ON_PERMANENT_INSTANCE_DELETION` deletes it then. Recreation always keeps it.",
						// No schema default: see per-instance config's mode.
						Optional:   true,
						Validators: []validator.String{stringvalidator.OneOf(engine.DeleteRules...)},
					},
				}},
			},
		},
	}
}

func (r *StatefulPolicyResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (r *StatefulPolicyResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "policy create")
	var plan StatefulPolicyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.PolicyIdentityModel{Group: plan.Group}, &resp.Diagnostics)
	plan.ID = plan.Group
	if plan.Disk == nil {
		plan.Disk = []PolicyDiskModel{}
	}
	r.Apply(ctx, "create", &plan, &resp.State, &resp.Diagnostics)
}

func (r *StatefulPolicyResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "policy read")
	var state StatefulPolicyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.PolicyIdentityModel{Group: state.Group}, &resp.Diagnostics)
	group := state.Group.ValueString()
	s, found, err := r.Data.LoadGroup(ctx, group)
	if providerdata.UnreachableRecord(err, false, &resp.Diagnostics) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	if !found || s.Policy == nil {
		resp.State.RemoveResource(ctx)
		return
	}
	state.ID = state.Group
	state.Disk = policyDisksModel(*s.Policy)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *StatefulPolicyResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "policy update")
	var plan StatefulPolicyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.PolicyIdentityModel{Group: plan.Group}, &resp.Diagnostics)
	if plan.Disk == nil {
		plan.Disk = []PolicyDiskModel{}
	}
	r.Apply(ctx, "update", &plan, &resp.State, &resp.Diagnostics)
}

func (r *StatefulPolicyResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "policy delete")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state StatefulPolicyModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	group := state.Group.ValueString()
	lim := providerdata.NewLimit(ctx, state.Timeouts, "delete", "the stateful policy of group "+group, &resp.Diagnostics)
	work, cancel := lim.Start(ctx)
	defer cancel()
	if err := r.Data.GroupDestroyWaits(work, group); err != nil {
		resp.Diagnostics.AddError("Cannot remove the stateful policy of group "+group, providerdata.WaitsForGroupHosts("the policy", err))
		return
	}
	_, _, err := r.Data.ChangeAndApply(work, group, "", true, func(s *engine.GroupState, exists bool) error {
		if !exists {
			// The group went first; there is no record to remove the policy from or recreate.
			return providerdata.ErrNoGroup(group)
		}
		if s.Policy == nil {
			// The policy never applied (or is gone from the record): nothing to undo, and the
			// group is not applied for it.
			return providerdata.ErrNothingToUndo
		}
		s.Release(r.Data.Reconciler.Env.Run)
		s.Policy = nil
		// Removing the policy never creates a member (a destroy creates nothing).
		s.NoCreate = true
		return nil
	})
	if err != nil && !errors.Is(err, backend.ErrNotFound) && !errors.Is(err, providerdata.ErrNothingToUndo) {
		resp.Diagnostics.AddError(lim.Explain("Cannot remove the stateful policy of group "+group, work, err))
	}
}

// Apply stores the policy in the group record and reconciles the group.
func (r *StatefulPolicyResource) Apply(ctx context.Context, op string, plan *StatefulPolicyModel, state *tfsdk.State, diags *diag.Diagnostics) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	policy := plan.enginePolicy()
	group := plan.Group.ValueString()
	lim := providerdata.NewLimit(ctx, plan.Timeouts, op, "the stateful policy of group "+group, diags)
	work, cancel := lim.Start(ctx)
	defer cancel()
	_, stored, err := r.Data.ChangeAndApply(work, group, "", true, func(s *engine.GroupState, exists bool) error {
		if !exists {
			return providerdata.ErrNoGroup(group)
		}
		s.Release(r.Data.Reconciler.Env.Run)
		s.Policy = &policy
		return nil
	})
	if err != nil {
		summary, detail := lim.Explain("Cannot apply the stateful policy of group "+group, work, err)
		diags.AddAttributeError(path.Root("group"), summary, detail)
	}
	if stored {
		diags.Append(state.Set(ctx, plan)...)
	}
}

func (r *StatefulPolicyResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	providerdata.PolicyImport.Read(ctx, req, resp)
}

// ModifyPlan shows what the policy does to each member, and warns about device names the
// template does not define, which the policy cannot preserve.
func (r *StatefulPolicyResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "policy plan")
	if req.Plan.Raw.IsNull() || r.Data.Destroying(ctx) {
		// A destroy checks nothing of the configuration against the host (providerdata/destroying.go).
		return
	}
	var plan StatefulPolicyModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.known() {
		return
	}
	s, meta, found, err := r.Data.PlanRecord(ctx, plan.Group.ValueString())
	if providerdata.UnreachableRecord(err, !req.Plan.Raw.Equal(req.State.Raw), &resp.Diagnostics) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(plan.Group.ValueString(), err))
		return
	}
	policy := plan.enginePolicy()
	if !found {
		// The group is not on the host yet. Created in this apply, it was planned before this
		// policy, which refers to it: the policy is checked against its planned template now,
		// before the apply makes any member.
		if g, ok := r.Data.PlannedCreate(plan.Group.ValueString()); ok && g.Disks != nil {
			checkPolicyDisks(&resp.Diagnostics, plan.Group.ValueString(), g.Disks, plan.Disk)
		}
		return
	}
	if err := r.Data.Reconciler.CheckLease(plan.Group.ValueString(), meta); err != nil {
		resp.Diagnostics.Append(diagnostics.GroupLeaseHeld(err))
		return
	}
	var disks []string
	for _, d := range s.Group.Template.Disks {
		disks = append(disks, d.DeviceName)
	}
	if checkPolicyDisks(&resp.Diagnostics, s.Group.Name, disks, plan.Disk); resp.Diagnostics.HasError() {
		return
	}
	s.Policy = &policy
	p, _, err := r.Data.Preview(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupPlan(s.Group.Name, err))
		return
	}
	providerdata.AddPlanDiagnostics(&resp.Diagnostics, p, path.Root("disk"))
}

// checkPolicyDisks refuses the policy's device names that are not disks of the group's template,
// each on its own disk block's device_name.
func checkPolicyDisks(diags *diag.Diagnostics, group string, template []string, disks []PolicyDiskModel) {
	var names []string
	for _, d := range template {
		names = append(names, fmt.Sprintf("%q", d))
	}
	have := "none"
	if len(names) > 0 {
		have = strings.Join(names, ", ")
	}
	for _, d := range disks {
		if !providerdata.Known(d.DeviceName) || slices.Contains(template, d.DeviceName.ValueString()) {
			continue
		}
		at := providerdata.SetBlockPath(path.Root("disk"), map[string]attr.Value{"device_name": d.DeviceName, "delete_rule": d.DeleteRule}).AtName("device_name")
		diags.AddAttributeError(at, "Disk not in the template",
			fmt.Sprintf("device_name %q is not a disk of group %s's template, whose disks are: %s. A policy preserves template disks only. Name one of those; if this change adds the disk to the template, apply the template first (terraform apply -target=virt_stateful_group.<name>), then the policy.", d.DeviceName.ValueString(), group, have))
	}
}

func (r *StatefulPolicyResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = providerdata.PolicyIdentitySchema()
}

var _ resource.ResourceWithIdentity = (*StatefulPolicyResource)(nil)
