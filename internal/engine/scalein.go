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
// counts as the oldest). Ties go to the highest index. Preserved members always go last.
func PickScaleIn(members []Observed, n int, order string, running bool, preserved map[string]bool) []ScaleInVictim {
	type cand struct {
		o       Observed
		health  string
		why     string
		healthy bool
	}
	cands := make([]cand, len(members))
	for i, o := range members {
		h, why := Health(o, running)
		cands[i] = cand{o: o, health: h, why: why, healthy: h == HealthHealthy}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		a, b := cands[i], cands[j]
		if pa, pb := preserved[a.o.Name], preserved[b.o.Name]; pa != pb {
			return pb
		}
		if a.healthy != b.healthy {
			return !a.healthy
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
	for _, c := range cands[:min(n, len(cands))] {
		why := fmt.Sprintf("scale-in (%s)", order)
		switch {
		case preserved[c.o.Name]:
			why = "scale-in (preserved, removed last)"
		case !c.healthy:
			why = fmt.Sprintf("scale-in (unhealthy: %s)", c.why)
		}
		out = append(out, ScaleInVictim{Index: c.o.Index, Reason: why})
	}
	return out
}
