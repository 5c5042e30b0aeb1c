package engine

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
)

// DefaultHost names the provider's own uri among a group's hosts: a group with no
// distribution_policy lives there, and a distribution_policy may list it beside host blocks.
const DefaultHost = "default"

// StatusUnknown is the status of a member whose host cannot be reached: nothing is known of it
// but where it lives.
const StatusUnknown Status = "UNKNOWN"

// HostList is the hosts the group spreads its members over, in the order the user wrote them.
func (g Group) HostList() []string {
	if len(g.Hosts) == 0 {
		return []string{DefaultHost}
	}
	return g.Hosts
}

// RecordHost is the host the group record is written to when the group is created: the first
// of its hosts. The record stays where it was made (see reconcile's record lookup).
func (g Group) RecordHost() string { return g.HostList()[0] }

// HostOf is the host a member lives on: "" is the default host.
func HostOf(host string) string {
	if host == "" {
		return DefaultHost
	}
	return host
}

// place gives each new member its host, and false when no host of the group answered the
// observation to take it. A member the group placed before goes back to that host, whatever
// the distribution says now: its preserved disks are there, and a member moves only by an
// explicit MOVE (moves.go). Every other one goes to the host of the group's list with the fewest
// members, the earliest in the list on a tie, so that the group stays evenly spread (a drained
// host takes none); so does one placed on a host the provider no longer has (see Env.Hosts), and
// one placed on a host that does not answer (it is there only when it was never made: see
// Unreachable). A host that does not answer takes no new member: the creation would fail, and
// the member would be reported as on a host nobody can read. counts holds how many members each
// host keeps after the plan's deletions, and is updated.
func place(g Group, env Env, placed map[string]string, counts map[string]int, name string) (string, bool) {
	if h, ok := placed[name]; ok && env.configured(h) && env.answers(h) {
		counts[h]++
		return h, true
	}
	best := ""
	// A drained host takes no new member: its members are moving away.
	for _, h := range g.stays() {
		if !env.answers(h) {
			continue
		}
		if best == "" || counts[h] < counts[best] {
			best = h
		}
	}
	if best == "" {
		return "", false
	}
	counts[best]++
	return best, true
}

// noHostAnswers is why a member to create is not placed: every host of the group is down.
func noHostAnswers(g Group, env Env) string {
	return fmt.Sprintf("no host of the group answers to create it on (distribution_policy hosts %s; not answering: %s): it is created once one of them answers. Nothing was changed; lower target_size to plan without it",
		strings.Join(g.HostList(), ", "), strings.Join(env.Down, ", "))
}

// Unreachable are the members the group placed on hosts that did not answer (down) and that no
// listing saw elsewhere (seen), as the plan and the state show them: UNKNOWN, nothing known of
// them but where they are. A member the group was creating there (Creating) is not among them:
// nothing says it was ever made, so it is not counted, not shown and never removed by scale-in
// in place of a real member; its placement is dropped with the next apply's record, and its name
// is free.
func (s GroupState) Unreachable(down func(host string) bool, seen func(name string) bool) []Observed {
	var out []Observed
	for name, h := range s.Placement {
		if !down(HostOf(h)) || seen(name) || slices.Contains(s.Creating, name) {
			continue
		}
		index, _ := ParseInstanceIndex(s.Group.Base, name)
		out = append(out, Observed{Name: name, Index: index, Host: HostOf(h), Unknown: true, Status: StatusUnknown})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// StillCreating is what the record keeps as Creating after a run of the plan that stopped early:
// the members the plan creates except those it made (created).
func (p GroupPlan) StillCreating(created []string) []string {
	var out []string
	for _, name := range p.Creating {
		if !slices.Contains(created, name) {
			out = append(out, name)
		}
	}
	return out
}

// unreachable is what the plan says of a member whose host cannot be reached.
func unreachable(host string) string {
	return fmt.Sprintf("host %q cannot be reached", HostOf(host))
}

// HostWait is a change a plan wants of a member whose host does not answer, and waits for it.
type HostWait struct {
	Name string
	Host string
	// Why is the member's planned action's reason: what waits, and for which host.
	Why string
	// Picked, for a scale-in's pick, is why the scale-in picked it.
	Picked string
}

// String says what waits and why, as the plan's warning lists it.
func (w HostWait) String() string {
	if w.Picked != "" {
		return fmt.Sprintf("%s: %s; it was picked by %s, and no other member is removed in its place", w.Name, w.Why, w.Picked)
	}
	return w.Name + ": " + w.Why
}

// UnknownMember is a member whose host cannot be reached, as plans and reads show it: UNKNOWN,
// left as it is, and why.
func UnknownMember(o Observed) Member {
	return Member{Name: o.Name, Index: o.Index, Status: StatusUnknown, Revision: o.Instance.TemplateRevision, CurrentAction: "NONE",
		Planned: Planned{Why: unreachable(o.Host)}, Health: HealthUnknown, Host: HostOf(o.Host)}
}

// PlacementWrite is what a run does with the group record's placement (where each member is, and
// which are being created) before, after or on the failure of its operations.
type PlacementWrite int

const (
	// PlacementKept: the record already says it; nothing is written.
	PlacementKept PlacementWrite = iota
	// PlacementWritten: the record is written with the new placement.
	PlacementWritten
	// PlacementNotNeeded: the group has no record and needs none for it (it is on one host, or
	// has no member to place): without a placement, a listing reads every domain.
	PlacementNotNeeded
	// PlacementLost: the group had a record and it is gone: the run cannot go on.
	PlacementLost
)

// Placing decides what a run does with the placement it is about to keep (placement, with the
// members being created, and the inventory inv: see GroupPlan.Inventory): s is the group as the
// run last wrote or read it, and exists whether its record is on the host now.
func (s GroupState) Placing(exists bool, placement map[string]string, creating []string, inv Inventory) PlacementWrite {
	switch {
	case s.Placed && maps.Equal(placement, s.Placement) && slices.Equal(creating, s.Creating) && s.Inventory.Equal(inv):
		return PlacementKept
	case exists:
		return PlacementWritten
	case len(s.Placement) == 0 && (len(s.Group.HostList()) == 1 || len(placement) == 0):
		return PlacementNotNeeded
	}
	return PlacementLost
}
