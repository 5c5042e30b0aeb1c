package engine

import (
	"strings"
	"testing"
	"time"
)

func TestPickScaleIn(t *testing.T) {
	// Members 1..4: created at 400, 100, 300, 200 (member 2 is the oldest, 1 the newest).
	members := func(change func(ms []Observed)) []Observed {
		ms := observed(base(), StatusRunning, 1, 2, 3, 4)
		for i, c := range []int64{400, 100, 300, 200} {
			ms[i].Instance.Created = c
		}
		if change != nil {
			change(ms)
		}
		return ms
	}
	tests := []struct {
		name   string
		ms     []Observed
		n      int
		order  string
		want   string // indices picked, in order
		reason string // the first pick's reason
	}{
		{"highest index by default", members(nil), 2, "", "4,3", "scale-in (HIGHEST_INDEX)"},
		{"highest index", members(nil), 1, ScaleInHighestIndex, "4", "scale-in (HIGHEST_INDEX)"},
		{"oldest", members(nil), 2, ScaleInOldest, "2,4", "scale-in (OLDEST)"},
		{"newest", members(nil), 2, ScaleInNewest, "1,3", "scale-in (NEWEST)"},
		{"unhealthy first, whatever the order", members(func(ms []Observed) { ms[0].Status, ms[0].StateReason = StatusStopped, StateReasonDestroyed }),
			2, ScaleInOldest, "1,2", "scale-in (unhealthy: shut off (destroyed))"},
		{"unknown creation counts as oldest", members(func(ms []Observed) { ms[2].Instance.Created = 0 }), 1, ScaleInOldest, "3", "scale-in (OLDEST)"},
		{"same creation time: highest index", members(func(ms []Observed) {
			for i := range ms {
				ms[i].Instance.Created = 7
			}
		}), 2, ScaleInNewest, "4,3", "scale-in (NEWEST)"},
		{"a stopped member is healthy when the group is stopped", members(func(ms []Observed) {
			for i := range ms {
				ms[i].Status = StatusStopped
			}
		}), 1, "", "4", "scale-in (HIGHEST_INDEX)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			running := !strings.HasPrefix(tt.name, "a stopped member")
			got := PickScaleIn(tt.ms, tt.n, tt.order, func(o Observed) MemberHealth { return Group{Running: running}.HealthOf(o, time.Time{}) }, nil)
			var idx []string
			for _, v := range got {
				idx = append(idx, InstanceName("", v.Index)[1:])
			}
			if strings.Join(idx, ",") != tt.want || got[0].Reason != tt.reason {
				t.Fatalf("picked %v (%q), want %s (%q)", idx, got[0].Reason, tt.want, tt.reason)
			}
		})
	}
}

func TestPlanGroup_scaleInFollowsTheOrder(t *testing.T) {
	g := group(2)
	g.ScaleInOrder = ScaleInOldest
	obs := observed(base(), StatusRunning, 1, 2, 3)
	obs[0].Instance.Created, obs[1].Instance.Created, obs[2].Instance.Created = 10, 30, 20
	p := PlanGroup(state(g), obs, Env{})
	if strings.Join(p.Delete, ",") != "db-1" || p.DeleteReasons["db-1"] != "scale-in (OLDEST)" || len(p.Final) != 2 || p.Final[0].Name != "db-2" {
		t.Fatalf("delete %v %v, final %+v", p.Delete, p.DeleteReasons, p.Final)
	}
}
