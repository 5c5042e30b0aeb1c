package reconcile

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// seenPlan is what a plan of the drain makes of the hosts: the moves it plans, the hosts it
// saw down, the members it could not read, and the UUIDs it holds.
type seenPlan struct {
	Moves   []string
	Down    []string
	Unknown []string
	UUIDs   map[string]string
}

// A plan made under WithHostsSeen sees the hosts as the refresh saw them, whatever they answer
// now: the plan the user approves and the apply's final plan, made in two processes, plan the
// same moves (issue 43, the wire chaos's trials 31 and 51). Every host of the group answers here
// (h2's UUID is "uuid-h2", the default host's "uuid-default"), and db-1 and db-3 run on h2, which
// is drained.
func TestObserve_hostsSeenDecideTheMoves(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		seen *HostsSeen
		want seenPlan
	}{
		"hosts read as they answer": {
			want: seenPlan{Moves: []string{"db-1 h2 -> default (live)", "db-3 h2 -> default (live)"},
				UUIDs: map[string]string{"default": "uuid-default", "h2": "uuid-h2"}},
		},
		"h2 seen down: its members wait, though it answers now": {
			seen: &HostsSeen{Down: map[string]string{"h2": "host h2 did not answer within 5s"}, UUIDs: map[string]string{"default": "uuid-default"}, Read: []string{"default", "h2"}, UUIDsRead: true},
			want: seenPlan{Down: []string{"h2"}, Unknown: []string{"db-1", "db-3"},
				UUIDs: map[string]string{"default": "uuid-default"}},
		},
		"h2's UUID not read then: the moves are cold, though it answers now": {
			seen: &HostsSeen{UUIDs: map[string]string{"default": "uuid-default"}, Read: []string{"default", "h2"}, UUIDsRead: true},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (cold)", "db-3 h2 -> default (cold)"},
				UUIDs: map[string]string{"default": "uuid-default"}},
		},
		"the UUIDs seen, not those read now": {
			seen: &HostsSeen{UUIDs: map[string]string{"default": "seen-default", "h2": "seen-h2"}, Read: []string{"default", "h2"}, UUIDsRead: true},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (live)", "db-3 h2 -> default (live)"},
				UUIDs: map[string]string{"default": "seen-default", "h2": "seen-h2"}},
		},
		"the default host added since the refresh (it read h2 only): read now, its UUID too": {
			seen: &HostsSeen{UUIDs: map[string]string{"h2": "seen-h2"}, Read: []string{"h2"}, UUIDsRead: true},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (live)", "db-3 h2 -> default (live)"},
				UUIDs: map[string]string{"default": "uuid-default", "h2": "seen-h2"}},
		},
		"a host seen down but not read by the refresh (a stale marker): read now": {
			seen: &HostsSeen{Down: map[string]string{"h2": "old"}, UUIDs: map[string]string{"default": "uuid-default"}, Read: []string{"default"}, UUIDsRead: true},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (live)", "db-3 h2 -> default (live)"},
				UUIDs: map[string]string{"default": "uuid-default", "h2": "uuid-h2"}},
		},
		"the refresh read the group on one host (no UUIDs): every UUID read now": {
			seen: &HostsSeen{Read: []string{"h2"}},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (live)", "db-3 h2 -> default (live)"},
				UUIDs: map[string]string{"default": "uuid-default", "h2": "uuid-h2"}},
		},
		"one UUID seen for both hosts: libvirt would refuse, so cold": {
			seen: &HostsSeen{UUIDs: map[string]string{"default": "same", "h2": "same"}, Read: []string{"default", "h2"}, UUIDsRead: true},
			want: seenPlan{Moves: []string{"db-1 h2 -> default (cold)", "db-3 h2 -> default (cold)"},
				UUIDs: map[string]string{"default": "same", "h2": "same"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r, fakes, s := movedGroup(t)
			s = drain(t, r, s, true)
			ctx := context.Background()
			if tc.seen != nil {
				ctx = WithHostsSeen(ctx, *tc.seen)
			}
			listed := fakes["h2"].Calls["list"]
			p, o, err := r.Preview(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			var got seenPlan
			for _, mv := range p.Moves {
				got.Moves = append(got.Moves, mv.Name+" "+mv.Move.String())
			}
			for _, h := range SeenOf(o).DownHosts() {
				got.Down = append(got.Down, h)
				var seenDown *SeenDownError
				if !errors.As(o.Down[h], &seenDown) {
					t.Errorf("host %s is down for %v, want a SeenDownError", h, o.Down[h])
				}
				if fakes[h].Calls["list"] != listed {
					t.Errorf("host %s, seen down, was listed", h)
				}
			}
			for _, ob := range o.Observed {
				if ob.Unknown {
					got.Unknown = append(got.Unknown, ob.Name)
				}
			}
			got.UUIDs = o.HostUUIDs
			if d := cmp.Diff(tc.want, got); d != "" {
				t.Errorf("plan (-want +got):\n%s", d)
			}
		})
	}
}

// SeenOf keeps what an observation found of its hosts: why each down host was down, and the
// UUIDs read; a group on one host has no UUIDs.
func TestSeenOf(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		o    Observation
		want HostsSeen
	}{
		"every host answered": {
			o:    Observation{HostUUIDs: map[string]string{"default": "a", "h2": "b"}, Read: []string{"default", "h2"}},
			want: HostsSeen{UUIDs: map[string]string{"default": "a", "h2": "b"}, Read: []string{"default", "h2"}, UUIDsRead: true},
		},
		"h2 down": {
			o:    Observation{Down: map[string]error{"h2": errors.New("no answer")}, HostUUIDs: map[string]string{"default": "a"}, Read: []string{"default", "h2"}},
			want: HostsSeen{Down: map[string]string{"h2": "no answer"}, UUIDs: map[string]string{"default": "a"}, Read: []string{"default", "h2"}, UUIDsRead: true},
		},
		"one host": {o: Observation{}, want: HostsSeen{}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if d := cmp.Diff(tc.want, SeenOf(tc.o)); d != "" {
				t.Errorf("SeenOf (-want +got):\n%s", d)
			}
		})
	}
}
