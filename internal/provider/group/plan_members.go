package group

import (
	"context"
	"fmt"
	"sort"
	"strings"

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

// planMembers plans the members as the decision says (from the cache, the observation, the kept
// probes, or observed again) and shows them in `instances`, with what the plan holds its apply
// to in the private state: the apply, in another process, plans again and must reach the same
// members, or Terraform stops it with an error that blames the provider.
func (r *StatefulGroupResource) planMembers(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, d groupproto.PlanDecision, read *planRead, state *StatefulGroupModel) {
	p, o, seen, ok := r.previewMembers(ctx, d, read, &resp.Diagnostics)
	if !ok {
		return
	}
	if d.CheckHost && hostChangedSinceRead(ctx, &resp.Diagnostics, d, read, state, p, o) {
		return
	}
	if !checkMemberPlan(ctx, req, p, o, read.s.Group, &resp.Diagnostics) {
		return
	}
	list, shown := shownMembers(p, d, read.in.StateListed, state.Instances, &resp.Diagnostics)
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), list)...)
	shown = unknownOnUnsettledHosts(ctx, req, resp, read.s.Group.Name, p, o, d.PinHosts, &seen, shown)
	writePlanned(ctx, resp.Private, shown, &resp.Diagnostics)
}

// previewMembers plans the members: judged by the kept probes or the hosts the refresh saw when
// the decision says so, so that the plan the user approves and the apply's final plan, in
// another process, are made from the same findings. It warns of the hosts that did not answer,
// and reports false when the group could not be planned.
func (r *StatefulGroupResource) previewMembers(ctx context.Context, d groupproto.PlanDecision, read *planRead, diags *diag.Diagnostics) (engine.GroupPlan, reconcile.Observation, reconcile.HostsSeen, bool) {
	var probed map[string]*engine.ProbeOutcome
	if d.Action == groupproto.PlanJudgeByProbes {
		// The apply of a plan made by a refresh in another process (or a plan with
		// -refresh=false): its members are judged as that refresh's probes found them.
		probed = read.last.outcomes()
	}
	// The hosts as the refresh saw them (settled.Hosts): the plan the user approves and the
	// apply's final plan, in another process, are made from the same hosts, whichever answers in
	// between (reconcile's hostsseen.go).
	seen, _ := read.last.seen()
	observeCtx := ctx
	if d.PinHosts {
		observeCtx = reconcile.WithHostsSeen(ctx, seen)
	}
	p, o, err := r.Data.PreviewAt(observeCtx, read.s, read.gen, probed)
	if err != nil {
		diags.Append(diagnostics.GroupPlan(read.s.Group.Name, err))
		return p, o, seen, false
	}
	warnHostsDown(ctx, diags, read.s.Group.Name, o.Down)
	return p, o, seen, true
}

// hostChangedSinceRead compares the members observed now with those the state has, when the
// decision asks for it (CheckHost), and reports true when the plan is refused for it.
//
// No refresh in this process: this is the apply's own plan, or a plan with -refresh=false, and
// the state's members are what a refresh read. Members that changed on the host since change
// what the apply does; Terraform would stop such an apply with an error that blames the
// provider, so the plan refuses it first, saying what changed. (An unreadable list only costs
// the check.)
func hostChangedSinceRead(ctx context.Context, diags *diag.Diagnostics, d groupproto.PlanDecision, read *planRead, state *StatefulGroupModel, p engine.GroupPlan, o reconcile.Observation) bool {
	var ignored diag.Diagnostics
	changes := hostChanges(instanceRows(state.Instances, &ignored), MembersOf(o, read.rs, state.Running.ValueBool()))
	return refuseHostChanged(ctx, diags, read.s.Group.Name, changes, d.RefuseHostChanged(len(changes), !p.Idle()))
}

// checkMemberPlan reports what the members' plan needs from the user before it may be applied
// (an action the update policy does not allow, user data only the apply can read, members the
// group abandons), and refuses a plan that would create members under names other domains have:
// false when it is refused.
func checkMemberPlan(ctx context.Context, req resource.ModifyPlanRequest, p engine.GroupPlan, o reconcile.Observation, g engine.Group, diags *diag.Diagnostics) bool {
	providerdata.AddPlanDiagnostics(diags, p, path.Root("update_policy").AtName("most_disruptive_allowed_action"))
	checkUserDataAvailable(ctx, req.Config, p, diags)
	warnAbandons(p, diags)
	return !checkTakenNames(o, g, p, diags)
}

// shownMembers is the `instances` list the plan shows, and what it holds its apply to (each
// member as planned, by name).
func shownMembers(p engine.GroupPlan, d groupproto.PlanDecision, stateListed bool, stateList types.String, diags *diag.Diagnostics) (types.String, map[string]engine.Planned) {
	list, ds := instancesValue(p.Final)
	diags.Append(ds...)
	shown := plannedOf(p.Final)
	// When the group has nothing to do, a difference in the list can only come from another
	// resource of the group (a per-instance config that added a named member) since the last
	// refresh: the next refresh shows it, and the group itself has nothing to change for it.
	if p.Idle() && stateListed {
		list, shown = stateList, shownOfState(stateList, shown, diags)
	}
	if d.TakeOver {
		// The apply writes this state in the group record as its owner: an update in place,
		// which shows the members as they are.
		list, shown = takenOver(list, shown, diags)
	}
	return list, shown
}

// unknownOnUnsettledHosts leaves `instances` known only after apply, with a warning, when it
// depends on hosts whose answer may change before the apply's final plan (unsettledHosts): the
// apply then has no shown plan to hold itself to (nil). Otherwise it returns shown as it is.
func unknownOnUnsettledHosts(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, group string, p engine.GroupPlan, o reconcile.Observation, pinned bool, seen *reconcile.HostsSeen, shown map[string]engine.Planned) map[string]engine.Planned {
	// A plan that changes nothing is not applied: it has no final plan to contradict.
	if hosts := unsettledHosts(p, o, pinned, seen); len(hosts) > 0 && !resp.Plan.Raw.Equal(req.State.Raw) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("instances"), types.StringUnknown())...)
		warnUnsettledHosts(ctx, &resp.Diagnostics, group, hosts)
		return nil
	}
	return shown
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

// downLines are the hosts that did not answer, sorted, and a line for each with its error.
func downLines(down map[string]error) (hosts, lines []string) {
	hosts = make([]string, 0, len(down))
	for h := range down {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	lines = make([]string, len(hosts))
	for i, h := range hosts {
		lines[i] = fmt.Sprintf("%s: %v", providerdata.OnHost(h), down[h])
	}
	return hosts, lines
}

// warnHostsDown warns which of the group's hosts did not answer, and what that means for the plan.
func warnHostsDown(ctx context.Context, diags *diag.Diagnostics, group string, down map[string]error) {
	if len(down) == 0 {
		return
	}
	hosts, lines := downLines(down)
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
