package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// tasksOf renders an operation's tasks as "kind object" for a readable comparison; early tasks
// are prefixed "early".
func tasksOf(op Operation) []string {
	var out []string
	render := func(prefix string, ts []Task) {
		for _, t := range ts {
			s := prefix + t.Kind.String()
			switch {
			case t.Volume.Volume != "":
				s += " " + t.Volume.Volume
			case t.Device != "":
				s += " " + t.Device
			case t.Disk.DeviceName != "":
				s += " " + t.Disk.DeviceName
			}
			out = append(out, s)
			for _, o := range t.Otherwise {
				out = append(out, "  otherwise "+o.Kind.String()+" "+o.Volume.Volume)
			}
		}
	}
	render("early ", op.Early)
	render("", op.Tasks)
	return out
}

// TestTasks lists the tasks of each kind of operation in the order they run: what is prepared
// before a member stops, what goes after, and a deletion's early shutdown request.
func TestTasks(t *testing.T) {
	t.Parallel()
	noSeed := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}}
	cases := []struct {
		name    string
		plan    func() GroupPlan
		want    []string
		wantAll int // operations in the plan
	}{
		{
			name: "create where the pool has nothing",
			plan: func() GroupPlan { return PlanGroup(state(group(1)), nil, Env{Volumes: map[string]bool{}}) },
			want: []string{
				"fresh-volume db-1-boot.qcow2", "  otherwise name-free ", "  otherwise refuse db-1-boot.qcow2", "  otherwise create-volume db-1-boot.qcow2",
				"create-volume db-1-data.qcow2",
				"define", "start",
			},
		},
		{
			name: "create where the pool was not listed",
			plan: func() GroupPlan { return PlanGroup(state(group(1)), nil, Env{}) },
			want: []string{
				"name-free", "delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2",
				"create-volume db-1-data.qcow2", "delete-volume db-1-boot.staging.qcow2",
				"define", "start",
			},
		},
		{
			name: "destroy of a running member",
			plan: func() GroupPlan {
				return PlanDestroy(state(group(1)), []Observed{onHost(nil)}, nil, noSeed)
			},
			want: []string{"early shutdown", "  otherwise power-off ", "stop-wait", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
		},
		{
			name: "destroy of a stopped member",
			plan: func() GroupPlan {
				return PlanDestroy(state(group(1)), []Observed{onHost(func(o *Observed) { o.Status = StatusStopped })}, nil, noSeed)
			},
			want: []string{"undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
		},
		{
			name: "destroy with no shutdown timeout",
			plan: func() GroupPlan {
				g := group(1)
				g.ShutdownTimeout = "0s"
				return PlanDestroy(state(g), []Observed{onHost(nil)}, nil, noSeed)
			},
			want: []string{"power-off", "undefine", "delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2"},
		},
		{
			name: "scale-in with a seed",
			plan: func() GroupPlan { return PlanGroup(state(group(0)), []Observed{onHost(nil)}, Env{}) },
			want: []string{
				"early shutdown", "  otherwise power-off ", "stop-wait", "undefine", "delete-volume db-1-cidata.iso",
				"delete-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "delete-volume db-1-boot.staging.qcow2",
			},
		},
		{
			name: "replace",
			plan: func() GroupPlan {
				g := group(1)
				g.Template.BootDisk.SourceImage = "/images/new.qcow2"
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{
				"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "define-next",
				"shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-volume db-1-boot.staging.qcow2", "define", "start",
			},
		},
		{
			name: "restart",
			plan: func() GroupPlan {
				g := group(1)
				g.Template.VCPU = 2
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{"mark", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start"},
		},
		{
			name: "restart with a health check: the member is waited for until ready",
			plan: func() GroupPlan {
				g := group(1)
				g.Template.VCPU = 2
				g.HealthCheck = &HealthCheck{Probe: Probe{Kind: ProbeGuestAgent}}
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{"mark", "define-next", "shutdown", "  otherwise power-off ", "stop-wait", "record", "start", "wait-ready"},
		},
		{
			name: "replace with min_ready: the member is waited for until ready",
			plan: func() GroupPlan {
				g := group(1)
				g.Template.BootDisk.SourceImage = "/images/new.qcow2"
				g.Policy.MinReady = time.Minute
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{
				"mark", "delete-volume db-1-boot.staging.qcow2", "stage db-1-boot.staging.qcow2", "define-next",
				"shutdown", "  otherwise power-off ", "stop-wait", "undefine",
				"delete-volume db-1-boot.qcow2", "create-volume db-1-boot.qcow2", "delete-volume db-1-data.qcow2", "create-volume db-1-data.qcow2",
				"delete-volume db-1-boot.staging.qcow2", "define", "start", "wait-ready",
			},
		},
		{
			name: "live metadata change",
			plan: func() GroupPlan {
				g := group(1)
				g.Template.Metadata = map[string]string{"role": "web"}
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{"record"},
		},
		{
			name: "start a stopped member",
			plan: func() GroupPlan {
				return PlanGroup(state(group(1)), []Observed{onHost(func(o *Observed) { o.Status = StatusStopped })}, noSeed)
			},
			want: []string{"autostart", "start"},
		},
		{
			name: "stop a running member",
			plan: func() GroupPlan {
				g := group(1)
				g.Running = false
				return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
			},
			want: []string{"autostart", "shutdown", "  otherwise power-off ", "stop-wait"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p := c.plan()
			if len(p.Waves) == 0 || len(p.Waves[0].Ops) != 1 {
				t.Fatalf("want one operation first, got %d waves", len(p.Waves))
			}
			if diff := cmp.Diff(c.want, tasksOf(p.Waves[0].Ops[0])); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTasks_records checks the records the tasks write: the in-flight marker names the target,
// a replacement's new domain is stamped as created now and keeps or resets its heal count, and
// a restart ends with the step's Recorded.
func TestTasks_records(t *testing.T) {
	t.Parallel()
	obs := []Observed{onHost(nil)}
	obs[0].Instance.Created, obs[0].Instance.Heals, obs[0].Instance.LastHeal = 100, 2, 200
	find := func(op Operation, k TaskKind) Task {
		for _, t := range op.Tasks {
			if t.Kind == k {
				return t
			}
		}
		return Task{Kind: -1}
	}
	image := group(1)
	image.Template.BootDisk.SourceImage = "/images/new.qcow2"
	op := PlanGroup(state(image), obs, Env{}).Waves[0].Ops[0]
	mark := find(op, TaskMark)
	if mark.Record.InFlight == nil || mark.Record.InFlight.Hash() != op.Step.Plan.Desired.Hash() || mark.Record.InFlightAction != ActionReplace {
		t.Errorf("the marker does not name the target: %+v", mark.Record.InFlight)
	}
	def := find(op, TaskDefine)
	want := op.Step.Plan.Applied(image.Template)
	if diff := cmp.Diff(want, def.Record); diff != "" {
		t.Errorf("replaced record (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(Stamp{Created: true}, def.Stamp); diff != "" {
		t.Errorf("stamp (-want +got):\n%s", diff)
	}
	if def.UUID != "" || !def.Autostart {
		t.Errorf("the new domain keeps UUID %q, autostart %v", def.UUID, def.Autostart)
	}
	next := find(op, TaskDefineNext)
	if next.UUID != op.Step.UUID || next.Record.InFlight == nil {
		t.Errorf("the new definition is not stored over the old one with its marker: %+v", next)
	}
	cpu := group(1)
	cpu.Template.VCPU = 2
	op = PlanGroup(state(cpu), obs, Env{}).Waves[0].Ops[0]
	if diff := cmp.Diff(op.Step.Recorded(), find(op, TaskRecord).Record); diff != "" {
		t.Errorf("restart record (-want +got):\n%s", diff)
	}
	if wait := find(op, TaskStopWait); wait.Timeout != DefaultShutdownTimeout {
		t.Errorf("stop wait %s, want %s", wait.Timeout, DefaultShutdownTimeout)
	}
}

// TestTaskKind_String names every kind once: a kind added without a name shows as a number.
func TestTaskKind_String(t *testing.T) {
	t.Parallel()
	seen := map[string]TaskKind{}
	for k := TaskMark; k <= TaskDeleteSnapshot; k++ {
		name := k.String()
		if prev, dup := seen[name]; dup {
			t.Errorf("kinds %d and %d are both named %q", prev, k, name)
		}
		seen[name] = k
	}
	if got, want := (TaskDeleteSnapshot + 1).String(), "task kind 40"; got != want {
		t.Errorf("an unnamed kind is %q, want %q", got, want)
	}
}
