package provider

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ resource.Resource                = (*statefulGroupResource)(nil)
	_ resource.ResourceWithConfigure   = (*statefulGroupResource)(nil)
	_ resource.ResourceWithImportState = (*statefulGroupResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*statefulGroupResource)(nil)
)

// NewStatefulGroupResource is the factory of virt_stateful_group.
func NewStatefulGroupResource() resource.Resource { return &statefulGroupResource{} }

type statefulGroupResource struct {
	data *ProviderData
}

func (r *statefulGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_group"
}

func (r *statefulGroupResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = statefulGroupSchema()
}

func (r *statefulGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.data = configureData(req.ProviderData, &resp.Diagnostics)
}

func (r *statefulGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	defer reconcile.LogCounts(ctx, "group create")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan statefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	plan.ID = plan.Name
	// This state owns the group it creates.
	if r.checkCreate(ctx, plan, &resp.Diagnostics); resp.Diagnostics.HasError() {
		resp.State.RemoveResource(ctx)
		return
	}
	own := ownership{ID: newRunID()}
	claim := own.claim()
	claim.Create = true
	lim := newLimit(ctx, plan.Timeouts, "create", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	diags, stored := r.apply(ctx, lim, &plan, claim, "")
	resp.Diagnostics.Append(diags...)
	if diags.HasError() && !stored {
		// Nothing was written on the host: there is nothing to keep.
		resp.State.RemoveResource(ctx)
		return
	}
	// A create that failed after it wrote the group's record keeps the state of what it made,
	// with the members read back: Terraform marks it tainted, so that a terraform destroy removes
	// what it made, and the next apply replaces it (the group is new: nothing it made holds data
	// yet, and a disk a NEVER rule preserves is kept as in any destroy). Saving no state instead
	// would leave the members out of every destroy's sight.
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *statefulGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	defer reconcile.LogCounts(ctx, "group read")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	s, meta, found, err := r.data.refreshRecord(ctx, name)
	var hostDown *reconcile.RecordHostError
	if errors.As(err, &hostDown) && state.Template != nil {
		r.readWithoutRecord(ctx, &state, hostDown, resp)
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(name, err))
		return
	}
	if !found {
		if state.Template == nil {
			resp.Diagnostics.Append(diagnostics.GroupNotFoundToImport(name))
			return
		}
		// The group was destroyed behind Terraform's back.
		resp.State.RemoveResource(ctx)
		return
	}
	switch {
	case state.Template == nil:
		// Just imported: only the name is known, the rest comes from the group record.
		state.decodeGroupSpec(s.Resource, &resp.Diagnostics)
		state.ID = state.Name
	case s.Resource != "" && !sameGroupSpec(s.Resource, state.encodeGroupSpec(ctx, &resp.Diagnostics)):
		// Another apply (a copy of this state, or an apply this state never saw finish) changed
		// the group: the state shows what the host has, so that the plan shows the difference.
		tflog.Warn(ctx, "the group record holds another configuration than this state; refreshing from it", map[string]any{"group": name})
		state.decodeGroupSpec(s.Resource, &resp.Diagnostics)
	}
	o, err := r.data.observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(name, err))
		return
	}
	list, diags := instancesValue(membersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	if own := readOwnership(ctx, req.Private, &resp.Diagnostics); own.ID == "" {
		writeOwnership(ctx, resp.Private, own.adopt(meta), &resp.Diagnostics)
	}
	now := settled{Read: true, Generation: meta.Generation}
	p := r.data.Reconciler.PlanFrom(s, o)
	r.data.keepPlan(s, p)
	if p.Idle() {
		now.Spec = state.encodeGroupSpec(ctx, &resp.Diagnostics)
	}
	writeSettled(ctx, resp.Private, now, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readWithoutRecord refreshes a group whose record's host does not answer from what can be
// read: the group as the state has it, its members where the state last saw them, those of
// hosts that answer as they are and the others UNKNOWN. A plan then shows what is known, and
// any change to the group fails until the host is back.
func (r *statefulGroupResource) readWithoutRecord(ctx context.Context, state *statefulGroupModel, cause *reconcile.RecordHostError, resp *resource.ReadResponse) {
	s := engine.GroupState{Group: state.engineGroup(ctx, &resp.Diagnostics), Pool: state.Pool.ValueString(), Placement: map[string]string{}}
	for _, it := range instanceRows(state.Instances, &resp.Diagnostics) {
		s.Placement[it.Name] = engine.HostOf(it.Host)
	}
	if resp.Diagnostics.HasError() {
		return
	}
	o, err := r.data.Reconciler.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(s.Group.Name, err))
		return
	}
	list, diags := instancesValue(membersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	resp.Diagnostics.Append(diagnostics.RecordUnreachableWarning(cause, "The members shown are read from the hosts that answer; the others are UNKNOWN."))
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

func (r *statefulGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	defer reconcile.LogCounts(ctx, "group update")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan statefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	own := readOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	if own.ID == "" {
		own = ownership{ID: newRunID()}
	}
	var prior statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	lim := newLimit(ctx, plan.Timeouts, "update", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	claim := own.claim()
	if last := readSettled(ctx, req.Private, &resp.Diagnostics); last.Read {
		// The plan was made from a refresh: it runs only over the record that refresh read,
		// and what this apply itself wrote since.
		claim.Basis = last.Generation
	}
	diags, stored := r.apply(ctx, lim, &plan, claim, prior.encodeGroupSpec(ctx, &resp.Diagnostics))
	resp.Diagnostics.Append(diags...)
	if !stored {
		// Nothing changed on the host: the state stays as it was, so that the next plan shows
		// the same change again.
		resp.State.Raw = req.State.Raw
		return
	}
	// A takeover after import is done once the record names this state.
	own.TakeoverFrom = ""
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *statefulGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	defer reconcile.LogCounts(ctx, "group delete")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state statefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	own := readOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	var claim *reconcile.Claim
	if own.ID != "" {
		claim = own.claim()
	}
	lim := newLimit(ctx, state.Timeouts, "delete", "group "+name, &resp.Diagnostics)
	work, cancel := lim.start(ctx)
	defer cancel()
	held, release, err := r.data.holdGroupToDestroy(work, name, claim)
	if err == nil {
		var s engine.GroupState
		var found bool
		s, found, err = r.data.loadGroup(held, name)
		if err == nil && found {
			err = leaseCause(held, r.data.Reconciler.Destroy(held, s))
		}
		release(err == nil)
	}
	if err != nil {
		resp.Diagnostics.AddError(lim.explain("Cannot delete group "+name, work, err))
	}
}

func (r *statefulGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	if !engine.ValidName(req.ID) {
		resp.Diagnostics.AddError("Invalid import ID",
			fmt.Sprintf("The import ID %q must be the group's name, a DNS label of lower case letters, digits and hyphens.", req.ID))
		return
	}
	// Import takes the group over on purpose: this state gets an owner ID of its own, written in
	// the group record at its next apply, after which the state the group came from can no
	// longer change it. Nothing is written now: an import block is imported during plan.
	_, meta, found, err := r.data.loadGroupRecord(ctx, req.ID)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(req.ID, err))
		return
	}
	own := ownership{ID: newRunID()}
	if found && meta.Owner != nil {
		own.TakeoverFrom = meta.Owner.ID
	}
	writeOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("name"), req.ID)...)
	resp.Diagnostics.Append(resp.State.SetAttribute(ctx, path.Root("id"), req.ID)...)
}

// appliedSettled is the marker an apply leaves: settled at the configuration it applied when it
// finished without an error, not settled otherwise.
func appliedSettled(ctx context.Context, m *statefulGroupModel, diags diag.Diagnostics) settled {
	if diags.HasError() {
		return settled{}
	}
	var d diag.Diagnostics
	return settled{Spec: m.encodeGroupSpec(ctx, &d)}
}

// apply resolves the domain type, stores the group in its record, reconciles it and reads the
// members back into m.
//
// stored is false when the record was not changed: the change was refused (another apply holds
// the group, another state owns it) or failed before anything was written.
//
// prior is the rendering of the configuration this state last applied ("" for a create): a
// record that holds another one was changed by another apply since this plan was made, and the
// change is refused before anything is written.
func (r *statefulGroupResource) apply(ctx context.Context, lim limit, m *statefulGroupModel, claim *reconcile.Claim, prior string) (diags diag.Diagnostics, stored bool) {
	// The change runs within the time limit; what follows it (reading the members back) runs
	// on ctx, so that a change cut off by its limit still saves what it did.
	work, cancel := lim.start(ctx)
	defer cancel()
	if m.Template.DomainType.IsNull() || m.Template.DomainType.IsUnknown() {
		t, err := r.data.defaultHost().DefaultDomainType(work)
		if err != nil {
			diags.Append(diagnostics.HostDomainType(err))
			return diags, false
		}
		m.Template.DomainType = types.StringValue(t)
	}
	g := m.engineGroup(ctx, &diags)
	resource := m.encodeGroupSpec(ctx, &diags)
	shown := plannedActions(m.Instances, &diags)
	if diags.HasError() {
		return diags, false
	}
	// The plan that runs is the plan that was shown: an apply that would now delete a member, or
	// treat one more disruptively than the plan said (the host or the group's other resources
	// changed in between), stops before changing anything.
	var ran *engine.GroupPlan // the last plan checked: the one the apply runs
	check := func(p engine.GroupPlan) error {
		ran = &p
		if shown == nil {
			return nil
		}
		if extra := p.Unplanned(shown); len(extra) > 0 {
			return fmt.Errorf("group %s changed since the plan was made, and applying now would do more than the plan showed: %s. Nothing was changed; run terraform apply again to see and apply the new plan", g.Name, strings.Join(extra, "; "))
		}
		return nil
	}
	s, stored, applyErr := r.data.run(work, groupChange{group: g.Name, pool: m.Pool.ValueString(), apply: true, claim: claim, check: check, mutate: func(s *engine.GroupState, exists bool) error {
		if exists && prior != "" && s.Resource != "" && !sameGroupSpec(s.Resource, prior) {
			return &staleError{group: g.Name}
		}
		s.SetGroup(g)
		s.Resource = resource
		if !exists {
			s.Pool = m.Pool.ValueString()
		}
		return nil
	}})
	if !stored {
		diags.AddError(lim.explain("Cannot apply group "+g.Name, work, applyErr))
		return diags, false
	}
	var members []engine.Member
	if applyErr == nil && ran != nil {
		// Every operation of the plan succeeded, so the members are as its final state says:
		// reading each one back would cost a call per member and tell nothing more (the next
		// refresh reads the host).
		members = slices.Clone(ran.Final)
	} else {
		// What a failed or cut-off apply left is read back from the host.
		o, err := r.data.Reconciler.Observe(ctx, s)
		if err != nil {
			diags.Append(diagnostics.GroupRead(g.Name, err))
			m.Instances = types.StringNull()
			return diags, true
		}
		members = membersOf(o, s, m.Running.ValueBool())
	}
	health := plannedHealth(m.Instances, &diags)
	for i := range members {
		// After the apply, planned_action and health keep what the plan said, as Terraform
		// expects; the next refresh shows the health the host has.
		members[i].Planned = engine.ShownPlanned(shown[members[i].Name])
		if h, ok := health[members[i].Name]; ok {
			members[i].Health = h
		}
	}
	list, d := instancesValue(members)
	diags.Append(d...)
	m.Instances = list
	if applyErr != nil {
		diags.AddError(lim.explain("Cannot apply group "+g.Name, work, applyErr))
	}
	return diags, stored
}

// plannedActions reads the planned action of each member from a planned instances list; nil
// when the list is not known (a new group, or a plan that could not read the host).
func plannedActions(l types.String, diags *diag.Diagnostics) map[string]string {
	if l.IsNull() || l.IsUnknown() {
		return nil
	}
	out := map[string]string{}
	for _, it := range instanceRows(l, diags) {
		out[it.Name] = ""
		if it.PlannedAction != nil {
			out[it.Name] = *it.PlannedAction
		}
	}
	return out
}

// plannedHealth reads the planned health of each member from a planned instances list.
func plannedHealth(l types.String, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	for _, it := range instanceRows(l, diags) {
		if it.Health != nil {
			out[it.Name] = *it.Health
		}
	}
	return out
}

// membersOf renders the observed members, adopted ones included, as they are now, their health
// judged against running and their records read against the group's templates (engine.Described).
func membersOf(o reconcile.Observation, s engine.GroupState, running bool) []engine.Member {
	out := make([]engine.Member, 0, len(o.Observed))
	rev := s.Group.Template.Revision()
	for _, ob := range o.Observed {
		if ob.Unmanaged {
			continue
		}
		if ob.Unknown {
			// Shown as every plan shows it, so that a plan made while its host is down is
			// empty rather than a change that changes nothing.
			out = append(out, engine.UnknownMember(ob))
			continue
		}
		health, _ := engine.Health(ob, running)
		mi := engine.Described(ob, rev, s.TemplateRevisions)
		out = append(out, engine.Member{Name: ob.Name, Index: ob.Index, Status: ob.Status,
			Revision: mi.TemplateRevision, CurrentAction: engine.CurrentAction(mi), Health: health, Host: ob.Host})
	}
	return out
}
