package engine

import "strings"

// PlannedCreate is the planned action of a member the plan creates.
const PlannedCreate = "CREATE"

// Planned renders what the step does to its member, as the plan shows it: the action and its
// reasons, "ADOPT" for an adoption, and the power change.
func (s Step) Planned() string {
	if s.Note != "" {
		return s.Note
	}
	var out string
	switch {
	case s.Plan.Changed && s.Adopt:
		out = "ADOPT"
	case s.Plan.Changed:
		out = s.Action.String()
	}
	if s.Plan.Changed && len(s.Plan.Reasons) > 0 {
		out += ": " + JoinReasons(s.Plan.Reasons)
	}
	power := map[string]string{StatusRunning: "START", StatusStopped: "STOP"}[s.Power]
	switch {
	case out == "" && power == "":
		return "NONE"
	case out == "":
		return power
	case power != "":
		return out + "; then " + power
	}
	return out
}

// plannedRank orders planned actions by disruption, as Step.Planned and PlannedCreate write
// them.
func plannedRank(planned string) int {
	head := planned
	if i := strings.IndexAny(head, ":;"); i >= 0 {
		head = head[:i]
	}
	switch head {
	case "NONE":
		return 0
	case "REFRESH", "ADOPT", "START", "STOP", "PRESERVE", "RELEASE":
		return 1
	case "RESTART":
		return 2
	}
	return 3
}

// Unplanned lists what this plan would do beyond what an earlier plan of the same group showed
// (planned actions by member name): a member it would delete, or treat more disruptively. An
// apply refuses such a plan rather than do what nobody reviewed.
func (p GroupPlan) Unplanned(shown map[string]string) []string {
	var out []string
	for _, name := range p.Delete {
		if _, ok := shown[name]; ok {
			out = append(out, name+": DELETE, planned "+shown[name])
		}
	}
	for _, m := range p.Final {
		if was, ok := shown[m.Name]; ok && plannedRank(m.Planned) > plannedRank(was) {
			out = append(out, m.Name+": "+m.Planned+", planned "+was)
		}
	}
	return out
}
