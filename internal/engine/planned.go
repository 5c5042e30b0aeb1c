package engine

import "strings"

// PlannedKind is what a plan does to a member, by kind. It is what ranks one plan against
// another (Unplanned) and what diagnostics pick members by; its String is the head of the
// planned action the plan shows.
type PlannedKind int

// Kinds of planned action.
const (
	PlannedNone PlannedKind = iota
	PlannedRefresh
	PlannedAdopt
	PlannedStart
	PlannedStop
	PlannedPreserve
	PlannedRelease
	PlannedRestart
	PlannedReplace
	PlannedCreate
	// PlannedAbandon takes a member out of the group, leaving its domain and volumes as they are
	// (Group.Abandon).
	PlannedAbandon
	// PlannedMove moves a member to another host (MemberMove).
	PlannedMove
	// PlannedUnrecognized is the kind of a planned action, read back from where a plan kept
	// it, that this build does not know: it ranks as the most disruptive, so that nothing is
	// taken as more disruptive than it.
	PlannedUnrecognized
)

var plannedKindNames = [...]string{"NONE", "REFRESH", "ADOPT", "START", "STOP", "PRESERVE", "RELEASE", "RESTART", "REPLACE", "CREATE", "ABANDON", "MOVE", ""}

func (k PlannedKind) String() string {
	if k < 0 || k > PlannedUnrecognized {
		return ""
	}
	return plannedKindNames[k]
}

// rank orders planned actions by disruption: nothing; a live change, an adoption, a power change,
// a preservation or an abandonment (a record write); a restart; a replacement or a creation.
func (k PlannedKind) rank() int {
	switch k {
	case PlannedNone:
		return 0
	case PlannedRefresh, PlannedAdopt, PlannedStart, PlannedStop, PlannedPreserve, PlannedRelease, PlannedAbandon:
		return 1
	case PlannedRestart, PlannedMove:
		// A move may be cold, which takes the member down as a restart does.
		return 2
	case PlannedReplace, PlannedCreate, PlannedUnrecognized:
		// An action this build does not know ranks as the most disruptive: nothing is taken
		// as more disruptive than it.
		return 3
	}
	return 3
}

// plannedKindOf is the planned kind of a change of action a.
func plannedKindOf(a Action) PlannedKind {
	switch a {
	case ActionRefresh:
		return PlannedRefresh
	case ActionRestart:
		return PlannedRestart
	case ActionReplace:
		return PlannedReplace
	case ActionNone:
		return PlannedNone
	}
	return PlannedNone
}

// Planned is what a plan does to one member and why, as typed values; String renders it as the
// plan shows it ("NONE", "CREATE", "REPLACE: boot image changed; then START").
type Planned struct {
	Kind PlannedKind
	// Why is the reasons, in words; "" for none.
	Why string
	// Then is the power change that follows a change (PlannedStart or PlannedStop), or
	// PlannedNone.
	Then PlannedKind
	// Unhealed is true when the member failed and autohealing leaves it as it is for now
	// (initial delay, backoff) or for good (max_consecutive_failures): Why says which.
	Unhealed bool
	// Held is true when the group's canary holds the member back on its own template
	// (update_policy.canary): Why says so.
	Held bool
}

// String renders the planned action as the plan shows it.
func (p Planned) String() string {
	out := p.Kind.String()
	switch {
	case p.Kind == PlannedUnrecognized:
		return p.Why
	case p.Why != "":
		out += ": " + p.Why
	}
	if p.Then != PlannedNone {
		out += "; then " + p.Then.String()
	}
	return out
}

// Planned is what the step does to its member, as the plan shows it: the action and its reasons,
// ADOPT for an adoption, the power change, or the preservation the step writes alone.
func (s Step) Planned() Planned {
	if s.Preserve != nil && !s.Plan.Changed && s.Power == "" {
		// A step that only writes a preservation (or its release) to the member's record.
		kind := PlannedRelease
		if s.Preserve.Preserved() {
			kind = PlannedPreserve
		}
		return Planned{Kind: kind, Why: s.Preserve.Why}
	}
	power := map[Status]PlannedKind{StatusRunning: PlannedStart, StatusStopped: PlannedStop}[s.Power]
	if !s.Plan.Changed {
		p := Planned{Kind: power}
		if power == PlannedStop {
			p.Why = haltedWhy("", s.Observed)
		}
		if power == PlannedNone && len(s.DropSnapshots) > 0 {
			p.Why = droppedWhy(s.DropSnapshots)
		}
		return p
	}
	p := Planned{Kind: plannedKindOf(s.Action), Why: JoinReasons(s.Plan.Reasons), Then: power}
	if s.Adopt {
		p.Kind = PlannedAdopt
	}
	if s.Disruptive() || power == PlannedStop {
		p.Why = haltedWhy(p.Why, s.Observed)
	}
	return p
}

// Unplanned lists what this plan would do beyond what an earlier plan of the same group showed
// (planned actions by member name, as the plan handed them to its apply): a member it would
// delete, or treat more disruptively. An apply refuses such a plan rather than do what nobody
// reviewed.
func (p GroupPlan) Unplanned(shown map[string]Planned) []string {
	var out []string
	for _, name := range p.Delete {
		if was, ok := shown[name]; ok {
			out = append(out, name+": DELETE, planned "+was.String())
		}
	}
	for _, m := range p.Final {
		if was, ok := shown[m.Name]; ok && m.Planned.Kind.rank() > was.Kind.rank() {
			out = append(out, m.Name+": "+m.Planned.String()+", planned "+was.String())
		}
	}
	return out
}

// TakenOverWhy is what a member's planned action says when the plan changes nothing of it and
// the apply records this state as the group's owner (an import taking the group over).
const TakenOverWhy = "this state takes the group over (import); the member is left as it is"

// TakenOver is p in a plan whose apply takes the group over: a member the plan leaves as it is
// says so, so that the plan, which must change something for the apply to run, shows every
// member as it is rather than hiding the list until after the apply. A member the plan changes
// shows its change.
func TakenOver(p Planned) Planned {
	if p.Kind != PlannedNone {
		return p
	}
	if p.Why == "" {
		p.Why = TakenOverWhy
	} else if !strings.Contains(p.Why, TakenOverWhy) {
		p.Why += "; " + TakenOverWhy
	}
	return p
}
