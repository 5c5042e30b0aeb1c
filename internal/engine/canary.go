package engine

import (
	"slices"
	"strings"
)

// A canary hold (update_policy.canary) stops the rollout of a template change once N members run
// the group's template: the others stay on the template they have, and that is the desired state,
// so that a plan after the apply is empty. Raising N or removing the hold goes on with the rollout.
//
// A revision is the whole template (Template.Revision, a hash of it), and a member's record names
// the one it was built or last updated from. The hold is on the members whose move to the group's
// template would take them down (RESTART or REPLACE, after minimal_action): a member that reaches
// it live (REFRESH or NONE: metadata, a description) moves as always, and is then on the group's
// template like any other. A member held back gets no part of the group's template, not even its
// live parts: it is planned from its own recorded template, as an OPPORTUNISTIC update leaves a
// member, so its drift is still repaired, its per-instance config still applied and its heals
// still made, all on its own revision.
//
// Which members are the canaries: those already on the group's template count first (members it
// creates among them: a member that does not exist has no revision to keep, and is created from
// the group's template), then those that reach it live, then, while fewer than N are, the members
// that need a disruptive step, lowest index first, then named members by name. A canary is thus
// never moved back, and the choice is the same at every plan: the canaries of one apply are on the
// group's template at the next, and count first.

// Canary is update_policy.canary: how many members a rollout updates before it holds, as a
// number (Fixed) or a percentage of the target size (Percent, above 0).
type Canary struct {
	Fixed   int
	Percent int
}

// ParseCanary reads canary as users write it: a whole number of members, 0 or more, or a
// percentage of the target size from "0%" to "100%" (the forms of max_unavailable, parseMembers).
func ParseCanary(s string) (Canary, error) {
	fixed, percent, err := parseMembers(s, 0)
	return Canary{Fixed: fixed, Percent: percent}, err
}

// Members is how many members run the group's template before the rollout holds: a percentage
// of targetSize is rounded up, so that a percentage above 0 always lets at least one member go
// (max_unavailable's rounds down: it bounds harm, this one lets a rollout start).
func (c Canary) Members(targetSize int) int {
	if c.Percent > 0 {
		return (targetSize*c.Percent + 99) / 100
	}
	return c.Fixed
}

// CanaryHeldWhy is what a member held back by the canary says in its planned action.
const CanaryHeldWhy = "held back by update_policy.canary: stays on its template revision until the hold is raised or removed"

// HeldWhy is the planned action's reasons of a member held back, why being what it says besides.
func HeldWhy(why string) string {
	if why == "" || strings.Contains(why, CanaryHeldWhy) {
		return CanaryHeldWhy
	}
	return CanaryHeldWhy + "; " + why
}

// HeldBack names the members of members that the group's canary holds back on their own template
// (see the rules above); nil when the group has no hold. members are the group's members that
// stay (those a scale-in deletes or the group abandons are not among them), in any order; creating
// is how many members the plan creates, each from the group's template. preserved names members
// kept as they are for analysis: they are neither moved nor held, and count only when on the
// group's template.
func (s GroupState) HeldBack(members []Observed, creating int, preserved map[string]bool) map[string]bool {
	g := s.Group
	if g.Policy.Canary == nil || g.Policy.Type != UpdateProactive {
		return nil
	}
	rev := g.Template.Revision()
	ordered := slices.Clone(members)
	slices.SortStableFunc(ordered, func(a, b Observed) int {
		switch {
		case (a.Index == 0) != (b.Index == 0):
			if a.Index == 0 {
				return 1
			}
			return -1
		case a.Index != b.Index:
			return a.Index - b.Index
		}
		return strings.Compare(a.Name, b.Name)
	})
	on := creating
	var behind []string
	for _, o := range ordered {
		if o.Unknown || o.Unmanaged {
			// Nothing known of it, or not the group's to update.
			continue
		}
		mi := Described(o, rev, s.TemplateRevisions)
		if mi.Template.Adopted {
			continue
		}
		if mi.TemplateRevision == rev {
			on++
			continue
		}
		if preserved[o.Name] || mi.Preserved != "" {
			continue
		}
		if s.movesLive(o.Name, mi) {
			on++
			continue
		}
		behind = append(behind, o.Name)
	}
	room := max(g.Policy.Canary.Members(g.TargetSize)-on, 0)
	if room >= len(behind) {
		return nil
	}
	held := make(map[string]bool, len(behind)-room)
	for _, name := range behind[room:] {
		held[name] = true
	}
	return held
}

// movesLive reports whether the member's move from its record to the group's template is live
// (REFRESH or NONE after minimal_action). Its record, not what the host shows, is what is
// compared: drift is repaired on whichever template the member is left, and must not decide
// which members are the canaries.
func (s GroupState) movesLive(name string, mi ManagedInstance) bool {
	minimal, allowed := s.Bounds(name)
	config := s.Config(name)
	if retained, ok := s.RetainedConfig(name, mi); ok {
		config = retained
	}
	return PlanInstance(mi, s.Group.Template, s.StatefulPolicy(), config, minimal, allowed).Action < ActionRestart
}
