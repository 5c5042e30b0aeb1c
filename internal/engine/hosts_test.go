package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
)

// onHosts places observed members: hosts[i] is the host of the i-th member.
func onHosts(ms []Observed, hosts ...string) []Observed {
	for i := range ms {
		ms[i].Host = hosts[i]
	}
	return ms
}

// spread renders where every member of the plan ends up and what it creates and deletes, host by
// host: "default: db-1 db-4 +db-7 | h2: ...", "+" created, "-" deleted.
func spread(p GroupPlan) string {
	by := map[string][]string{}
	created := map[string]bool{}
	for _, m := range p.Create {
		created[m.Name] = true
	}
	for _, m := range p.Final {
		name := m.Name
		if created[name] {
			name = "+" + name
		}
		by[m.Host] = append(by[m.Host], name)
	}
	for _, name := range p.Delete {
		by[p.Placement[name]] = append(by[p.Placement[name]], "-"+name)
	}
	hosts := make([]string, 0, len(by))
	for h := range by {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var parts []string
	for _, h := range hosts {
		parts = append(parts, h+": "+strings.Join(by[h], " "))
	}
	return strings.Join(parts, " | ")
}

func TestPlanGroup_spreadOverHosts(t *testing.T) {
	t.Parallel()
	three := func(size int) GroupState {
		s := state(group(size))
		s.Group.Hosts = []string{"default", "h2", "h3"}
		return s
	}
	even := func(n int) []Observed {
		hosts := make([]string, n)
		for i := range hosts {
			hosts[i] = []string{"default", "h2", "h3"}[i%3]
		}
		return onHosts(observed(base(), StatusRunning, seq(n)...), hosts...)
	}
	tests := []struct {
		name string
		s    GroupState
		obs  []Observed
		want string
	}{
		{"six new members, two per host, in the list's order", three(6), nil,
			"default: +db-1 +db-4 | h2: +db-2 +db-5 | h3: +db-3 +db-6"},
		{"scale-out fills the emptiest host first", three(5), onHosts(observed(base(), StatusRunning, 1, 2, 3), "h2", "h2", "h3"),
			"default: +db-4 +db-5 | h2: db-1 db-2 | h3: db-3"},
		{"scale-in takes from the host that keeps the most", three(3), onHosts(observed(base(), StatusRunning, 1, 2, 3, 4, 5), "default", "default", "default", "h2", "h3"),
			"default: db-1 -db-3 -db-2 | h2: db-4 | h3: db-5"},
		{"scale-in from an even spread stays even", three(3), even(6),
			"default: db-1 -db-4 | h2: db-2 -db-5 | h3: db-3 -db-6"},
		{"a placed member comes back on its host, whatever the spread", func() GroupState {
			s := three(3)
			s.Placement = map[string]string{"db-1": "default", "db-2": "h3", "db-3": "h3"}
			return s
		}(), onHosts(observed(base(), StatusRunning, 1, 3), "default", "h3"),
			"default: db-1 | h3: +db-2 db-3"},
		{"a host left out of the list: its members move to the list, as new ones go", func() GroupState {
			s := three(4)
			s.Group.Hosts = []string{"h2"}
			return s
		}(), onHosts(observed(base(), StatusRunning, 1, 2, 3), "default", "h2", "h3"),
			"h2: db-1 db-2 db-3 +db-4"},
		{"no distribution policy: the default host", state(group(2)), nil, "default: +db-1 +db-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanGroup(tt.s, tt.obs, Env{})
			if got := spread(p); got != tt.want {
				t.Fatalf("spread\n got %s\nwant %s", got, tt.want)
			}
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					if op.Host != p.Placement[op.Name] {
						t.Errorf("%s %s runs on %q, placed on %q", op.Kind, op.Name, op.Host, p.Placement[op.Name])
					}
				}
			}
		})
	}
}

func seq(n int) []int {
	out := make([]int, n)
	for i := range out {
		out[i] = i + 1
	}
	return out
}

func TestPlanGroup_memberOnAnUnreachableHost(t *testing.T) {
	t.Parallel()
	s := state(group(3))
	s.Group.Hosts = []string{"default", "h2", "h3"}
	obs := onHosts(observed(base(), StatusRunning, 1, 2, 3), "default", "h2", "h3")
	obs[2] = Observed{Name: "db-3", Index: 3, Host: "h3", Unknown: true, Status: StatusUnknown}
	changed := s
	changed.Group.Template.Metadata = map[string]string{"role": "new"}
	replaced := s
	replaced.Group.Template.VCPU++
	tests := []struct {
		name    string
		s       GroupState
		steps   string // the members that change
		blocked string
	}{
		{"nothing to do: nothing is made up for it", s, "", ""},
		{"a hot change reaches the others only", changed, "db-1 db-2", ""},
		{"a rollout counts it as down: no budget left", replaced, "db-1 db-2",
			"db-1: needs RESTART (vcpu 1 -> 2), but max_unavailable (1) is used up by 1 member(s) that are down and that this plan does not bring back; " +
				"db-2: needs RESTART (vcpu 1 -> 2), but max_unavailable (1) is used up by 1 member(s) that are down and that this plan does not bring back"},
		{"a rollout with budget to spare passes it by", func() GroupState {
			x := replaced
			x.Group.Policy.MaxUnavailable = 2
			return x
		}(), "db-1 db-2", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanGroup(tt.s, obs, Env{})
			if len(p.Create) != 0 {
				t.Errorf("creates %v", p.Create)
			}
			var steps []string
			for _, st := range p.Steps {
				steps = append(steps, st.Name)
			}
			if got := strings.Join(steps, " "); got != tt.steps {
				t.Errorf("steps %q, want %q", got, tt.steps)
			}
			var blocked []string
			for _, b := range p.Blocked {
				blocked = append(blocked, b.String())
			}
			if got := strings.Join(blocked, "; "); got != tt.blocked {
				t.Errorf("blocked\n got %s\nwant %s", got, tt.blocked)
			}
			if tt.blocked != "" {
				return
			}
			m := p.Final[2]
			if m.Status != StatusUnknown || m.Host != "h3" || m.Planned.String() != `NONE: host "h3" cannot be reached` {
				t.Errorf("db-3 in the plan: %+v", m)
			}
		})
	}
}

func TestPlanDestroy_waitsForEveryHost(t *testing.T) {
	t.Parallel()
	s := state(group(2))
	// The group made the volumes no member holds: its inventory says so, host by host.
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeVolume, Host: "default", Name: "db-3-boot.qcow2"}, {Kind: MadeVolume, Host: "h2", Name: "db-4-boot.qcow2"}}}
	obs := onHosts(observed(base(), StatusRunning, 1, 2), "default", "h2")
	vols := map[string][]string{"default": {"db-1-boot.qcow2", "db-3-boot.qcow2"}, "h2": {"db-2-boot.qcow2", "db-4-boot.qcow2"}}
	p := PlanDestroy(s, obs, vols, Env{})
	var got []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				got = append(got, fmt.Sprintf("%s:%s", op.Host, v.Volume))
			}
		}
	}
	want := "default:db-1-boot.qcow2 default:db-1-data.qcow2 default:db-1-boot.staging.qcow2 " +
		"h2:db-2-boot.qcow2 h2:db-2-data.qcow2 h2:db-2-boot.staging.qcow2 default:db-3-boot.qcow2 h2:db-4-boot.qcow2"
	if strings.Join(got, " ") != want {
		t.Fatalf("volumes\n got %s\nwant %s", strings.Join(got, " "), want)
	}
	obs[1] = Observed{Name: "db-2", Index: 2, Host: "h2", Unknown: true, Status: StatusUnknown}
	p = PlanDestroy(s, obs, map[string][]string{"default": vols["default"]}, Env{})
	if len(p.Waves) != 0 || len(p.Blocked) != 1 || !strings.Contains(p.Blocked[0].String(), `host "h2" cannot be reached`) {
		t.Fatalf("with h2 unreachable: waves %v, blocked %v", p.Waves, p.Blocked)
	}
}

func TestPlanGroup_membersOfARemovedHostAreCreatedAgain(t *testing.T) {
	t.Parallel()
	s := state(group(3))
	s.Group.Hosts = []string{"default", "h2"}
	s.Placement = map[string]string{"db-1": "default", "db-2": "h2", "db-3": "h3"}
	obs := onHosts(observed(base(), StatusRunning, 1, 2), "default", "h2")
	// h3 still configured: db-3 is missing, and comes back on h3, where its disks are.
	p := PlanGroup(s, obs, Env{Hosts: []string{"default", "h2", "h3"}})
	if got := spread(p); got != "default: db-1 | h2: db-2 | h3: +db-3" {
		t.Fatalf("with h3 configured: %s", got)
	}
	// h3 removed from the provider: db-3 is made again on the group's hosts, and the plan says why.
	p = PlanGroup(s, obs, Env{Hosts: []string{"default", "h2"}})
	if got := spread(p); got != "default: db-1 +db-3 | h2: db-2" {
		t.Fatalf("with h3 removed: %s", got)
	}
	if got := p.Final[2].Planned.String(); got != `CREATE: host "h3" was removed from the provider, and the member with it` {
		t.Fatalf("planned %q", got)
	}
}

func TestPlanDestroy_stopsOnlyRunningMembersAndDeletesOnlyListedStagingVolumes(t *testing.T) {
	t.Parallel()
	s := state(group(2))
	obs := observed(base(), StatusRunning, 1, 2)
	obs[1].Status = StatusStopped
	vols := []string{"db-1-boot.qcow2", "db-2-boot.qcow2", "db-2-boot.staging.qcow2"}
	env := Env{Volumes: map[string]bool{}}
	for _, v := range vols {
		env.Volumes[v] = true
	}
	p := PlanDestroy(s, obs, map[string][]string{DefaultHost: vols}, env)
	var got []string
	for _, op := range p.Waves[0].Ops {
		var names []string
		for _, v := range op.Volumes {
			names = append(names, v.Volume)
		}
		got = append(got, fmt.Sprintf("%s power=%q %s", op.Name, op.Power, strings.Join(names, ",")))
	}
	want := []string{
		`db-1 power="STOPPED" db-1-boot.qcow2,db-1-data.qcow2`,
		`db-2 power="" db-2-boot.qcow2,db-2-data.qcow2,db-2-boot.staging.qcow2`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Fatalf("ops\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(want, "\n     "))
	}
}

// TestPlanGroup_placesOnlyOnHostsThatAnswer: new members go only to hosts that answered the
// observation; a member the group was creating on a host that does not answer is no member (not
// counted, not shown, its name free, its placement dropped), and a scale-in never deletes a real
// member in its place; a member that was made there stays UNKNOWN and untouched.
func TestPlanGroup_placesOnlyOnHostsThatAnswer(t *testing.T) {
	t.Parallel()
	three := func(size int, placement map[string]string, creating ...string) GroupState {
		s := state(group(size))
		s.Group.Hosts = []string{"default", "h2", "h3"}
		s.Placement, s.Placed, s.Creating = placement, true, creating
		return s
	}
	// members observes the real members on default and h2, and what the group placed on h3
	// (down) as the observation gives it (Unreachable).
	members := func(s GroupState, onDefault, onH2 []int) []Observed {
		obs := append(onHosts(observed(base(), StatusRunning, onDefault...), repeat("default", len(onDefault))...),
			onHosts(observed(base(), StatusRunning, onH2...), repeat("h2", len(onH2))...)...)
		down := func(h string) bool { return h == "h3" }
		seen := func(name string) bool {
			for _, o := range obs {
				if o.Name == name {
					return true
				}
			}
			return false
		}
		return append(obs, s.Unreachable(down, seen)...)
	}
	placed := func(names ...string) map[string]string {
		out := map[string]string{}
		for _, nh := range names {
			n, h, _ := strings.Cut(nh, "@")
			out[n] = h
		}
		return out
	}
	h3Down := Env{Down: []string{"h3"}}
	tests := []struct {
		name      string
		s         GroupState
		onDefault []int
		onH2      []int
		env       Env
		want      string // spread
		placement string // the record's placement once the plan ran, sorted
		blocked   string
	}{
		{"scale-out with h3 down: the new members go to the hosts that answer",
			three(6, placed("db-1@default", "db-2@h2", "db-3@h3")), []int{1}, []int{2}, h3Down,
			"default: db-1 +db-4 +db-6 | h2: db-2 +db-5 | h3: db-3",
			"db-1@default db-2@h2 db-3@h3 db-4@default db-5@h2 db-6@default", ""},
		{"the same with h3 up: the spread stays even",
			three(6, placed("db-1@default", "db-2@h2", "db-3@h3")), []int{1}, []int{2}, Env{},
			"default: db-1 +db-4 | h2: db-2 +db-5 | h3: db-3 +db-6", "", ""},
		{"a member never made on h3 is no member: not counted, its name is taken again where a host answers",
			three(6, placed("db-1@default", "db-2@h2", "db-3@h3", "db-4@default", "db-5@h2", "db-6@h3"), "db-6"), []int{1, 4}, []int{2, 5}, h3Down,
			"default: db-1 db-4 +db-6 | h2: db-2 db-5 | h3: db-3",
			"db-1@default db-2@h2 db-3@h3 db-4@default db-5@h2 db-6@default", ""},
		{"scale-in to 5 with a member never made on h3: nothing real is deleted, the entry is dropped",
			three(5, placed("db-1@default", "db-2@h2", "db-3@h3", "db-4@default", "db-5@h2", "db-6@h3"), "db-6"), []int{1, 4}, []int{2, 5}, h3Down,
			"default: db-1 db-4 | h2: db-2 db-5 | h3: db-3",
			"db-1@default db-2@h2 db-3@h3 db-4@default db-5@h2", ""},
		{"a member that was made on h3 stays UNKNOWN and counts: the scale-in's pick on h3 waits, no real member is taken in its place",
			three(5, placed("db-1@default", "db-2@h2", "db-3@h3", "db-4@default", "db-5@h2", "db-6@h3")), []int{1, 4}, []int{2, 5}, h3Down,
			"default: db-1 db-4 | h2: db-2 db-5 | h3: db-3 db-6",
			"db-1@default db-2@h2 db-3@h3 db-4@default db-5@h2 db-6@h3", ""},
		{"no host answers: the member is not planned, and the plan says why",
			func() GroupState {
				s := three(2, placed("db-1@h3"))
				s.Group.Hosts = []string{"h3"}
				return s
			}(), nil, nil, h3Down,
			"h3: db-1", "db-1@h3",
			"db-2: no host of the group answers to create it on (distribution_policy hosts h3; not answering: h3): it is created once one of them answers. Nothing was changed; lower target_size to plan without it"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := PlanGroup(tt.s, members(tt.s, tt.onDefault, tt.onH2), tt.env)
			if got := spread(p); got != tt.want {
				t.Errorf("spread\n got %s\nwant %s", got, tt.want)
			}
			var blocked []string
			for _, b := range p.Blocked {
				blocked = append(blocked, b.String())
			}
			if got := strings.Join(blocked, "; "); got != tt.blocked {
				t.Errorf("blocked\n got %s\nwant %s", got, tt.blocked)
			}
			for _, c := range p.Create {
				if slices.Contains(tt.env.Down, c.Host) {
					t.Errorf("%s is created on %s, which does not answer", c.Name, c.Host)
				}
			}
			if tt.placement == "" {
				return
			}
			var got []string
			for n, h := range p.FinalPlacement() {
				got = append(got, n+"@"+h)
			}
			sort.Strings(got)
			if strings.Join(got, " ") != tt.placement {
				t.Errorf("placement\n got %s\nwant %s", strings.Join(got, " "), tt.placement)
			}
		})
	}
}

func repeat(s string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = s
	}
	return out
}

func TestGroupState_Unreachable(t *testing.T) {
	t.Parallel()
	s := state(group(4))
	s.Placement = map[string]string{"db-1": "default", "db-2": "h3", "db-3": "h3", "db-4": "h3", "named": "h3"}
	s.Creating = []string{"db-3", "named"}
	tests := []struct {
		name string
		down []string
		seen []string
		want string
	}{
		{"nothing down", nil, nil, ""},
		{"h3 down: what was made there is UNKNOWN, what was being created is not there", []string{"h3"}, nil, "db-2 db-4"},
		{"a member a listing saw is not made up again", []string{"h3"}, []string{"db-4"}, "db-2"},
		{"the default host down", []string{"default"}, nil, "db-1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			obs := s.Unreachable(func(h string) bool { return slices.Contains(tt.down, h) }, func(n string) bool { return slices.Contains(tt.seen, n) })
			var got []string
			for _, o := range obs {
				if !o.Unknown || o.Status != StatusUnknown || o.Host != s.Placement[o.Name] {
					t.Errorf("%s: %+v", o.Name, o)
				}
				got = append(got, o.Name)
			}
			if strings.Join(got, " ") != tt.want {
				t.Errorf("got %q, want %q", strings.Join(got, " "), tt.want)
			}
		})
	}
}

func TestGroupPlan_StillCreating(t *testing.T) {
	t.Parallel()
	p := GroupPlan{Creating: []string{"db-4", "db-5", "db-6"}}
	if got := strings.Join(p.StillCreating([]string{"db-5"}), " "); got != "db-4 db-6" {
		t.Fatalf("got %q", got)
	}
	s := state(group(3))
	s.Group.Hosts = []string{"default", "h2"}
	p = PlanGroup(s, nil, Env{})
	if got := strings.Join(p.Creating, " "); got != "db-1 db-2 db-3" {
		t.Fatalf("a plan that creates db-1..3 lists as creating %q", got)
	}
}
