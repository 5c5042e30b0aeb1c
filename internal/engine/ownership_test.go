package engine

import (
	"strings"
	"testing"
)

// TestPlanGroup_createsOnlyWhereNothingElseHolds: a member is created only under a name nothing
// else holds, and never over a volume the group did not make; identity reuse of the group's own
// scheme, and its own leftovers, are still allowed.
func TestPlanGroup_createsOnlyWhereNothingElseHolds(t *testing.T) {
	t.Parallel()
	placed := func(names ...string) GroupState {
		s := state(group(1))
		s.Placed, s.Placement = true, map[string]string{}
		for _, n := range names {
			s.Placement[n] = DefaultHost
		}
		return s
	}
	withConfig := func(s GroupState, name string) GroupState {
		s.Configs = map[string]ConfigEntry{name: {}}
		return s
	}
	preserving := func(s GroupState) GroupState {
		s.Group.Template.Disks = []Disk{{DeviceName: "data", SizeMiB: 8}}
		s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data"}}}
		return s
	}
	cases := map[string]struct {
		s       GroupState
		env     Env
		blocked string // "" when every member is created
	}{
		"a free name":                {s: placed(), env: Env{Volumes: map[string]bool{}}},
		"a name another group holds": {s: withConfig(placed(), "a-1"), env: Env{Volumes: map[string]bool{}, Taken: map[string]string{"a-1": `group "a"`}}, blocked: `a-1: the name belongs to group "a"`},
		"own scheme name taken":      {s: placed(), env: Env{Taken: map[string]string{"db-1": `group "x"`}}, blocked: `db-1: the name belongs to group "x"`},
		"a stateless volume the group never made": {s: placed(), env: Env{Volumes: map[string]bool{"db-1-boot.qcow2": true}},
			blocked: "volume db-1-boot.qcow2 is already in the pool on host default and the group did not make it"},
		"its own leftover, in its inventory": {s: func() GroupState {
			s := placed("db-1")
			s.Inventory = kept("db-1-boot.qcow2")
			return s
		}(), env: Env{Volumes: map[string]bool{"db-1-boot.qcow2": true}}},
		// A record from before the inventory (version 6 or earlier) proves a volume the group's
		// only through a member domain that uses it: a placement alone is no proof.
		"a leftover a record of an earlier release placed, with no domain": {s: placed("db-1"), env: Env{Volumes: map[string]bool{"db-1-boot.qcow2": true}},
			blocked: "volume db-1-boot.qcow2 is already in the pool on host default and the group did not make it"},
		// A creation only clears a staged boot volume away: one the group did not make is left
		// (and named), and does not keep the member from being made.
		"a staged boot volume the group never made": {s: func() GroupState {
			s := placed()
			s.Inventory = Inventory{Kept: true}
			return s
		}(), env: Env{Volumes: map[string]bool{"db-1-boot.staging.qcow2": true}}},
		"a record from before placements": {s: state(group(1)), env: Env{Volumes: map[string]bool{"db-1-boot.qcow2": true}},
			blocked: "volume db-1-boot.qcow2 is already in the pool on host default and the group did not make it"},
		"a preserved disk of its own scheme is reused": {s: preserving(placed()), env: Env{Volumes: map[string]bool{"db-1-data.qcow2": true}}},
		"a preserved disk under a name outside the scheme is not": {s: withConfig(preserving(placed("db-1")), "solo"), env: Env{Volumes: map[string]bool{"solo-data.qcow2": true}},
			blocked: "volume solo-data.qcow2 is already in the pool on host default and the group did not make it"},
		"a seed the group never made": {s: func() GroupState {
			s := placed()
			s.Group.Template.CloudInit = &CloudInit{UserData: "#cloud-config"}
			return s
		}(), env: Env{Volumes: map[string]bool{"db-1-cidata.iso": true}}, blocked: "volume db-1-cidata.iso is already in the pool"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			p := PlanGroup(tc.s, nil, tc.env)
			var got []string
			for _, b := range p.Blocked {
				got = append(got, b.String())
			}
			if tc.blocked == "" {
				if len(got) > 0 {
					t.Fatalf("blocked: %v", got)
				}
				return
			}
			if len(got) != 1 || !strings.Contains(got[0], tc.blocked) {
				t.Fatalf("blocked: %v, want one containing %q", got, tc.blocked)
			}
			for _, c := range p.Create {
				if strings.HasPrefix(tc.blocked, c.Name+":") || strings.Contains(tc.blocked, "name "+c.Name) {
					t.Fatalf("%s is created: %+v", c.Name, p.Create)
				}
			}
		})
	}
}
