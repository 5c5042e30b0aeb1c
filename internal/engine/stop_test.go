package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// downTasks renders the tasks of op that take its member down, early ones first, with the status
// a power-off names as the reason it does not wait: "shutdown [otherwise power-off]", "stop-wait",
// "power-off (PAUSED)".
func downTasks(op Operation) []string {
	var out []string
	for _, t := range append(append([]Task(nil), op.Early...), op.Tasks...) {
		switch t.Kind {
		case TaskShutdown:
			s := "shutdown"
			for _, o := range t.Otherwise {
				s += " [otherwise " + o.Kind.String() + "]"
			}
			out = append(out, s)
		case TaskStopWait:
			out = append(out, "stop-wait")
		case TaskPowerOff:
			s := "power-off"
			if t.Halted != "" {
				s += " (" + string(t.Halted) + ")"
			}
			out = append(out, s)
		default:
			// Tasks that do not take the member down are not rendered.
		}
	}
	return out
}

// TestStopping: a member observed paused, suspended or crashed is powered off at once wherever a
// plan takes it down gracefully otherwise (replace, restart, running = false, scale-in, destroy,
// a cold move), and the planned action says so; a running member is asked to shut down, with a
// power-off to run instead should it be halted by the time the request is made.
func TestStopping(t *testing.T) {
	t.Parallel()
	noSeed := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}}
	graceful := []string{"shutdown [otherwise power-off]", "stop-wait"}
	halted := func(s Status) []string { return []string{"power-off (" + string(s) + ")"} }
	type plan func(status Status) GroupPlan
	replace := func(status Status) GroupPlan {
		g := group(1)
		g.Template.BootDisk.SourceImage = "/images/new.qcow2"
		return PlanGroup(state(g), []Observed{onHost(func(o *Observed) { o.Status = status })}, noSeed)
	}
	restart := func(status Status) GroupPlan {
		g := group(1)
		g.Template.VCPU = 2
		return PlanGroup(state(g), []Observed{onHost(func(o *Observed) { o.Status = status })}, noSeed)
	}
	stop := func(status Status) GroupPlan {
		g := group(1)
		g.Running = false
		return PlanGroup(state(g), []Observed{onHost(func(o *Observed) { o.Status = status })}, noSeed)
	}
	scaleIn := func(status Status) GroupPlan {
		return PlanGroup(state(group(0)), []Observed{onHost(func(o *Observed) { o.Status = status })}, noSeed)
	}
	destroy := func(status Status) GroupPlan {
		return PlanDestroy(state(group(1)), []Observed{onHost(func(o *Observed) { o.Status = status })}, nil, noSeed)
	}
	coldMove := func(status Status) GroupPlan {
		s := state(group(1))
		s.Group.Hosts, s.Group.Drain = []string{"h2", "default"}, []string{"h2"}
		return PlanGroup(s, onHosts(observed(base(), status, 1), "h2"), Env{})
	}
	cases := []struct {
		name   string
		plan   plan
		status Status
		want   []string
		// planned is the member's planned action, or for a deletion what the plan says of it
		// (DeletedWhy).
		planned string
	}{
		{"replace of a running member", replace, StatusRunning, graceful, "REPLACE: boot image changed"},
		{"replace of a paused member", replace, StatusPaused, halted(StatusPaused), "REPLACE: boot image changed; paused: powered off without waiting; then START"},
		{"replace of a suspended member", replace, StatusSuspended, halted(StatusSuspended), "REPLACE: boot image changed; suspended (pmsuspended): powered off without waiting; then START"},
		{"replace of a crashed member", replace, StatusFailed, halted(StatusFailed), "REPLACE: boot image changed; crashed: powered off without waiting; then START"},
		{"restart of a running member", restart, StatusRunning, graceful, "RESTART: vcpu 1 -> 2"},
		{"restart of a paused member", restart, StatusPaused, halted(StatusPaused), "RESTART: vcpu 1 -> 2; paused: powered off without waiting; then START"},
		{"running = false, running member", stop, StatusRunning, graceful, "STOP"},
		{"running = false, paused member", stop, StatusPaused, halted(StatusPaused), "STOP: paused: powered off without waiting"},
		{"scale-in of a running member", scaleIn, StatusRunning, graceful, "scale-in (HIGHEST_INDEX)"},
		{"scale-in of a paused member", scaleIn, StatusPaused, halted(StatusPaused), "scale-in (HIGHEST_INDEX); paused: powered off without waiting"},
		{"destroy of a running member", destroy, StatusRunning, graceful, ""},
		{"destroy of a crashed member", destroy, StatusFailed, halted(StatusFailed), "crashed: powered off without waiting"},
		{"cold move of a paused member", coldMove, StatusPaused, halted(StatusPaused), "MOVE: h2 -> default (cold); paused: powered off without waiting; then START"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.plan(c.status)
			if len(p.Blocked) > 0 {
				t.Fatalf("blocked: %v", p.Blocked)
			}
			var ops []Operation
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					if op.Name == "db-1" {
						ops = append(ops, op)
					}
				}
			}
			if len(ops) != 1 {
				t.Fatalf("want one operation of db-1, got %d", len(ops))
			}
			if diff := cmp.Diff(c.want, downTasks(ops[0])); diff != "" {
				t.Errorf("tasks that take the member down (-want +got):\n%s", diff)
			}
			got := p.DeletedWhy("db-1")
			if ops[0].Kind != OpDelete {
				got = p.Final[0].Planned.String()
			}
			if got != c.planned {
				t.Errorf("planned %q, want %q", got, c.planned)
			}
		})
	}
}

// TestStopping_noTimeout: shutdown_timeout "0s" powers every member off at once; only a halted
// one's power-off says why it does not wait, and the plan's warning reads each method from the
// tasks (StopsBy).
func TestStopping_noTimeout(t *testing.T) {
	t.Parallel()
	noSeed := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true, "db-2-boot.qcow2": true, "db-2-data.qcow2": true}}
	plan := func(timeout string, statuses ...Status) GroupPlan {
		g := group(len(statuses))
		g.ShutdownTimeout = timeout
		g.Template.BootDisk.SourceImage = "/images/new.qcow2"
		g.Policy.MaxUnavailable = len(statuses)
		var obs []Observed
		for i, s := range statuses {
			o := observed(base(), s, i+1)[0]
			o.Attached = o.Instance.Current.Disks
			obs = append(obs, o)
		}
		return PlanGroup(state(g), obs, noSeed)
	}
	cases := []struct {
		name    string
		plan    GroupPlan
		tasks   map[string][]string
		stopsBy StopMethod
	}{
		{"0s, running", plan("0s", StatusRunning), map[string][]string{"db-1": {"power-off"}}, StopPowerOff},
		{"0s, paused", plan("0s", StatusPaused), map[string][]string{"db-1": {"power-off (PAUSED)"}}, StopHalted},
		{"60s, paused", plan("60s", StatusPaused), map[string][]string{"db-1": {"power-off (PAUSED)"}}, StopHalted},
		{"60s, one paused, one running", plan("60s", StatusPaused, StatusRunning), map[string][]string{
			"db-1": {"power-off (PAUSED)"}, "db-2": {"shutdown [otherwise power-off]", "stop-wait"},
		}, StopGraceful},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := map[string][]string{}
			for _, w := range c.plan.Waves {
				for _, op := range w.Ops {
					got[op.Name] = downTasks(op)
				}
			}
			if diff := cmp.Diff(c.tasks, got); diff != "" {
				t.Errorf("tasks that take the members down (-want +got):\n%s", diff)
			}
			if got := c.plan.StopsBy(); got != c.stopsBy {
				t.Errorf("StopsBy() = %d, want %d", got, c.stopsBy)
			}
		})
	}
}

// TestHearsShutdown names the statuses whose members are asked to shut down.
func TestHearsShutdown(t *testing.T) {
	t.Parallel()
	got := map[Status]bool{}
	for _, s := range []Status{"", StatusRunning, StatusStopped, StatusPaused, StatusSuspended, StatusFailed, StatusMissing, StatusUnknown} {
		got[s] = s.HearsShutdown()
	}
	want := map[Status]bool{"": true, StatusRunning: true, StatusStopped: true, StatusPaused: false, StatusSuspended: false, StatusFailed: false, StatusMissing: true, StatusUnknown: true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("HearsShutdown (-want +got):\n%s", diff)
	}
}

// TestDestroyedMembers_takedown: a destroy plan tells how each member is taken down as its tasks
// do it: a running one is asked to shut down, a paused, suspended or crashed one is powered off at
// once, a stopped one is only undefined, and with shutdown_timeout "0s" every running one is
// powered off at once.
func TestDestroyedMembers_takedown(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		status          Status
		shutdownTimeout string
		want            Destroyed
	}{
		"running":                  {StatusRunning, "", Destroyed{Name: "db-1", Takedown: TakedownShutdown}},
		"paused":                   {StatusPaused, "", Destroyed{Name: "db-1", Takedown: TakedownPowerOff, Halted: StatusPaused}},
		"suspended":                {StatusSuspended, "", Destroyed{Name: "db-1", Takedown: TakedownPowerOff, Halted: StatusSuspended}},
		"crashed":                  {StatusFailed, "", Destroyed{Name: "db-1", Takedown: TakedownPowerOff, Halted: StatusFailed}},
		"stopped":                  {StatusStopped, "", Destroyed{Name: "db-1", Takedown: TakedownNone}},
		"running, timeout 0s":      {StatusRunning, "0s", Destroyed{Name: "db-1", Takedown: TakedownPowerOff}},
		"paused, timeout 0s":       {StatusPaused, "0s", Destroyed{Name: "db-1", Takedown: TakedownPowerOff, Halted: StatusPaused}},
		"stopped, timeout 0s":      {StatusStopped, "0s", Destroyed{Name: "db-1", Takedown: TakedownNone}},
		"running, timeout 2m":      {StatusRunning, "2m", Destroyed{Name: "db-1", Takedown: TakedownShutdown}},
		"not observed (zero) runs": {"", "", Destroyed{Name: "db-1", Takedown: TakedownShutdown}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := group(1)
			g.ShutdownTimeout = c.shutdownTimeout
			o := Observed{Name: "db-1", Index: 1, Status: c.status, UUID: "uuid-1", Instance: built("db-1", g.Template, Policy{}, InstanceConfig{})}
			p := PlanDestroy(state(g), []Observed{o}, nil, Env{})
			if d := cmp.Diff([]Destroyed{c.want}, p.DestroyedMembers([]Observed{o})); d != "" {
				t.Errorf("destroyed members (-want +got):\n%s", d)
			}
		})
	}
}
