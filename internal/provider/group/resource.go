package group

import (
	"context"
	"errors"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ resource.Resource                = (*StatefulGroupResource)(nil)
	_ resource.ResourceWithConfigure   = (*StatefulGroupResource)(nil)
	_ resource.ResourceWithImportState = (*StatefulGroupResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*StatefulGroupResource)(nil)
)

// NewStatefulGroupResource is the factory of virt_stateful_group.
func NewStatefulGroupResource() resource.Resource { return &StatefulGroupResource{} }

type StatefulGroupResource struct {
	Data *providerdata.ProviderData
}

func (r *StatefulGroupResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_stateful_group"
}

func (r *StatefulGroupResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = StatefulGroupSchema()
}

func (r *StatefulGroupResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (r *StatefulGroupResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group create")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan StatefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.GroupIdentityModel{Name: plan.Name}, &resp.Diagnostics)
	plan.ID = plan.Name
	// This state owns the group it creates.
	if r.CheckCreate(ctx, plan, &resp.Diagnostics); resp.Diagnostics.HasError() {
		resp.State.RemoveResource(ctx)
		return
	}
	own := providerdata.Ownership{ID: providerdata.NewRunID()}
	claim := own.Claim()
	claim.Create = true
	lim := providerdata.NewLimit(ctx, plan.Timeouts, "create", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	ctx = reconcile.WithSecrets(ctx, applySecrets(ctx, req.Config, &resp.Diagnostics))
	var rowsDiags diag.Diagnostics
	shown := createsOf(instanceRows(plan.Instances, &rowsDiags), !plan.Instances.IsNull() && !plan.Instances.IsUnknown())
	resp.Diagnostics.Append(rowsDiags...)
	diags, stored := r.Apply(ctx, lim, &plan, claim, "", nil, nil, shown)
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
	providerdata.WriteOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *StatefulGroupResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group read")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.GroupIdentityModel{Name: state.Name}, &resp.Diagnostics)
	name := state.Name.ValueString()
	s, meta, found, err := r.Data.RefreshRecord(ctx, name)
	var hostDown *reconcile.RecordHostError
	in := groupproto.ReadInput{Record: groupproto.RecordFound, Imported: state.Template == nil}
	switch {
	case errors.As(err, &hostDown):
		in.Record = groupproto.RecordUnreachable
	case err != nil:
		in.Record = groupproto.RecordRefused
	case !found:
		in.Record = groupproto.RecordMissing
	case !in.Imported:
		in.OtherConfiguration = s.Resource != "" && !sameGroupSpec(s.Resource, state.encodeGroupSpec(ctx, &resp.Diagnostics))
	}
	switch groupproto.Read(in) {
	case groupproto.ReadWithoutRecord:
		r.readWithoutRecord(ctx, &state, hostDown, resp)
		return
	case groupproto.ReadFail:
		resp.Diagnostics.Append(diagnostics.GroupRead(name, err))
		return
	case groupproto.ReadNotFound:
		resp.Diagnostics.Append(diagnostics.GroupNotFoundToImport(name))
		return
	case groupproto.ReadLostRecord:
		if !r.readLostRecord(ctx, &state, resp) {
			// The group was destroyed behind Terraform's back.
			resp.State.RemoveResource(ctx)
		}
		return
	case groupproto.ReadFromRecord:
		if in.OtherConfiguration {
			// Another apply (a copy of this state, or an apply this state never saw finish)
			// changed the group: the state shows what the host has, so that the plan shows the
			// difference.
			tflog.Warn(ctx, "the group record holds another configuration than this state; refreshing from it", map[string]any{"group": name})
		}
		state.decodeGroupSpec(s.Resource, &resp.Diagnostics)
		if in.Imported {
			// Just imported: only the name is known, the rest comes from the group record.
			state.ID = state.Name
		}
	case groupproto.ReadMembers:
	}
	o, err := r.Data.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(name, err))
		return
	}
	list, diags := instancesValue(MembersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	if own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics); own.ID == "" {
		providerdata.WriteOwnership(ctx, resp.Private, own.Adopt(meta), &resp.Diagnostics)
	}
	// A refresh does not plan the group: in a plan with a change, its plan of the group as it
	// stands would serve nothing, and the group's plan that follows in this process plans from
	// the same observation. So a refresh does not say the group is settled (Spec ""): only an
	// apply that finished does (appliedSettled), and a plan without refresh after a refresh that
	// Terraform saved without applying this group plans in full.
	writeSettled(ctx, resp.Private, settled{Read: true, Generation: meta.Generation, Probed: true, Probes: probeRows(o.Observed), Hosts: hostsSeenRowOf(reconcile.SeenOf(o))}, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

// readWithoutRecord refreshes a group whose record's host does not answer from what can be
// read: the group as the state has it, its members where the state last saw them, those of
// hosts that answer as they are and the others UNKNOWN. A plan then shows what is known, and
// any change to the group fails until the host is back.
func (r *StatefulGroupResource) readWithoutRecord(ctx context.Context, state *StatefulGroupModel, cause *reconcile.RecordHostError, resp *resource.ReadResponse) {
	s := groupFromState(ctx, state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	o, err := r.Data.Reconciler.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(s.Group.Name, err))
		return
	}
	list, diags := instancesValue(MembersOf(o, s, state.Running.ValueBool()))
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	resp.Diagnostics.Append(diagnostics.RecordUnreachableWarning(cause, "The members shown are read from the hosts that answer; the others are UNKNOWN."))
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
}

// groupFromState is the group as the Terraform state has it, for when its record cannot be read
// (its host does not answer) or is gone: its configuration, and its members where the state last
// saw them.
func groupFromState(ctx context.Context, state *StatefulGroupModel, diags *diag.Diagnostics) engine.GroupState {
	s := engine.GroupState{Group: state.engineGroup(ctx, diags), Pool: state.Pool.ValueString(), Placement: map[string]string{}}
	for _, it := range instanceRows(state.Instances, diags) {
		s.Placement[it.Name] = engine.HostOf(it.Host)
	}
	return s
}

// readLostRecord refreshes a group whose record is gone from its host (its secrets undefined by
// hand) while domains still carry its member records, or are where the state placed its members:
// those are the group's, so the group stays in the state, read from the state's configuration,
// with a warning; its plan writes the record back, and a destroy deletes the members. It reports
// whether it kept the group; with no member left, the group is gone.
func (r *StatefulGroupResource) readLostRecord(ctx context.Context, state *StatefulGroupModel, resp *resource.ReadResponse) bool {
	s := groupFromState(ctx, state, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return true
	}
	o, err := r.Data.Reconciler.Observe(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(s.Group.Name, err))
		return true
	}
	members := MembersOf(o, s, state.Running.ValueBool())
	if len(members) == 0 {
		return false
	}
	names := make([]string, len(members))
	for i, m := range members {
		names[i] = m.Name
	}
	list, diags := instancesValue(members)
	resp.Diagnostics.Append(diags...)
	state.Instances = list
	resp.Diagnostics.Append(diagnostics.GroupRecordLost(s.Group.Name, names))
	resp.Diagnostics.Append(resp.State.Set(ctx, state)...)
	return true
}

func (r *StatefulGroupResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group update")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var plan StatefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.GroupIdentityModel{Name: plan.Name}, &resp.Diagnostics)
	if own.ID == "" {
		own = providerdata.Ownership{ID: providerdata.NewRunID()}
	}
	var prior StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &prior)...)
	if resp.Diagnostics.HasError() {
		return
	}
	lim := providerdata.NewLimit(ctx, plan.Timeouts, "update", "group "+plan.Name.ValueString(), &resp.Diagnostics)
	claim := own.Claim()
	last := readSettled(ctx, req.Private, &resp.Diagnostics)
	if last.Read {
		// The plan was made from a refresh: it runs only over the record that refresh read,
		// and what this apply itself wrote since.
		claim.Basis = last.Generation
	}
	// Only this apply of the group has the write-only values; the executor hands them to the host.
	ctx = reconcile.WithSecrets(ctx, applySecrets(ctx, req.Config, &resp.Diagnostics))
	// What the plan showed serves this apply only.
	shown := readPlanned(ctx, req.Private, &resp.Diagnostics)
	writePlanned(ctx, resp.Private, nil, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		resp.State.Raw = req.State.Raw
		return
	}
	diags, stored := r.Apply(ctx, lim, &plan, claim, prior.encodeGroupSpec(ctx, &resp.Diagnostics), prior.Template, r.Data.RetainedInProcess(plan.Name.ValueString()), shown)
	resp.Diagnostics.Append(diags...)
	if !stored {
		// Nothing changed on the host: the state stays as it was, so that the next plan shows
		// the same change again.
		resp.State.Raw = req.State.Raw
		return
	}
	// A takeover after import is done once the record names this state.
	own.TakeoverFrom = ""
	providerdata.WriteOwnership(ctx, resp.Private, own, &resp.Diagnostics)
	writeSettled(ctx, resp.Private, appliedSettled(ctx, &plan, diags), &resp.Diagnostics)
	resp.Diagnostics.Append(resp.State.Set(ctx, &plan)...)
}

func (r *StatefulGroupResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group delete")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	own := providerdata.ReadOwnership(ctx, req.Private, &resp.Diagnostics)
	if resp.Diagnostics.HasError() {
		return
	}
	name := state.Name.ValueString()
	var claim *engine.Claim
	if own.ID != "" {
		claim = own.Claim()
	}
	lim := providerdata.NewLimit(ctx, state.Timeouts, "delete", "group "+name, &resp.Diagnostics)
	work, cancel := lim.Start(ctx)
	defer cancel()
	held, release, err := r.Data.HoldGroupToDestroy(work, name, claim)
	if err == nil {
		var s engine.GroupState
		var found bool
		s, found, err = r.Data.LoadGroup(held, name)
		if err == nil && !found {
			// The record is gone (undefined by hand): the members that carry the group's
			// records, or stand where the state placed them, are the group's all the same,
			// and go with it. With none, the group is gone and nothing is deleted (no sweep
			// of volumes by their names alone).
			s = groupFromState(ctx, &state, &resp.Diagnostics)
			var o reconcile.Observation
			if o, err = r.Data.Reconciler.Observe(held, s); err == nil {
				found = len(MembersOf(o, s, state.Running.ValueBool())) > 0
			}
		}
		if err == nil && found {
			err = providerdata.LeaseCause(held, r.Data.Reconciler.Destroy(held, s))
		}
		release(err == nil)
	}
	if err != nil {
		resp.Diagnostics.AddError(lim.Explain("Cannot delete group "+name, work, err))
	}
}

func (r *StatefulGroupResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	names, ok := providerdata.GroupImport.Read(ctx, req, resp)
	if !ok {
		return
	}
	name := names[0]
	// Import takes the group over on purpose: this state gets an owner ID of its own, written in
	// the group record at its next apply, after which the state the group came from can no
	// longer change it. Nothing is written now: an import block is imported during plan.
	_, meta, found, err := r.Data.LoadGroupRecord(ctx, name)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(name, err))
		return
	}
	own := providerdata.Ownership{ID: providerdata.NewRunID()}
	if found && meta.Owner != nil {
		own.TakeoverFrom = meta.Owner.ID
	}
	providerdata.WriteOwnership(ctx, resp.Private, own, &resp.Diagnostics)
}

// MembersOf renders the observed members, adopted ones included, as they are now, their health
// judged against running and their probes (engine's Group.HealthOf, which a member its probe
// judges also says in its planned action, as the plan does) and their records read against the
// group's templates (engine.Described).
func MembersOf(o reconcile.Observation, s engine.GroupState, running bool) []engine.Member {
	out := make([]engine.Member, 0, len(o.Observed))
	rev := s.Group.Template.Revision()
	// Members the canary holds back say so, as the plan's do: a plan that changes nothing shows
	// this list.
	heldBack := s.HeldBack(o.Observed)
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
		g := s.Group
		g.Running = running
		health := g.HealthOf(ob, o.At)
		mi := engine.Described(ob, rev, s.TemplateRevisions)
		planned := engine.Planned{Why: health.Shown()}
		if heldBack[ob.Name] {
			planned = engine.Planned{Why: engine.HeldWhy(planned.Why), Held: true}
		}
		out = append(out, engine.Member{Name: ob.Name, Index: ob.Index, Status: ob.Status,
			Revision: mi.TemplateRevision, CurrentAction: engine.CurrentAction(mi), Health: health.Health, Host: ob.Host,
			Planned: planned})
	}
	// The observation has named members first; a plan has them last (engine.SortMembers).
	engine.SortMembers(out)
	return out
}

func (r *StatefulGroupResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = providerdata.GroupIdentitySchema()
}

var _ resource.ResourceWithIdentity = (*StatefulGroupResource)(nil)
