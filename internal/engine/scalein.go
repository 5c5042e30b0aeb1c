package engine

import (
	"fmt"
	"sort"
)

// Scale-in orders: which members a scale-in removes first, among the healthy ones.
const (
	ScaleInHighestIndex = "HIGHEST_INDEX"
	ScaleInOldest       = "OLDEST"
	ScaleInNewest       = "NEWEST"
)

// ScaleInOrders lists the orders as users write them.
var ScaleInOrders = []string{ScaleInHighestIndex, ScaleInOldest, ScaleInNewest}

// ScaleInVictim is a member a scale-in removes, with why it was chosen.
type ScaleInVictim struct {
	Index  int
	Reason string
}

// PickScaleIn chooses the n members a scale-in removes: unhealthy ones first (the most useful
// to lose), then the healthy ones in the group's order: the highest index (the default), the
// oldest or the newest by when each was last created (a member whose creation time is unknown
// counts as the oldest). Ties go to the highest index. Preserved members go last. Within each of
// those kinds, a member of the host that keeps the most members goes first, so that the group
// stays evenly spread over its hosts; with one host that changes nothing. health judges each
// member (Group.HealthOf at the plan's time): a member its probe finds UNHEALTHY is unhealthy as
// a FAILED one is.
//
// A member whose host cannot be reached is picked as if its host answered: nothing is known of
// its health, so it is ordered as a healthy one. Were it passed over, the scale-in would remove a
// member the policy did not pick (with its disks) because of an outage; the plan makes the pick
// wait for its host instead (PlanGroup).
func PickScaleIn(members []Observed, n int, order string, health func(Observed) MemberHealth, preserved map[string]bool) []ScaleInVictim {
	type cand struct {
		o       Observed
		health  Health
		why     string
		healthy bool
		kind    int // 0 unhealthy, 1 healthy (or not known), 2 preserved: the order they go in
	}
	cands := make([]cand, len(members))
	counts := map[string]int{}
	for i, o := range members {
		c := cand{o: o, kind: 1}
		if !o.Unknown {
			mh := health(o)
			c.health, c.why, c.healthy = mh.Health, mh.Reason, mh.Health == HealthHealthy
		}
		switch {
		case preserved[o.Name]:
			c.kind = 2
		case o.Unknown || c.healthy:
			c.kind = 1
		default:
			c.kind = 0
		}
		cands[i] = c
		counts[HostOf(o.Host)]++
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if a.kind != b.kind {
			return a.kind < b.kind
		}
		switch order {
		case ScaleInOldest:
			if a.o.Instance.Created != b.o.Instance.Created {
				return a.o.Instance.Created < b.o.Instance.Created
			}
		case ScaleInNewest:
			if a.o.Instance.Created != b.o.Instance.Created {
				return a.o.Instance.Created > b.o.Instance.Created
			}
		}
		return a.o.Index > b.o.Index
	})
	if order == "" {
		order = ScaleInHighestIndex
	}
	out := make([]ScaleInVictim, 0, n)
	taken := make([]bool, len(cands))
	for range min(n, len(cands)) {
		// The first candidate not taken, or a later one of the same kind on a host that keeps
		// more members.
		best := -1
		for i, c := range cands {
			if taken[i] {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			if c.kind != cands[best].kind {
				break
			}
			if counts[HostOf(c.o.Host)] > counts[HostOf(cands[best].o.Host)] {
				best = i
			}
		}
		c := cands[best]
		// The host rule is given as the reason only when it is true: the pick's host keeps
		// more members than every other host with a candidate of the same kind.
		most := false
		for i, o := range cands {
			if taken[i] || o.kind != c.kind || HostOf(o.o.Host) == HostOf(c.o.Host) {
				continue
			}
			most = counts[HostOf(c.o.Host)] > counts[HostOf(o.o.Host)]
			if !most {
				break
			}
		}
		taken[best] = true
		counts[HostOf(c.o.Host)]--
		why := fmt.Sprintf("scale-in (%s)", order)
		switch c.kind {
		case 2:
			why = "scale-in (preserved, removed last)"
		case 0:
			why = fmt.Sprintf("scale-in (unhealthy: %s)", c.why)
		}
		if c.kind == 1 && most {
			why = fmt.Sprintf("scale-in (%s, host %s keeps the most members)", order, HostOf(c.o.Host))
		}
		out = append(out, ScaleInVictim{Index: c.o.Index, Reason: why})
	}
	return out
}

// scaleInWaits is the planned action's reason of a member the scale-in picked on a host that
// does not answer: it is removed once the host answers, and no other member in its place.
func scaleInWaits(host string) string {
	return fmt.Sprintf("scale-in waits for host %s, which cannot be reached", HostOf(host))
}
