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
// Which members are the canaries: those already on the group's template count first, then those
// that reach it live, then, while fewer than N are, the members that need a disruptive step and
// the members the plan creates, lowest index first, then named members by name. A canary is thus
// never moved back, and the choice is the same at every plan: the canaries of one apply are on the
// group's template at the next, and count first.
//
// A member the plan creates (a scale-out, or a member whose domain is gone: nothing of its record
// is left to say which revision it ran) takes a place in that order by its index: within the hold
// it is built from the group's template, beyond it from the template of the first member held
// back, as a MIG's version with a fixed target size leaves new instances on the other version.
// So autohealing a held member whose domain vanished builds it again on the held template, never
// on the new one, and a vanished canary comes back on the new one.

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

// CanaryCreatedWhy is what a member created while the canary holds says in its planned action.
const CanaryCreatedWhy = "built from the template of the members held back by update_policy.canary"

// joinWhy joins two reasons of a planned action.
func joinWhy(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

// CanaryHeldWhy is what a member held back by the canary says in its planned action.
const CanaryHeldWhy = "held back by update_policy.canary: stays on its template revision until the hold is raised or removed"

// HeldWhy is the planned action's reasons of a member held back: what it says besides (why, its
// change or its health), then the hold.
func HeldWhy(why string) string {
	if why == "" || strings.Contains(why, CanaryHeldWhy) {
		return CanaryHeldWhy
	}
	return why + "; " + CanaryHeldWhy
}

// HeldBack names the members of members that the group's canary holds back on their own template
// (see the rules above); nil when the group has no hold. members are the group's members as
// observed, in any order. A refresh shows these members held back, as the plan does.
func (s GroupState) HeldBack(members []Observed) map[string]bool {
	held, _ := s.canaryHold(members, nil, nil)
	return held
}

// canaryHold decides the hold over the members that stay (those a scale-in deletes or the group
// abandons are not among them) and the members the plan creates (by name and index). It returns
// the members held back, created ones among them, and the template a member created while held is
// built from: the template of the first existing member held back, or, when every existing member
// off the group's template is a canary of this plan, the one the first of them had. preserved
// names members kept as they are for analysis: they are neither moved nor held, and count only
// when on the group's template. A member created when no existing member is off the group's
// template has no other template to be built from, and is not held: it is built from the group's
// template.
func (s GroupState) canaryHold(members []Observed, creating []NewMember, preserved map[string]bool) (map[string]bool, *Template) {
	g := s.Group
	if g.Policy.Canary == nil || g.Policy.Type != UpdateProactive {
		return nil, nil
	}
	rev := g.Template.Revision()
	type candidate struct {
		name  string
		index int
		// own is the template an existing member is held back on; nil for a creation.
		own *Template
	}
	on := 0
	var behind []candidate
	for _, o := range members {
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
		behind = append(behind, candidate{name: o.Name, index: o.Index, own: &mi.Template})
	}
	for _, m := range creating {
		behind = append(behind, candidate{name: m.Name, index: m.Index})
	}
	// Indexed members by index, then named members by name, as a plan lists them.
	slices.SortStableFunc(behind, func(a, b candidate) int {
		switch {
		case (a.index == 0) != (b.index == 0):
			if a.index == 0 {
				return 1
			}
			return -1
		case a.index != b.index:
			return a.index - b.index
		}
		return strings.Compare(a.name, b.name)
	})
	room := max(g.Policy.Canary.Members(g.TargetSize)-on, 0)
	if room >= len(behind) {
		return nil, nil
	}
	// The template members created beyond the hold are built from: the first held member's, else
	// (every existing member behind is a canary of this plan) the one the first canary leaves.
	var stable *Template
	for _, c := range append(slices.Clone(behind[room:]), behind[:room]...) {
		if c.own != nil {
			stable = c.own
			break
		}
	}
	held := make(map[string]bool, len(behind)-room)
	for _, c := range behind[room:] {
		if c.own != nil || stable != nil {
			held[c.name] = true
		}
	}
	return held, stable
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
