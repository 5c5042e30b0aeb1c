package engine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestPickScaleIn(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
	g := group(2)
	g.ScaleInOrder = ScaleInOldest
	obs := observed(base(), StatusRunning, 1, 2, 3)
	obs[0].Instance.Created, obs[1].Instance.Created, obs[2].Instance.Created = 10, 30, 20
	p := PlanGroup(state(g), obs, Env{})
	if strings.Join(p.Delete, ",") != "db-1" || p.DeleteReasons["db-1"] != "scale-in (OLDEST)" || len(p.Final) != 2 || p.Final[0].Name != "db-2" {
		t.Fatalf("delete %v %v, final %+v", p.Delete, p.DeleteReasons, p.Final)
	}
}

// TestPlanGroup_scaleInWithAHostDown is issue 42's fourth report: the scale-in picks as if every
// host answered; its pick on a host that does not answer waits for it (shown, held, never
// deleted), and no other member is deleted in its place.
func TestPlanGroup_scaleInWithAHostDown(t *testing.T) {
	t.Parallel()
	unknown := func(name string, index int, host string) Observed {
		return Observed{Name: name, Index: index, Host: host, Unknown: true, Status: StatusUnknown}
	}
	two := func(size int, order string) GroupState {
		s := state(group(size))
		s.Group.Hosts = []string{"default", "h3"}
		s.Group.ScaleInOrder = order
		return s
	}
	type result struct {
		Delete  []string
		Reasons map[string]string
		Held    []string
		Final   []string // name: planned action
		Idle    bool
	}
	tests := []struct {
		name string
		s    GroupState
		obs  []Observed
		want result
	}{
		{
			name: "the pick is on the host that does not answer: it waits, and the member that answers stays",
			s:    two(1, ""),
			obs:  []Observed{onHosts(observed(base(), StatusRunning, 1), "default")[0], unknown("db-2", 2, "h3")},
			want: result{
				Reasons: map[string]string{},
				Held:    []string{"db-2: scale-in waits for host h3, which cannot be reached; it was picked by scale-in (HIGHEST_INDEX), and no other member is removed in its place"},
				Final:   []string{"db-1: NONE", "db-2: NONE: scale-in waits for host h3, which cannot be reached"},
			},
		},
		{
			name: "the same with both hosts up: the same pick, deleted, with a true reason",
			s:    two(1, ""),
			obs:  onHosts(observed(base(), StatusRunning, 1, 2), "default", "h3"),
			want: result{
				Delete:  []string{"db-2"},
				Reasons: map[string]string{"db-2": "scale-in (HIGHEST_INDEX)"},
				Final:   []string{"db-1: NONE"},
			},
		},
		{
			name: "the pick answers: it is deleted, the member on the down host is left as it is",
			s:    two(1, ScaleInOldest),
			obs: func() []Observed {
				o := []Observed{onHosts(observed(base(), StatusRunning, 1), "default")[0], unknown("db-2", 2, "h3")}
				o[0].Instance.Created = 5
				return o
			}(),
			// The unknown member's creation time is not known: it counts as the oldest.
			want: result{
				Reasons: map[string]string{},
				Held:    []string{"db-2: scale-in waits for host h3, which cannot be reached; it was picked by scale-in (OLDEST), and no other member is removed in its place"},
				Final:   []string{"db-1: NONE", "db-2: NONE: scale-in waits for host h3, which cannot be reached"},
			},
		},
		{
			name: "two picks, one on each host: the one that answers is deleted, the other waits",
			s:    two(1, ""),
			obs:  []Observed{onHosts(observed(base(), StatusRunning, 1, 2), "default", "default")[0], onHosts(observed(base(), StatusRunning, 1, 2), "default", "default")[1], unknown("db-3", 3, "h3")},
			want: result{
				Delete:  []string{"db-2"},
				Reasons: map[string]string{"db-2": "scale-in (HIGHEST_INDEX, host default keeps the most members)"},
				Held:    []string{"db-3: scale-in waits for host h3, which cannot be reached; it was picked by scale-in (HIGHEST_INDEX), and no other member is removed in its place"},
				Final:   []string{"db-1: NONE", "db-3: NONE: scale-in waits for host h3, which cannot be reached"},
			},
		},
		{
			name: "an unhealthy member that answers goes first, as with every host up",
			s:    two(1, ""),
			obs: func() []Observed {
				o := []Observed{onHosts(observed(base(), StatusRunning, 1), "default")[0], unknown("db-2", 2, "h3")}
				o[0].Status, o[0].StateReason = StatusStopped, StateReasonDestroyed
				return o
			}(),
			want: result{
				Delete:  []string{"db-1"},
				Reasons: map[string]string{"db-1": "scale-in (unhealthy: shut off (destroyed))"},
				Final:   []string{"db-2: NONE: host \"h3\" cannot be reached"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanGroup(tt.s, tt.obs, Env{Down: []string{"h3"}})
			got := result{Delete: p.Delete, Reasons: p.DeleteReasons, Idle: p.Idle()}
			for _, w := range p.Held {
				got.Held = append(got.Held, w.String())
			}
			for _, m := range p.Final {
				got.Final = append(got.Final, m.Name+": "+m.Planned.String())
			}
			want := tt.want
			want.Idle = len(want.Delete) == 0 && len(want.Held) == 0
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					if op.Kind == OpDelete && slices.ContainsFunc(p.Held, func(h HostWait) bool { return h.Name == op.Name }) {
						t.Errorf("%s is deleted and held", op.Name)
					}
				}
			}
			for _, w := range p.Held {
				if p.Placement[w.Name] != w.Host {
					t.Errorf("the record places %s on %q, want it kept on %s", w.Name, p.Placement[w.Name], w.Host)
				}
			}
			if len(p.Blocked) > 0 {
				t.Errorf("blocked: %v", p.Blocked)
			}
		})
	}
}

// TestPickScaleIn_hostReason: "host X keeps the most members" is said only when it is so.
func TestPickScaleIn_hostReason(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		hosts []string
		want  []string
	}{
		{"even hosts: the order alone", []string{"default", "h3"}, []string{"scale-in (HIGHEST_INDEX)"}},
		{"one host keeps more", []string{"default", "default", "h3"}, []string{"scale-in (HIGHEST_INDEX, host default keeps the most members)"}},
		{"one host only", []string{"default", "default"}, []string{"scale-in (HIGHEST_INDEX)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms := onHosts(observed(base(), StatusRunning, seq(len(tt.hosts))...), tt.hosts...)
			var got []string
			for _, v := range PickScaleIn(ms, 1, "", func(o Observed) MemberHealth { return Group{Running: true}.HealthOf(o, time.Time{}) }, nil) {
				got = append(got, v.Reason)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("reasons (-want +got):\n%s", diff)
			}
		})
	}
}
