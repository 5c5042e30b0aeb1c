package group

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// ModifyPlan shows what the apply will do: each member's planned action in `instances`, the
// checks that refuse a plan before anything runs (ownership, a lease held by another apply, a
// group already there), and a plan that changes nothing without reading the host when the
// state says the group is settled at this configuration.
//
// It reads as the group's protocol (groupproto.Plan): a destroy run's plan and a create are
// decided before the record is read; every other plan is decided from what the state, the
// record and the private state say, once the configuration's checks have run, and the decision
// alone says what is read and shown after it.
func (r *StatefulGroupResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group plan")
	if req.Plan.Raw.IsNull() {
		r.planDestroy(ctx, req, resp)
		return
	}
	in := groupproto.PlanInput{Command: r.Data.Command(ctx), New: req.State.Raw.IsNull()}
	create, done := r.decideBeforeRecord(ctx, req, &resp.Diagnostics, in)
	if done {
		return
	}
	plan, ok := r.checkConfiguration(ctx, req, resp)
	if !ok {
		return
	}
	if create {
		r.planCreate(ctx, resp, &plan)
		return
	}
	// Until the plan shows a list of members, it hands its apply nothing to hold itself to.
	writePlanned(ctx, resp.Private, nil, &resp.Diagnostics)
	state, ok := r.checkAgainstState(ctx, req, resp, &plan)
	if !ok {
		return
	}
	read, ok := r.readForDecision(ctx, req, &resp.Diagnostics, &plan, &state, in)
	if !ok {
		return
	}
	d := groupproto.Plan(read.in)
	tflog.Debug(ctx, "group plan", map[string]any{"group": state.Name.ValueString(), "decision": d.Action.String(), "take_over": d.TakeOver, "pin_hosts": d.PinHosts, "check_host": d.CheckHost})
	if r.actBeforeMembers(ctx, resp, d, &plan, &state, read.down) {
		return
	}
	r.planMembers(ctx, req, resp, d, &read, &state)
}

// planDestroy checks a destroy of the group before anything is deleted: refused while another
// state owns the group or another apply changes it, and only then warned about what it deletes.
func (r *StatefulGroupResource) planDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if r.checkDestroy(ctx, req, resp); !resp.Diagnostics.HasError() {
		r.WarnDestroy(ctx, req, &resp.Diagnostics)
	}
}

// decideBeforeRecord takes the protocol's decisions that need nothing of the state or the host:
// done for a destroy run's plan of the configuration, create for a new group. Nothing else
// decides these plans: they read nothing more before the decision.
func (r *StatefulGroupResource) decideBeforeRecord(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics, in groupproto.PlanInput) (create, done bool) {
	if in.Command != groupproto.CommandDestroy && !in.New {
		return false, false
	}
	switch groupproto.Plan(in).Action {
	case groupproto.PlanCheckNothing:
		// The plan of the configuration a destroy makes first, to refresh: never applied, so
		// nothing of the configuration is checked against the host (providerdata/destroying.go).
		if in.New {
			r.warnUnfinishedCreate(ctx, req, diags)
		}
		return false, true
	case groupproto.PlanCreate:
		return true, false
	default:
		// Only a destroy run and a create are decided before the record is read.
		return false, false
	}
}

// planRead is what a plan of a group the state has read before its decision, for the phases
// that act on it.
type planRead struct {
	in groupproto.PlanInput
	// s is the group the members are planned against: with its record found under the same
	// name, as the apply's change leaves the record (planAsApplied).
	s engine.GroupState
	// rs is the group as its record has it: what a refresh reads the members against.
	rs  engine.GroupState
	gen int64
	// down is why the record's host did not answer (groupproto.RecordUnreachable).
	down error
	// last is the private-state marker the last refresh or apply of this state left.
	last settled
}

// readForDecision gathers the protocol's input from the group's record, the state and the
// private state. It reports false when the plan stops before a decision: a plan already refused,
// or one whose template, size or running is known only at apply, has no members to plan, and
// the marker and the cache are not read for it.
func (r *StatefulGroupResource) readForDecision(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics, plan, state *StatefulGroupModel, in groupproto.PlanInput) (planRead, bool) {
	s, gen, rec, takeover, down := r.checkChange(ctx, state.Name.ValueString(), req.Private, diags)
	in.Record, in.TakeOver = rec, takeover
	in.Renamed = !plan.Name.Equal(state.Name)
	var last settled
	if in.Record == groupproto.RecordFound || in.Record == groupproto.RecordMissing {
		if diags.HasError() || !plan.Template.known() || !providerdata.Known(plan.TargetSize, plan.Running) {
			return planRead{}, false
		}
		if checkShrinks(ctx, diags, plan, state); diags.HasError() {
			return planRead{}, false
		}
		in.Refreshed = r.Data.ObservedGroup(state.Name.ValueString())
		in.StateListed = !state.Instances.IsNull() && !state.Instances.IsUnknown()
		last = readSettled(ctx, req.Private, diags)
		in.Marker = last.marker(ctx, plan, state, diags)
	}
	rs := s // the group as its record has it: what a refresh reads the members against
	if in.Record == groupproto.RecordFound && !in.Renamed {
		in.Cached = r.planAsApplied(ctx, plan, &s, diags)
	}
	return planRead{in: in, s: s, rs: rs, gen: gen, down: down, last: last}, true
}

// planAsApplied sets s to the group as the apply's change leaves its record
// (StatefulGroupResource.Apply), and says what this process holds of it: planned so, the apply
// that follows in this process runs this very plan when nothing changed in between
// (ProviderData.Run), instead of planning again.
func (r *StatefulGroupResource) planAsApplied(ctx context.Context, plan *StatefulGroupModel, s *engine.GroupState, diags *diag.Diagnostics) groupproto.Cached {
	s.SetGroup(plan.engineGroup(ctx, diags))
	s.Resource = plan.encodeGroupSpec(ctx, diags)
	// In the apply, a per-instance config this apply destroys is gone already: its member
	// is planned as the plan shown planned it, with the config (providerdata/retained_here.go).
	s.KeepRetained = r.Data.RetainedInProcess(s.Group.Name)
	return r.Data.Lookup(*s)
}

// actBeforeMembers acts on the decisions that plan no member, and reports true when the plan is
// done: the members are planned only when the decision says from what.
func (r *StatefulGroupResource) actBeforeMembers(ctx context.Context, resp *resource.ModifyPlanResponse, d groupproto.PlanDecision, plan, state *StatefulGroupModel, down error) bool {
	switch d.Action {
	case groupproto.PlanRecordUnreachable:
		r.recordUnreachable(ctx, plan, state, down, resp)
		return true
	case groupproto.PlanStop, groupproto.PlanReplace:
		// Refused (the diagnostics say why), or a new name: the new group is planned as a create.
		return true
	case groupproto.PlanWriteRecordBack:
		// The record is gone while the state has the group: a refresh kept it because its
		// members are still there (readLostRecord). The apply writes the record back from the
		// configuration, an update in place, and plans the members from it: those that carry
		// the group's records are its members, and none of them is created again.
		resp.Diagnostics.Append(diagnostics.GroupRecordWrittenBack(state.Name.ValueString()))
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), types.StringUnknown())...)
		return true
	case groupproto.PlanKeepState:
		// No refresh in this process (-refresh=false): with the configuration the state last
		// saw settled, there is nothing to plan, and nothing is read.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), state.Instances)...)
		writePlanned(ctx, resp.Private, shownOfState(state.Instances, nil, &resp.Diagnostics), &resp.Diagnostics)
		return true
	case groupproto.PlanFromCache, groupproto.PlanFromObservation, groupproto.PlanJudgeByProbes, groupproto.PlanObserve:
		// The members are planned (planMembers).
		return false
	case groupproto.PlanCheckNothing, groupproto.PlanCreate:
		// Decided before the record was read (decideBeforeRecord); never here.
		return true
	}
	return true
}

// recordUnreachable handles a plan of a group whose record's host does not answer: with no
// change to the group, the plan keeps the members as the refresh read them, with a warning; a
// change is refused, naming the host.
func (r *StatefulGroupResource) recordUnreachable(ctx context.Context, plan, state *StatefulGroupModel, down error, resp *resource.ModifyPlanResponse) {
	change := !plan.Name.Equal(state.Name) || !sameGroupSpec(plan.encodeGroupSpec(ctx, &resp.Diagnostics), state.encodeGroupSpec(ctx, &resp.Diagnostics))
	providerdata.UnreachableRecord(down, change, &resp.Diagnostics)
	if !change {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), state.Instances)...)
	}
}

// checkChange refuses, at plan, a change to a group that another state owns or that another
// apply is changing, and says what the plan found of the group's record: found (takeover when
// this state imported the group and its apply will write itself in the record as the owner),
// missing, refused (with a diagnostic: unreadable, owned elsewhere, held by another apply), or
// unreachable.
//
// It returns the group record it read, for the rest of the plan.
// A record that cannot be read because its host does not answer is returned as down, with no
// diagnostic: what that means depends on the plan.
func (r *StatefulGroupResource) checkChange(ctx context.Context, name string, private providerdata.PrivateGetter, diags *diag.Diagnostics) (s engine.GroupState, gen int64, rec groupproto.Record, takeover bool, down error) {
	s, meta, found, err := r.Data.PlanRecord(ctx, name)
	var unreachable *reconcile.RecordHostError
	if errors.As(err, &unreachable) {
		return s, 0, groupproto.RecordUnreachable, false, err
	}
	if err != nil {
		diags.Append(diagnostics.GroupRead(name, err))
		return s, 0, groupproto.RecordRefused, false, nil
	}
	if !found {
		return s, 0, groupproto.RecordMissing, false, nil
	}
	own := providerdata.ReadOwnership(ctx, private, diags).Adopt(meta)
	if err := r.Data.Reconciler.CheckClaim(name, meta, true, *own.Claim()); err != nil {
		diags.Append(diagnostics.GroupOwnedElsewhere(err))
		return s, 0, groupproto.RecordRefused, false, nil
	}
	if err := r.Data.Reconciler.CheckLease(name, meta); err != nil {
		diags.Append(diagnostics.GroupLeaseHeld(err))
		return s, 0, groupproto.RecordRefused, false, nil
	}
	if own.TakingOver(meta) {
		diags.AddWarning("Taking the group over",
			fmt.Sprintf("This state imported group %s, which belongs to another Terraform state (owner %s). This apply records this state as its owner; from then on the other state can no longer change or destroy it.",
				name, meta.Owner.ID))
		return s, 0, groupproto.RecordFound, true, nil
	}
	return s, meta.Generation, groupproto.RecordFound, false, nil
}

// checkDestroy refuses, at plan, to destroy a group that another state owns or that another
// apply is changing.
func (r *StatefulGroupResource) checkDestroy(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	if req.State.Raw.IsNull() {
		return
	}
	var state StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	if _, _, _, _, down := r.checkChange(ctx, state.Name.ValueString(), req.Private, &resp.Diagnostics); down != nil {
		// Destroying is a change: refused until the record's host answers.
		providerdata.UnreachableRecord(down, true, &resp.Diagnostics)
	}
}
