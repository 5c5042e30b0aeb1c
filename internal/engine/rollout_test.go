package engine

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// waveView renders a plan's waves as "kind name,kind name | ...", for comparing whole plans.
func waveView(p GroupPlan) string {
	var waves []string
	for _, w := range p.Waves {
		var ops []string
		for _, op := range w.Ops {
			ops = append(ops, op.Kind.String()+" "+op.Name)
		}
		waves = append(waves, strings.Join(ops, ","))
	}
	return strings.Join(waves, " | ")
}

func withStatus(obs []Observed, status map[string]Status) []Observed {
	for i := range obs {
		if st, ok := status[obs[i].Name]; ok {
			obs[i].Status = st
		}
	}
	return obs
}

func TestPlanGroup_waves(t *testing.T) {
	t.Parallel()
	newImage := func(g *Group) { g.Template.BootDisk.SourceImage = "/images/new.qcow2" }
	cases := []struct {
		name    string
		size    int
		change  func(*Group)
		members []int
		status  map[string]Status
		want    string
	}{
		{"nothing to do", 2, nil, []int{1, 2}, nil, ""},
		{"scale-in removes the highest", 2, nil, []int{1, 2, 3, 4}, nil, "delete db-4,delete db-3"},
		{"scale-out fills the gap", 3, nil, []int{1, 3}, nil, "create db-2"},
		{"live changes run together", 3, func(g *Group) { g.Template.Metadata = map[string]string{"k": "v"} }, []int{1, 2, 3}, nil,
			"refresh db-1,refresh db-2,refresh db-3"},
		{"replace one at a time", 3, newImage, []int{1, 2, 3}, nil, "replace db-1 | replace db-2 | replace db-3"},
		{"a budget of 2", 4, func(g *Group) { newImage(g); g.Policy.MaxUnavailable = 2 }, []int{1, 2, 3, 4}, nil,
			"replace db-1,replace db-2 | replace db-3,replace db-4"},
		{"50% of 4", 4, func(g *Group) { newImage(g); g.Policy.MaxUnavailablePercent = 50 }, []int{1, 2, 3, 4}, nil,
			"replace db-1,replace db-2 | replace db-3,replace db-4"},
		{"25% of 3 rounds down to at least 1", 3, func(g *Group) { newImage(g); g.Policy.MaxUnavailablePercent = 25 }, []int{1, 2, 3}, nil,
			"replace db-1 | replace db-2 | replace db-3"},
		{"members already down go first and cost nothing more", 4, func(g *Group) { newImage(g); g.Policy.MaxUnavailable = 2 },
			[]int{1, 2, 3, 4}, map[string]Status{"db-3": StatusStopped, "db-4": StatusFailed},
			"replace db-3,replace db-4 | replace db-1,replace db-2"},
		{"a down member is started before the rollout", 3, func(g *Group) { g.Template.VCPU = 2 }, []int{1, 2, 3}, map[string]Status{"db-2": StatusPaused},
			"restart db-2 | restart db-1 | restart db-3"},
		{"power only", 2, nil, []int{1, 2}, map[string]Status{"db-2": StatusStopped}, "power db-2"},
		{"a missing member is created before the rollout", 3, newImage, []int{1, 3}, nil, "create db-2 | replace db-1 | replace db-3"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := group(c.size)
			built := base()
			if c.change != nil {
				c.change(&g)
			}
			p := PlanGroup(state(g), withStatus(observed(built, StatusRunning, c.members...), c.status), Env{})
			if len(p.Blocked) > 0 {
				t.Fatalf("blocked: %v", p.Blocked)
			}
			if got := waveView(p); got != c.want {
				t.Errorf("waves\n got %q\nwant %q", got, c.want)
			}
		})
	}
}

func TestPlanGroup_plannedActions(t *testing.T) {
	t.Parallel()
	g := group(3)
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	obs := withStatus(observed(base(), StatusRunning, 1, 2), map[string]Status{"db-2": StatusStopped})
	p := PlanGroup(state(g), obs, Env{})
	var got []string
	for _, m := range p.Final {
		got = append(got, m.Name+"="+m.Planned.String())
	}
	want := []string{"db-1=REPLACE: boot image changed", "db-2=REPLACE: boot image changed; then START", "db-3=CREATE"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("planned actions (-want +got):\n%s", d)
	}
}

func TestGroupPlan_unplanned(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1, 2, 3), Env{})
	cases := []struct {
		name  string
		shown map[string]Planned
		want  []string
	}{
		{"as planned", map[string]Planned{"db-1": {Kind: PlannedReplace, Why: "boot image changed"}, "db-2": {Kind: PlannedReplace, Why: "x"}, "db-3": {}},
			[]string{"db-3: DELETE, planned NONE"}},
		{"more disruptive than shown", map[string]Planned{"db-1": {Kind: PlannedRefresh, Why: "metadata"}, "db-2": {Kind: PlannedRestart, Why: "vcpu"}},
			[]string{"db-1: REPLACE: boot image changed, planned REFRESH: metadata", "db-2: REPLACE: boot image changed, planned RESTART: vcpu"}},
		{"members the plan did not show", map[string]Planned{}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if d := cmp.Diff(c.want, p.Unplanned(c.shown)); d != "" {
				t.Errorf("unplanned (-want +got):\n%s", d)
			}
		})
	}
}

func TestParseMaxUnavailable(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in             string
		fixed, percent int
		err            bool
	}{
		{"1", 1, 0, false}, {"12", 12, 0, false}, {"25%", 0, 25, false}, {"100%", 0, 100, false},
		{"0", 0, 0, true}, {"-1", 0, 0, true}, {"0%", 0, 0, true}, {"101%", 0, 0, true}, {"1.5", 0, 0, true},
		{"25 %", 0, 0, true}, {"%", 0, 0, true}, {"", 0, 0, true}, {"01", 0, 0, true}, {"two", 0, 0, true},
	}
	for _, c := range cases {
		fixed, percent, err := ParseMaxUnavailable(c.in)
		if (err != nil) != c.err || fixed != c.fixed || percent != c.percent {
			t.Errorf("ParseMaxUnavailable(%q) = %d, %d, %v", c.in, fixed, percent, err)
		}
	}
	budget := []struct {
		p    UpdatePolicy
		size int
		want int
	}{
		{UpdatePolicy{MaxUnavailable: 3}, 10, 3}, {UpdatePolicy{MaxUnavailable: 0}, 10, 1},
		{UpdatePolicy{MaxUnavailablePercent: 25}, 10, 2}, {UpdatePolicy{MaxUnavailablePercent: 25}, 3, 1},
		{UpdatePolicy{MaxUnavailablePercent: 100}, 7, 7}, {UpdatePolicy{MaxUnavailablePercent: 50}, 0, 1},
	}
	for _, c := range budget {
		if got := c.p.Budget(c.size); got != c.want {
			t.Errorf("%+v.Budget(%d) = %d, want %d", c.p, c.size, got, c.want)
		}
	}
}

func TestParseShutdownTimeout(t *testing.T) {
	t.Parallel()
	for in, ok := range map[string]bool{"60s": true, "0s": true, "2m30s": true, "-1s": false, "60": false, "": false} {
		if _, err := ParseShutdownTimeout(in); (err == nil) != ok {
			t.Errorf("ParseShutdownTimeout(%q): %v", in, err)
		}
	}
	if got := (Group{}).StopTimeout(); got != DefaultShutdownTimeout {
		t.Errorf("default stop timeout %v", got)
	}
}

// fates renders every volume operation of a plan as "name:fate".
func fates(p GroupPlan) string {
	var out []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				out = append(out, fmt.Sprintf("%s:%s", v.Volume, v.Fate))
			}
		}
	}
	return strings.Join(out, " ")
}

func TestPlan_volumeFates(t *testing.T) {
	t.Parallel()
	tp := tpl(nil, "data", "scratch")
	never := policy("data")
	onDelete := Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteOnPermanentDeletion}}}
	member := func(p Policy) []Observed {
		mi := built("db-1", tp, p, InstanceConfig{})
		return []Observed{{Name: "db-1", Index: 1, Status: StatusRunning, Instance: mi, Attached: mi.Current.Disks}}
	}
	st := func(size int, p *Policy) GroupState {
		g := group(size)
		g.Template = tp
		return GroupState{Group: g, Pool: "p", Policy: p}
	}
	released := st(0, nil)
	released.Released = &Released{Run: "r1", Policy: never}
	newImage := st(1, &never)
	newImage.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	cases := []struct {
		name string
		plan GroupPlan
		want string
	}{
		{"scale-in, NEVER", PlanGroup(st(0, &never), member(never), Env{}),
			"db-1-boot.qcow2:delete db-1-data.qcow2:release db-1-scratch.qcow2:delete db-1-boot.staging.qcow2:delete"},
		{"scale-in, ON_PERMANENT_INSTANCE_DELETION", PlanGroup(st(0, &onDelete), member(onDelete), Env{}),
			"db-1-boot.qcow2:delete db-1-data.qcow2:delete db-1-scratch.qcow2:delete db-1-boot.staging.qcow2:delete"},
		{"scale-in after the policy was released in this run", PlanGroup(released, member(Policy{}), Env{Run: "r1"}),
			"db-1-boot.qcow2:delete db-1-data.qcow2:release db-1-scratch.qcow2:delete db-1-boot.staging.qcow2:delete"},
		{"scale-in after the policy was released in an earlier run", PlanGroup(released, member(Policy{}), Env{Run: "r2"}),
			"db-1-boot.qcow2:delete db-1-data.qcow2:delete db-1-scratch.qcow2:delete db-1-boot.staging.qcow2:delete"},
		{"replace", PlanGroup(newImage, member(never), Env{}),
			"db-1-boot.qcow2:recreate db-1-data.qcow2:keep db-1-scratch.qcow2:recreate"},
		{"create", PlanGroup(st(1, &never), nil, Env{}),
			"db-1-boot.qcow2:recreate db-1-data.qcow2:keep db-1-scratch.qcow2:keep db-1-boot.staging.qcow2:delete"},
		{"destroy with orphans", PlanDestroy(func() GroupState {
			s := st(1, &never)
			s.Inventory = kept("db-1-boot.qcow2", "db-2-data.qcow2", "db-2-boot.qcow2", "db-2-scratch.qcow2", "db-3-boot.staging.qcow2")
			return s
		}(), member(never), map[string][]string{DefaultHost: {
			"db-1-boot.qcow2", "db-2-data.qcow2", "db-2-boot.qcow2", "db-2-scratch.qcow2", "db-3-boot.staging.qcow2", "db-2-other.qcow2", "web-1-boot.qcow2", "db-x-boot.qcow2",
		}}, Env{}),
			"db-1-boot.qcow2:delete db-1-data.qcow2:release db-1-scratch.qcow2:delete db-1-boot.staging.qcow2:delete " +
				"db-2-boot.qcow2:delete db-2-scratch.qcow2:delete db-3-boot.staging.qcow2:delete"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := fates(c.plan); got != c.want {
				t.Errorf("fates\n got %s\nwant %s", got, c.want)
			}
		})
	}
}

func TestPlanGroup_replaceStagesTheBootVolume(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Template.BootDisk.SourceImage = "/images/new.qcow2"
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1), Env{})
	op := p.Waves[0].Ops[0]
	if op.Kind != OpReplace || op.Staging != "db-1-boot.staging.qcow2" || !op.Mark || op.Power != StatusRunning {
		t.Fatalf("replace %+v", op)
	}
	for _, v := range op.Volumes {
		if v.DeviceName == BootDeviceName && (v.BackingImage != "/images/new.qcow2" || v.Fate != Recreate) {
			t.Fatalf("boot volume %+v", v)
		}
	}
}

func TestRelease_keepsTheMostProtectiveRule(t *testing.T) {
	t.Parallel()
	s := GroupState{Policy: &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}},
		Configs: map[string]ConfigEntry{"db-1": {Config: InstanceConfig{Disks: []ConfigDisk{{DeviceName: "logs", Source: "l.qcow2", DeleteRule: DeleteOnPermanentDeletion}}}}}}
	s.Release("r1")
	s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteOnPermanentDeletion}, {DeviceName: "more", DeleteRule: DeleteOnPermanentDeletion}}}
	s.Release("r1")
	want := &Released{Run: "r1",
		Policy:     Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}, {DeviceName: "more", DeleteRule: DeleteOnPermanentDeletion}}},
		Configs:    map[string]ConfigEntry{"db-1": {Config: InstanceConfig{Disks: []ConfigDisk{{DeviceName: "logs", Source: "l.qcow2", DeleteRule: DeleteOnPermanentDeletion}}}}},
		Unfinished: true}
	if d := cmp.Diff(want, s.Released); d != "" {
		t.Errorf("released (-want +got):\n%s", d)
	}
	s.FinishRelease("r1")
	if s.Released.Unfinished {
		t.Fatal("a finished release is still unfinished")
	}
	// A new run starts over; a finished release of an earlier run is let go.
	s.Policy = nil
	s.Release("r2")
	if d := cmp.Diff(&Released{Run: "r2", Policy: Policy{}, Configs: want.Configs, Unfinished: true}, s.Released); d != "" {
		t.Errorf("a new run starts over (-want +got):\n%s", d)
	}
	if len(s.UnfinishedReleases) != 0 {
		t.Errorf("a finished release was kept: %+v", s.UnfinishedReleases)
	}
	// An unfinished one is kept aside, as it was, for the group's destroy.
	r2 := *s.Released
	s.Release("r3")
	if d := cmp.Diff([]Released{r2}, s.UnfinishedReleases); d != "" {
		t.Errorf("the unfinished release of r2 (-want +got):\n%s", d)
	}
	s.Applied()
	if s.Released != nil || s.UnfinishedReleases != nil {
		t.Errorf("after the group's own apply: %+v, %+v", s.Released, s.UnfinishedReleases)
	}
}
