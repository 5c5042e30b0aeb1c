package engine

import "testing"

// TestGroupState_Placing: what a run does with the placement it keeps, by what the record has and
// whether it is there.
func TestGroupState_Placing(t *testing.T) {
	t.Parallel()
	here := map[string]string{"db-1": DefaultHost}
	twoHosts := Group{Name: "db", Base: "db", Hosts: []string{"h1", "h2"}}
	cases := map[string]struct {
		s         GroupState
		exists    bool
		placement map[string]string
		creating  []string
		want      PlacementWrite
	}{
		"the record says it already": {
			s: GroupState{Placed: true, Placement: here}, exists: true, placement: here, want: PlacementKept,
		},
		"the record says it, with no member being created": {
			s: GroupState{Placed: true, Placement: here, Creating: []string{"db-1"}}, exists: true, placement: here, want: PlacementWritten,
		},
		"a member moves in": {
			s: GroupState{Placed: true}, exists: true, placement: here, want: PlacementWritten,
		},
		"never placed: written even when it is the same": {
			s: GroupState{Placement: here}, exists: true, placement: here, want: PlacementWritten,
		},
		"no record, one host: not needed": {
			s: GroupState{Group: Group{Name: "db", Base: "db"}}, placement: here, want: PlacementNotNeeded,
		},
		"no record, several hosts, nothing to place: not needed": {
			s: GroupState{Group: twoHosts}, want: PlacementNotNeeded,
		},
		"no record, several hosts, members to place: lost": {
			s: GroupState{Group: twoHosts}, placement: map[string]string{"db-1": "h1"}, want: PlacementLost,
		},
		"the record is gone after it kept a placement: lost": {
			s: GroupState{Group: Group{Name: "db", Base: "db"}, Placed: true, Placement: here}, placement: map[string]string{}, want: PlacementLost,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := c.s.Placing(c.exists, c.placement, c.creating, c.s.Inventory); got != c.want {
				t.Errorf("Placing = %d, want %d", got, c.want)
			}
		})
	}
}
