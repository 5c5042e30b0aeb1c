package group

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

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
func (r *StatefulGroupResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "group plan")
	if req.Plan.Raw.IsNull() {
		if r.checkDestroy(ctx, req, resp); !resp.Diagnostics.HasError() {
			r.WarnDestroy(ctx, req, &resp.Diagnostics)
		}
		return
	}
	in := groupproto.PlanInput{Command: r.Data.Command(ctx), New: req.State.Raw.IsNull()}
	create := false
	if in.Command == groupproto.CommandDestroy || in.New {
		// Nothing else decides these plans: they read nothing more before the decision.
		switch groupproto.Plan(in).Action {
		case groupproto.PlanCheckNothing:
			// The plan of the configuration a destroy makes first, to refresh: never applied, so
			// nothing of the configuration is checked against the host (providerdata/destroying.go).
			if in.New {
				r.warnUnfinishedCreate(ctx, req, &resp.Diagnostics)
			}
			return
		case groupproto.PlanCreate:
			create = true
		default:
			// Only a destroy run and a create are decided before the record is read.
		}
	}
	var plan StatefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Template == nil {
		return
	}
	r.planBootDiskSize(ctx, req, resp, &plan)
	resp.Diagnostics.Append(checkNICs(plan.Template)...)
	checkTemplateTexts(ctx, &resp.Diagnostics, plan.Template)
	checkFirmware(&resp.Diagnostics, plan.Template)
	checkAbandonNames(ctx, &plan, &resp.Diagnostics)
	checkWriteOnlyValues(ctx, req.Config, req.State, &resp.Diagnostics)
	if create {
		r.planCreate(ctx, resp, &plan)
		return
	}
	// Until the plan shows a list of members, it hands its apply nothing to hold itself to.
	writePlanned(ctx, resp.Private, nil, &resp.Diagnostics)
	var state StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.Template == nil {
		return
	}
	r.CheckGroupHost(ctx, &resp.Diagnostics, &plan, &state)
	r.checkConsoleLogDir(ctx, &resp.Diagnostics, &plan, &state)
	r.checkFilesystems(ctx, &resp.Diagnostics, &plan, &state)
	s, gen, rec, takeover, down := r.checkChange(ctx, state.Name.ValueString(), req.Private, &resp.Diagnostics)
	in.Record, in.TakeOver = rec, takeover
	in.Renamed = !plan.Name.Equal(state.Name)
	var last settled
	if in.Record == groupproto.RecordFound || in.Record == groupproto.RecordMissing {
		if resp.Diagnostics.HasError() || !plan.Template.known() || !providerdata.Known(plan.TargetSize, plan.Running) {
			return
		}
		if checkShrinks(ctx, &resp.Diagnostics, &plan, &state); resp.Diagnostics.HasError() {
			return
		}
		in.Refreshed = r.Data.ObservedGroup(state.Name.ValueString())
		in.StateListed = !state.Instances.IsNull() && !state.Instances.IsUnknown()
		last = readSettled(ctx, req.Private, &resp.Diagnostics)
		in.Marker = last.marker(ctx, &plan, &state, &resp.Diagnostics)
	}
	rs := s // the group as its record has it: what a refresh reads the members against
	if in.Record == groupproto.RecordFound && !in.Renamed {
		// The group as the apply's change leaves its record (StatefulGroupResource.Apply):
		// planned so, the apply that follows in this process runs this very plan when nothing
		// changed in between (ProviderData.Run), instead of planning again.
		s.SetGroup(plan.engineGroup(ctx, &resp.Diagnostics))
		s.Resource = plan.encodeGroupSpec(ctx, &resp.Diagnostics)
		// In the apply, a per-instance config this apply destroys is gone already: its member
		// is planned as the plan shown planned it, with the config (providerdata/retained_here.go).
		s.KeepRetained = r.Data.RetainedInProcess(s.Group.Name)
		in.Cached = r.Data.Lookup(s)
	}
	d := groupproto.Plan(in)
	tflog.Debug(ctx, "group plan", map[string]any{"group": state.Name.ValueString(), "decision": d.Action.String(), "take_over": d.TakeOver, "pin_hosts": d.PinHosts, "check_host": d.CheckHost})
	switch d.Action {
	case groupproto.PlanRecordUnreachable:
		r.recordUnreachable(ctx, &plan, &state, down, resp)
		return
	case groupproto.PlanStop, groupproto.PlanReplace:
		// Refused (the diagnostics say why), or a new name: the new group is planned as a create.
		return
	case groupproto.PlanWriteRecordBack:
		// The record is gone while the state has the group: a refresh kept it because its
		// members are still there (readLostRecord). The apply writes the record back from the
		// configuration, an update in place, and plans the members from it: those that carry
		// the group's records are its members, and none of them is created again.
		resp.Diagnostics.Append(diagnostics.GroupRecordWrittenBack(state.Name.ValueString()))
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), types.StringUnknown())...)
		return
	case groupproto.PlanKeepState:
		// No refresh in this process (-refresh=false): with the configuration the state last
		// saw settled, there is nothing to plan, and nothing is read.
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), state.Instances)...)
		writePlanned(ctx, resp.Private, shownOfState(state.Instances, nil, &resp.Diagnostics), &resp.Diagnostics)
		return
	case groupproto.PlanFromCache, groupproto.PlanFromObservation, groupproto.PlanJudgeByProbes, groupproto.PlanObserve:
		// The members are planned, below.
	case groupproto.PlanCheckNothing, groupproto.PlanCreate:
		// Decided before the record was read (above); never here.
		return
	}
	var probed map[string]*engine.ProbeOutcome
	if d.Action == groupproto.PlanJudgeByProbes {
		// The apply of a plan made by a refresh in another process (or a plan with
		// -refresh=false): its members are judged as that refresh's probes found them.
		probed = last.outcomes()
	}
	// The hosts as the refresh saw them (settled.Hosts): the plan the user approves and the
	// apply's final plan, in another process, are made from the same hosts, whichever answers in
	// between (reconcile's hostsseen.go).
	seen, _ := last.seen()
	observeCtx := ctx
	if d.PinHosts {
		observeCtx = reconcile.WithHostsSeen(ctx, seen)
	}
	p, o, err := r.Data.PreviewAt(observeCtx, s, gen, probed)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupPlan(s.Group.Name, err))
		return
	}
	warnHostsDown(ctx, &resp.Diagnostics, s.Group.Name, o.Down)
	if d.CheckHost {
		// No refresh in this process: this is the apply's own plan, or a plan with
		// -refresh=false, and the state's members are what a refresh read. Members that
		// changed on the host since change what the apply does; Terraform would stop such an
		// apply with an error that blames the provider, so the plan refuses it first, saying
		// what changed. (An unreadable list only costs the check.)
		var ignored diag.Diagnostics
		changes := hostChanges(instanceRows(state.Instances, &ignored), MembersOf(o, rs, state.Running.ValueBool()))
		if refuseHostChanged(ctx, &resp.Diagnostics, s.Group.Name, changes, d.RefuseHostChanged(len(changes), !p.Idle())) {
			return
		}
	}
	providerdata.AddPlanDiagnostics(&resp.Diagnostics, p, path.Root("update_policy").AtName("most_disruptive_allowed_action"))
	checkUserDataAvailable(ctx, req.Config, p, &resp.Diagnostics)
	warnAbandons(p, &resp.Diagnostics)
	if checkTakenNames(o, s.Group, p, &resp.Diagnostics) {
		return
	}
	list, diags := instancesValue(p.Final)
	resp.Diagnostics.Append(diags...)
	shown := plannedOf(p.Final)
	// When the group has nothing to do, a difference in the list can only come from another
	// resource of the group (a per-instance config that added a named member) since the last
	// refresh: the next refresh shows it, and the group itself has nothing to change for it.
	if p.Idle() && in.StateListed {
		list, shown = state.Instances, shownOfState(state.Instances, shown, &resp.Diagnostics)
	}
	if d.TakeOver {
		// The apply writes this state in the group record as its owner: an update in place,
		// which shows the members as they are.
		list, shown = takenOver(list, shown, &resp.Diagnostics)
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), list)...)
	// A plan that changes nothing is not applied: it has no final plan to contradict.
	if hosts := unsettledHosts(p, o, d.PinHosts, &seen); len(hosts) > 0 && !resp.Plan.Raw.Equal(req.State.Raw) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), types.StringUnknown())...)
		warnUnsettledHosts(ctx, &resp.Diagnostics, s.Group.Name, hosts)
		shown = nil
	}
	writePlanned(ctx, resp.Private, shown, &resp.Diagnostics)
}

// shownOfState is what a plan that keeps the state's members list (an idle plan, or a plan with
// -refresh=false on a settled state) holds its apply to: each listed member as the group's plan
// planned it (planned, by name), NONE for one it does not have. nil when the list is not known.
func shownOfState(list types.String, planned map[string]engine.Planned, diags *diag.Diagnostics) map[string]engine.Planned {
	if list.IsNull() || list.IsUnknown() {
		return nil
	}
	rows := instanceRows(list, diags)
	out := make(map[string]engine.Planned, len(rows))
	for _, r := range rows {
		out[r.Name] = planned[r.Name]
	}
	return out
}

// planCreate is the plan of a new group: what the plans of its policy and configs that follow
// in this process start from, the create's checks, and its members.
func (r *StatefulGroupResource) planCreate(ctx context.Context, resp *resource.ModifyPlanResponse, plan *StatefulGroupModel) {
	if providerdata.Known(plan.Name, plan.Pool) {
		g := providerdata.PlannedGroup{Pool: plan.Pool.ValueString(), Disks: plan.Template.diskNames()}
		if plan.Template.known() {
			var ignored diag.Diagnostics // the group's own checks report its template
			eg := plan.engineGroup(ctx, &ignored)
			g.Group = &eg
		}
		r.Data.PlanCreate(plan.Name.ValueString(), g)
	}
	r.CheckCreate(ctx, *plan, &resp.Diagnostics)
	r.CheckGroupHost(ctx, &resp.Diagnostics, plan, nil)
	r.checkConsoleLogDir(ctx, &resp.Diagnostics, plan, nil)
	r.checkFilesystems(ctx, &resp.Diagnostics, plan, nil)
	r.planCreateInstances(ctx, resp, plan)
}

// checkShrinks refuses a template disk the plan makes smaller than the state has it.
func checkShrinks(ctx context.Context, diags *diag.Diagnostics, plan, state *StatefulGroupModel) {
	from := state.Template.engineTemplate(ctx, diags)
	to := plan.Template.engineTemplate(ctx, diags)
	for _, s := range engine.Shrinks(from, to) {
		diags.AddAttributeError(templateDiskPath(plan.Template, s.DeviceName, "size_mib"), "Disk cannot shrink",
			fmt.Sprintf("template disk %q: size_mib %d is smaller than the current %d; a disk can only grow. Keep size_mib at %d or more, or remove the disk and add a new one under another device_name.",
				s.DeviceName, s.To, s.From, s.From))
	}
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

// CheckCreate refuses, at plan, to create a group that is already there: its record, or members
// left without it; and one whose members' names domains no provider created hold, unless it
// adopts them (adopt_existing). A creation that an earlier apply left unfinished is finished,
// with a warning.
func (r *StatefulGroupResource) CheckCreate(ctx context.Context, plan StatefulGroupModel, diags *diag.Diagnostics) {
	if !providerdata.Known(plan.Name, plan.BaseInstanceName) {
		return
	}
	name := plan.Name.ValueString()
	_, meta, found, err := r.Data.LoadGroupRecord(ctx, name)
	if err != nil {
		diags.Append(diagnostics.GroupRead(name, err))
		return
	}
	if found {
		err := r.Data.Reconciler.CheckClaim(name, meta, true, engine.Claim{Create: true})
		if err != nil {
			diags.Append(diagnostics.GroupExists(path.Root("name"), err))
			return
		}
		diags.Append(UnfinishedCreate(name, meta, r.Data.Reconciler.CheckLease(name, meta)))
		return
	}
	adopts, err := r.Data.Reconciler.Occupied(ctx, plan.occupant(ctx, diags))
	warnAdoptions(adopts, diags)
	var exists *engine.ExistsError
	var held *engine.NamesHeldError
	var taken *reconcile.NamesTakenError
	switch {
	case errors.As(err, &exists):
		diags.Append(diagnostics.GroupExists(path.Root("name"), err))
	case errors.As(err, &held):
		diags.Append(diagnostics.MemberNamesHeld(path.Root("base_instance_name"), err))
	case errors.As(err, &taken):
		diags.Append(diagnostics.MemberNamesTaken(path.Root("base_instance_name"), err))
	case err != nil:
		diags.Append(diagnostics.GroupRead(name, err))
	}
}

// UnfinishedCreate is what a create is told of a group whose record says another apply was
// creating it (meta), by leaseErr (CheckLease): while that apply holds the lease the group is
// being created, and this create is refused; once no apply holds it, the creation stopped
// part-way and this one finishes it.
func UnfinishedCreate(name string, meta reconcile.Meta, leaseErr error) diag.Diagnostic {
	var held *engine.LeaseError
	switch {
	case errors.As(leaseErr, &held):
		return diagnostics.GroupCreateUnderWay(path.Root("name"), name, held.Lease.Holder, held.Lease.Since)
	case leaseErr != nil:
		return diagnostics.GroupLeaseHeld(leaseErr)
	}
	return diagnostics.GroupCreateUnfinished(name, meta.Owner.ID, meta.Owner.Since)
}

// warnUnfinishedCreate tells a destroy about a group whose create failed half-way: a failed
// create saves no state (so that the next apply finishes it rather than rebuilding it), and the
// destroy, which destroys what the state has, leaves its members and record on the host.
func (r *StatefulGroupResource) warnUnfinishedCreate(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) {
	var name types.String
	if req.Plan.GetAttribute(ctx, path.Root("name"), &name).HasError() || name.IsNull() || name.IsUnknown() {
		return
	}
	_, meta, found, err := r.Data.LoadGroupRecord(ctx, name.ValueString())
	if err != nil || !found || meta.Owner == nil || !meta.Owner.Creating {
		return
	}
	diags.AddWarning("Group "+name.ValueString()+" was left half-created",
		fmt.Sprintf("An apply that created group %s failed part-way (since %s) and saved no state, so this destroy does not see the members it made. Run terraform apply to finish the creation, then destroy; or import it (terraform import virt_stateful_group.<name> %s) and destroy.",
			name.ValueString(), meta.Owner.Since.UTC().Format(time.RFC3339), name.ValueString()))
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

// refuseHostChanged reports the members the host has now that differ from those the state last
// read (hostChanges), as the protocol's verdict says: when the plan changes the group, it
// refuses (and returns true): this plan is not the one that was approved (in an apply), or is
// made from a host the state does not show (-refresh=false). When the group has nothing to do,
// the plan keeps the state's members and only warns.
func refuseHostChanged(ctx context.Context, diags *diag.Diagnostics, group string, changes []string, verdict groupproto.HostVerdict) bool {
	if verdict == groupproto.HostSame {
		return false
	}
	listed := shortList(changes)
	tflog.Warn(ctx, "members changed on the host since the state last read them", map[string]any{"group": group, "changed": len(changes), "changes": listed})
	if verdict == groupproto.HostWarn {
		diags.AddWarning("Members of group "+group+" changed on the host since the state last read them",
			listed+". The group has nothing to change for it; the next refresh shows them as they are.")
		return false
	}
	diags.AddError("Members of group "+group+" changed on the host after the plan was made",
		listed+". Nothing was changed. In an apply, the plan you approved was made from the host as it was: run terraform apply again, and approve the plan made from what the host has now. In a plan with -refresh=false, the state is older than the host: plan with refresh (or run terraform apply -refresh-only first).")
	return true
}

// warnHostsDown warns which of the group's hosts did not answer, and what that means for the plan.
func warnHostsDown(ctx context.Context, diags *diag.Diagnostics, group string, down map[string]error) {
	if len(down) == 0 {
		return
	}
	hosts := make([]string, 0, len(down))
	for h := range down {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	lines := make([]string, len(hosts))
	for i, h := range hosts {
		lines[i] = fmt.Sprintf("%s: %v", providerdata.OnHost(h), down[h])
	}
	tflog.Warn(ctx, "hosts of the group did not answer", map[string]any{"group": group, "hosts": hosts})
	diags.AddWarning(fmt.Sprintf("Hosts of group %s did not answer: %s", group, strings.Join(hosts, ", ")),
		strings.Join(lines, "\n")+"\n\nTheir members are UNKNOWN and left as they are: nothing is deleted, replaced or made up for elsewhere. New members are placed only on the hosts that answer, and the plan-time checks of the configuration did not run on these hosts. Once a host answers again, the next plan brings its members up to date where they are.")
}

// shortList joins the first maxListed items, and says how many more there are.
func shortList(items []string) string {
	const maxListed = 20
	if len(items) <= maxListed {
		return strings.Join(items, "; ")
	}
	return fmt.Sprintf("%s; and %d more", strings.Join(items[:maxListed], "; "), len(items)-maxListed)
}

// hostChanges lists how the members observed now differ from `instances` as a refresh last wrote
// it: a member that appeared or is gone, or whose status, health, template revision, current
// action or host is not what the state says. A state without health (written before it existed)
// is not compared on it, and a member whose host does not answer (UNKNOWN, then or now) only on
// its status. Members are listed in the order the host has them, the gone ones last.
func hostChanges(last []InstanceRow, now []engine.Member) []string {
	before := make(map[string]InstanceRow, len(last))
	for _, r := range last {
		before[r.Name] = r
	}
	var out []string
	for _, m := range now {
		r, ok := before[m.Name]
		if !ok {
			out = append(out, m.Name+": appeared ("+string(m.Status)+")")
			continue
		}
		delete(before, m.Name)
		var moved []string
		field := func(name, was, is string) {
			if was != is {
				moved = append(moved, fmt.Sprintf("%s %s, now %s", name, was, is))
			}
		}
		field("status", r.Status, string(m.Status))
		if r.Status == string(engine.StatusUnknown) || m.Status == engine.StatusUnknown {
			// A member of a host that does not answer is not read: its status says it all.
			if len(moved) > 0 {
				out = append(out, m.Name+": "+moved[0])
			}
			continue
		}
		if r.Health != nil {
			field("health", *r.Health, string(m.Health))
		}
		field("template_revision", r.TemplateRevision, m.Revision)
		field("current_action", r.CurrentAction, m.CurrentAction)
		field("host", engine.HostOf(r.Host), engine.HostOf(m.Host))
		if len(moved) > 0 {
			out = append(out, m.Name+": "+strings.Join(moved, ", "))
		}
	}
	for _, r := range last {
		if _, gone := before[r.Name]; gone {
			out = append(out, r.Name+": gone")
		}
	}
	return out
}

// diskNames are the device names of the template's disks; nil when one is not known.
func (t *TemplateModel) diskNames() []string {
	names := []string{}
	for _, d := range t.Disk {
		if !providerdata.Known(d.DeviceName) {
			return nil
		}
		names = append(names, d.DeviceName.ValueString())
	}
	return names
}
