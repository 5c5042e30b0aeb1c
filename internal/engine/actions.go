package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// Member actions (Terraform 1.14 actions) act on named members of a group once, outside any
// change of the group's desired state: restart them, recreate them, preserve them now, or end
// their preservation. Each is planned by the group's own plan (PlanGroup) with the named members
// forced, so that it builds the same operations an apply would (prepare before stop, in-flight
// markers, preserved disks kept, waves within max_unavailable), and then keeps only the named
// members' operations: every other member is left to the next apply.

// MemberAction is one of the actions on named members.
type MemberAction int

const (
	// MemberRestart stops (gracefully, within shutdown_timeout) and starts the members under the
	// same UUID, with any change their record already asks for that a restart can make.
	MemberRestart MemberAction = iota
	// MemberRecreate replaces the members: a new domain and new stateless volumes, preserved
	// disks kept byte for byte.
	MemberRecreate
	// MemberPreserve preserves the members now, as a config's preserve = "NOW" does.
	MemberPreserve
	// MemberRelease ends the members' preservation, as a config's preserve = "NO" does.
	MemberRelease
	// MemberRestore puts the members' disks back to their snapshots (update_policy.snapshot):
	// a restart whose stopped member has each snapshotted disk reverted before it starts.
	MemberRestore
)

func (a MemberAction) String() string {
	return [...]string{"restart", "recreate", "preserve", "release", "restore"}[a]
}

// Done is the action as a past participle, for what is told to the user.
func (a MemberAction) Done() string {
	return [...]string{"restarted", "recreated", "preserved", "released", "restored"}[a]
}

// forced is the least action the member action makes of each named member's step.
func (a MemberAction) forced() Action {
	switch a {
	case MemberRestart, MemberRestore:
		return ActionRestart
	case MemberRecreate:
		return ActionReplace
	case MemberPreserve, MemberRelease:
	}
	return ActionNone
}

// memberAction is a member action as the group's plan sees it (Env.action): which members it
// names, and what it does to them.
type memberAction struct {
	kind  MemberAction
	names map[string]bool
}

// force is the action the member action forces on the member; ActionNone for a member it does
// not name, and for the actions that only write a record.
func (a *memberAction) force(name string) Action {
	if a == nil || !a.names[name] {
		return ActionNone
	}
	return a.kind.forced()
}

// why is the reason a forced step gives.
func (a *memberAction) why() string { return a.kind.String() + " asked for by an action" }

// forcedStep is the member's step made at least action: the member is changed even though it
// may be at its desired state already, for the reason given, and the plan takes it to its
// desired state on the way. The update policy's most_disruptive_allowed_action does not cap it:
// it bounds what a change of configuration may do on its own, and the action is the user's
// explicit request for this member.
func forcedStep(step Step, action Action, why string) Step {
	a := max(action, step.Plan.Action)
	step.Plan.Changed = true
	step.Plan.Reasons = append([]Reason{{Action: action, What: why}}, step.Plan.Reasons...)
	step.Plan.Needed, step.Plan.Action, step.Action = a, a, a
	return step
}

// preservation adjusts the members' preservation decisions (PreserveMembers) for the action:
// preserve starts a NOW preservation on each named member that is not preserved; release ends
// the preservation of each named member that is.
func (a *memberAction) preservation(observed []Observed, decisions map[string]PreserveDecision, fp *FailedPreservation, env Env) {
	if a == nil || (a.kind != MemberPreserve && a.kind != MemberRelease) {
		return
	}
	for _, o := range observed {
		if !a.names[o.Name] || o.Unmanaged {
			continue
		}
		d := decisions[o.Name]
		switch {
		case a.kind == MemberPreserve && !d.Preserved():
			timeout := fp.timeout()
			decisions[o.Name] = PreserveDecision{Kind: PreserveNow, Since: env.Now.UnixMilli(), Until: env.Now.Add(timeout), Changed: true,
				Why: fmt.Sprintf("preserved (%s) by an action for %s", PreserveNow, timeout)}
		case a.kind == MemberRelease && d.Preserved():
			decisions[o.Name] = PreserveDecision{Changed: true, Why: fmt.Sprintf("preservation (%s) released by an action", d.Kind)}
		}
	}
}

// UnknownMembersError is a member action naming members the group does not have.
type UnknownMembersError struct {
	Group   string
	Unknown []string
	// Members are the group's members, by name.
	Members []string
}

func (e *UnknownMembersError) Error() string {
	what := "is not a member"
	if len(e.Unknown) > 1 {
		what = "are not members"
	}
	members := "it has no members"
	if len(e.Members) > 0 {
		members = "its members are " + strings.Join(e.Members, ", ")
	}
	return fmt.Sprintf("%s %s of group %s (%s). Nothing was changed.", quoteAll(e.Unknown), what, e.Group, members)
}

func quoteAll(names []string) string {
	q := make([]string, len(names))
	for i, n := range names {
		q[i] = fmt.Sprintf("%q", n)
	}
	return strings.Join(q, ", ")
}

// ActionRefusedError is a member action that cannot be carried out on some of its members: it
// changes nothing, on any member.
type ActionRefusedError struct {
	Action MemberAction
	Group  string
	// Problems are, by member, why it cannot be done to it and what to do instead.
	Problems []Blocked
}

func (e *ActionRefusedError) Error() string {
	lines := make([]string, len(e.Problems))
	for i, b := range e.Problems {
		lines[i] = b.String()
	}
	return fmt.Sprintf("cannot %s members of group %s:\n  %s\n\nNothing was changed.", e.Action, e.Group, strings.Join(lines, "\n  "))
}

// ActionPlan is what a member action does.
type ActionPlan struct {
	// Plan holds the operations on the named members, in waves (Plan.Waves), and every
	// member's final state (Plan.Final).
	Plan GroupPlan
	// Unchanged are the named members the action leaves as they are, with why (a member that
	// is already preserved, or not preserved, for preserve and release).
	Unchanged map[string]string
}

// Members lists the members of the group among observed, by name: what a member action may
// name.
func Members(s GroupState, observed []Observed) []string {
	var out []string
	for _, o := range observed {
		if o.Unmanaged || s.Group.Abandoned(o.Name) {
			continue
		}
		out = append(out, o.Name)
	}
	sort.Strings(out)
	return out
}

// PlanMemberAction plans action on the named members of the group, from what is observed now.
// A name that is not a member is an *UnknownMembersError; a member the action cannot be done to
// (unreachable, preserved for a restart or a recreation, blocked, or a preservation the next
// apply would undo at once) an *ActionRefusedError; either way nothing is to run. The plan is the
// group's plan with the named members forced (restart and recreate), their preservation started
// or ended (preserve and release), and every operation on other members left out, in waves within
// max_unavailable.
func PlanMemberAction(s GroupState, observed []Observed, action MemberAction, names []string, env Env) (ActionPlan, error) {
	s = s.Inventoried(observed, env)
	members := Members(s, observed)
	var unknown []string
	named := map[string]bool{}
	for _, n := range names {
		if !slices.Contains(members, n) {
			unknown = append(unknown, n)
			continue
		}
		named[n] = true
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return ActionPlan{}, &UnknownMembersError{Group: s.Group.Name, Unknown: unknown, Members: members}
	}
	byName := map[string]Observed{}
	for _, o := range observed {
		byName[o.Name] = o
	}
	refused := &ActionRefusedError{Action: action, Group: s.Group.Name}
	refuse := func(name, problem string) {
		refused.Problems = append(refused.Problems, Blocked{Name: name, Problem: problem})
	}
	current := PreserveMembers(s, observed, env.Now)
	out := ActionPlan{Unchanged: map[string]string{}}
	for _, name := range slices.Sorted(maps.Keys(named)) {
		o, d := byName[name], current[name]
		switch {
		case o.Unknown:
			refuse(name, unreachable(o.Host)+": act on it once its host answers")
		case action == MemberRestore && len(s.Inventory.Snapshots(name)) == 0:
			refuse(name, "it has no snapshot: snapshots are taken by a rollout under update_policy.snapshot")
		case (action == MemberRestart || action == MemberRecreate || action == MemberRestore) && d.Preserved():
			refuse(name, fmt.Sprintf("it is %s and kept exactly as it is: release it first (the virt_instance_release action, or preserve = \"NO\" on its per-instance config)", d.Why))
		case action == MemberRecreate && o.Instance.Template.Adopted:
			refuse(name, "it is a domain the group adopted, which it cannot define again from a template: restart it instead")
		case action == MemberPreserve && d.Preserved() && !d.Changed:
			out.Unchanged[name] = "already " + d.Why
		case action == MemberPreserve:
			if after := PreserveMembers(s, withPreservation(observed, name, PreserveNow, env.Now.UnixMilli()), env.Now); !after[name].Preserved() {
				refuse(name, fmt.Sprintf("the next apply would end its preservation at once (%s): change that first", after[name].Why))
			}
		case action == MemberRelease && !d.Preserved():
			out.Unchanged[name] = "not preserved"
		case action == MemberRelease:
			if after := PreserveMembers(s, withPreservation(observed, name, "", 0), env.Now); after[name].Preserved() {
				refuse(name, fmt.Sprintf("the next apply would preserve it again at once (%s): set preserve = \"NO\" on its per-instance config", after[name].Why))
			}
		}
	}
	if len(refused.Problems) > 0 {
		return ActionPlan{}, refused
	}
	for name := range out.Unchanged {
		delete(named, name)
	}
	env.action = &memberAction{kind: action, names: named}
	full := PlanGroup(s, observed, env)
	for _, b := range full.Blocked {
		if named[b.Name] {
			refused.Problems = append(refused.Problems, b)
		}
	}
	p := GroupPlan{Preservation: full.Preservation, Final: full.Final, Placement: s.Placement}
	stepped := map[string]bool{}
	for _, st := range full.Steps {
		if !named[st.Name] {
			continue
		}
		stepped[st.Name] = true
		if (action == MemberRestart || action == MemberRestore) && st.Action == ActionReplace {
			refuse(st.Name, fmt.Sprintf("it needs REPLACE (%s), which a restart cannot do: recreate it (the virt_instance_recreate action), or apply the group", JoinReasons(st.Plan.Reasons)))
			continue
		}
		p.Steps = append(p.Steps, st)
	}
	// Every member the action names and does not leave as it is has its operation: one the
	// group's plan does not change (the next apply removes it, or leaves it alone on purpose)
	// is refused, saying why, rather than passed over in silence.
	for _, name := range slices.Sorted(maps.Keys(named)) {
		switch {
		case stepped[name] || slices.ContainsFunc(full.Blocked, func(b Blocked) bool { return b.Name == name }):
		case slices.Contains(full.Delete, name):
			refuse(name, fmt.Sprintf("the next apply removes it (%s)", full.DeleteReasons[name]))
		default:
			why := "the group's plan leaves it as it is"
			if i := slices.IndexFunc(full.Final, func(m Member) bool { return m.Name == name }); i >= 0 && full.Final[i].Planned.Why != "" {
				why += " (" + full.Final[i].Planned.Why + ")"
			}
			refuse(name, why)
		}
	}
	if len(refused.Problems) > 0 {
		return ActionPlan{}, refused
	}
	p.buildWaves(s, byName, env)
	withUUIDs(p.Waves, env.NewUUID)
	p.Inventory, p.FinalInventory, p.makers = s.inventoryOf(p.Waves)
	if len(p.Blocked) > 0 {
		refused.Problems = append(refused.Problems, p.Blocked...)
		return ActionPlan{}, refused
	}
	out.Plan = p
	return out, nil
}

// withPreservation is observed with the member's record preserved as kind from the time since
// ("" for none): the member as the action leaves it, for the next plan's verdict on it.
func withPreservation(observed []Observed, name, kind string, since int64) []Observed {
	out := slices.Clone(observed)
	for i := range out {
		if out[i].Name == name {
			out[i].Instance.Preserved, out[i].Instance.PreservedSince = kind, since
		}
	}
	return out
}
