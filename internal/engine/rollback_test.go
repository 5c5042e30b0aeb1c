package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// rollbackCase is a group of running members on image a, with its data disk preserved (NEVER),
// changed by a new template and failed after the members of started had their operations start.
type rollbackCase struct {
	name string
	// change makes the new group from the old one.
	change func(g *Group)
	size   int
	// started are the members whose operations started, by name.
	started []string
	// now changes what the observation after the failure shows of each member; nil: a member
	// whose operation started shows it done, the others as they were. A now that returns nil
	// shows every member as it was before the rollout.
	now  func(forward GroupPlan, obs []Observed) []Observed
	want rollbackSummary
}

// rollbackSummary is what a rollback plan does, as a test reads it.
type rollbackSummary struct {
	Waves     [][]string // "name kind"
	Left      []string
	Unreached []string
}

func summarize(rp RollbackPlan) rollbackSummary {
	var s rollbackSummary
	for _, w := range rp.Plan.Waves {
		var names []string
		for _, op := range w.Ops {
			names = append(names, op.Name+" "+op.Kind.String())
		}
		s.Waves = append(s.Waves, names)
	}
	s.Left, s.Unreached = rp.Left, rp.Unreached
	return s
}

func rollbackGroup(size int) GroupState {
	g := group(size)
	g.Template.BootDisk.SourceImage = "/images/a.qcow2"
	g.Policy.OnFailure = OnFailureRollback
	g.HealthCheck = &HealthCheck{Probe: Probe{Kind: ProbeExec, Command: []string{"/bin/tiny-service", "status"}}}
	s := state(g)
	s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}}
	return s
}

// runningMembers are the group's members as an apply observes them, built from its template.
func runningMembers(s GroupState, n int) []Observed {
	var out []Observed
	for i := 1; i <= n; i++ {
		name := InstanceName("db", i)
		mi := NewInstancePlan(name, s.Group.Template, *s.Policy, InstanceConfig{}).Applied(s.Group.Template)
		desc := mi.Current.Description
		out = append(out, Observed{Name: name, Index: i, Status: StatusRunning, Instance: mi, Attached: slices.Clone(mi.Current.Disks),
			UUID: fmt.Sprintf("uuid-%d", i), VCPU: mi.Current.VCPU, MemoryMiB: mi.Current.MemoryMiB, Description: &desc})
	}
	return out
}

// afterForward is the members as the forward plan leaves them once the operations of started
// ran to their end: on the new template, running.
func afterForward(forward GroupPlan, t Template, obs []Observed, started []string) []Observed {
	out := slices.Clone(obs)
	for _, w := range forward.Waves {
		for _, op := range w.Ops {
			if !slices.Contains(started, op.Name) {
				continue
			}
			switch op.Kind {
			case OpCreate:
				mi := op.New.Plan.Applied(t)
				out = append(out, Observed{Name: op.Name, Index: op.Index, Status: StatusRunning, Instance: mi, Attached: mi.Current.Disks})
			case OpRestart, OpReplace:
				for i := range out {
					if out[i].Name == op.Name {
						out[i].Instance = op.Step.Recorded()
						out[i].Attached = slices.Clone(op.Step.Plan.Desired.Disks)
						out[i].UUID += "-new"
					}
				}
			default:
			}
		}
	}
	return out
}

func TestPlanRollback(t *testing.T) {
	t.Parallel()
	image := func(g *Group) { g.Template.BootDisk.SourceImage = "/images/b.qcow2" }
	cases := []rollbackCase{
		{
			name: "a replacement failed in the second wave: back in reverse order, one per wave", change: image, size: 4,
			started: []string{"db-1", "db-2"},
			want:    rollbackSummary{Waves: [][]string{{"db-2 replace"}, {"db-1 replace"}}},
		},
		{
			name: "the first member failed: only it goes back", change: image, size: 4,
			started: []string{"db-1"},
			want:    rollbackSummary{Waves: [][]string{{"db-1 replace"}}},
		},
		{
			name: "max_unavailable 2: two per wave", size: 4,
			change:  func(g *Group) { image(g); g.Policy.MaxUnavailable = 2 },
			started: []string{"db-1", "db-2", "db-3"},
			want:    rollbackSummary{Waves: [][]string{{"db-3 replace", "db-1 replace"}, {"db-2 replace"}}},
		},
		{
			name: "a restart goes back by a restart", size: 2,
			change:  func(g *Group) { g.Template.VCPU = 2 },
			started: []string{"db-1"},
			want:    rollbackSummary{Waves: [][]string{{"db-1 restart"}}},
		},
		{
			name: "members created by the apply are left", size: 3,
			change:  func(g *Group) { image(g); g.TargetSize = 4 },
			started: []string{"db-4", "db-1"},
			want:    rollbackSummary{Waves: [][]string{{"db-1 replace"}}, Left: []string{"db-4"}},
		},
		{
			name: "with STOP nothing goes back", size: 4,
			change:  func(g *Group) { image(g); g.Policy.OnFailure = OnFailureStop },
			started: []string{"db-1", "db-2"},
			want:    rollbackSummary{},
		},
		{
			name: "a member whose domain is gone is made again", change: image, size: 2,
			started: []string{"db-1"},
			now: func(_ GroupPlan, obs []Observed) []Observed {
				return slices.DeleteFunc(slices.Clone(obs), func(o Observed) bool { return o.Name == "db-1" })
			},
			want: rollbackSummary{Waves: [][]string{{"db-1 create"}}},
		},
		{
			name: "a member whose replacement stopped half-way, marked in flight", change: image, size: 2,
			started: []string{"db-1"},
			now: func(forward GroupPlan, obs []Observed) []Observed {
				out := slices.Clone(obs)
				target := forward.Waves[0].Ops[0].Step.Plan.Desired
				out[0].Instance.InFlight, out[0].Instance.InFlightAction = &target, ActionReplace
				out[0].Status = StatusStopped
				return out
			},
			want: rollbackSummary{Waves: [][]string{{"db-1 replace"}}},
		},
		{
			name: "a member whose operation failed before its marker is left as it is", change: image, size: 2,
			started: []string{"db-1"},
			now:     func(GroupPlan, []Observed) []Observed { return nil },
			want:    rollbackSummary{},
		},
		{
			name: "a member whose host does not answer cannot be put back", change: image, size: 2,
			started: []string{"db-1"},
			now: func(_ GroupPlan, obs []Observed) []Observed {
				out := slices.Clone(obs)
				out[0] = Observed{Name: "db-1", Index: 1, Unknown: true}
				return out
			},
			want: rollbackSummary{Unreached: []string{"db-1"}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old := rollbackGroup(c.size)
			before := runningMembers(old, c.size)
			s := old
			c.change(&s.Group)
			s.SetGroup(s.Group)
			forward := PlanGroup(s, before, Env{})
			now := afterForward(forward, s.Group.Template, before, c.started)
			if c.now != nil {
				now = c.now(forward, now)
			}
			if now == nil {
				now = before
			}
			rp := PlanRollback(s, forward, c.started, now, Env{})
			if diff := cmp.Diff(c.want, summarize(rp)); diff != "" {
				t.Fatalf("rollback (-want +got):\n%s", diff)
			}
			checkRollback(t, old, before, rp)
			// A rollback is never rolled back.
			if again := PlanRollback(s, rp.Plan, c.started, now, Env{}); len(again.Plan.Waves)+len(again.Members)+len(again.Left) != 0 {
				t.Errorf("the rollback of a rollback plans %+v", summarize(again))
			}
		})
	}
}

// checkRollback checks every operation of a rollback: it is marked as one, goes back to the
// member's previous state and template (image a), keeps the preserved data disk, and ends with a
// wait for ready.
func checkRollback(t *testing.T, old GroupState, before []Observed, rp RollbackPlan) {
	t.Helper()
	prev := map[string]ManagedInstance{}
	for _, o := range before {
		prev[o.Name] = o.Instance
	}
	oldRev := old.Group.Template.Revision()
	for _, m := range rp.Members {
		if m.Revision != oldRev {
			t.Errorf("%s goes back to revision %s, want %s", m.Name, m.Revision, oldRev)
		}
	}
	for _, w := range rp.Plan.Waves {
		for _, op := range w.Ops {
			if !op.Rollback {
				t.Errorf("%s: not marked as a rollback", op.Name)
			}
			desired, rec := op.Step.Plan.Desired, op.Step.Recorded()
			if op.Kind == OpCreate {
				desired, rec = op.New.Plan.Desired, op.New.Plan.Applied(old.Group.Template)
			}
			if desired.Hash() != prev[op.Name].Current.Hash() {
				t.Errorf("%s: goes to %+v, want its previous state %+v", op.Name, desired, prev[op.Name].Current)
			}
			if rec.TemplateRevision != oldRev || rec.Template.BootDisk.SourceImage != "/images/a.qcow2" {
				t.Errorf("%s: recorded on template %s (%s), want %s", op.Name, rec.TemplateRevision, rec.Template.BootDisk.SourceImage, oldRev)
			}
			tasks := allTasks(op)
			for _, task := range tasks {
				if task.Kind == TaskDeleteVolume && task.Volume.Volume == VolumeName(op.Name, "data") {
					t.Errorf("%s: deletes its preserved data volume", op.Name)
				}
				if (task.Kind == TaskStage || task.Kind == TaskCreateVolume) && task.Volume.DeviceName == BootDeviceName && task.Volume.BackingImage != "/images/a.qcow2" {
					t.Errorf("%s: boot volume %s backs onto %q, want the previous image", op.Name, task.Volume.Volume, task.Volume.BackingImage)
				}
				if task.Kind == TaskDefine && task.Record.TemplateRevision != oldRev {
					t.Errorf("%s: defined with a record of revision %s", op.Name, task.Record.TemplateRevision)
				}
			}
			if last := tasks[len(tasks)-1]; last.Kind != TaskWaitReady {
				t.Errorf("%s: ends with %s, want a wait for ready", op.Name, last.Kind)
			}
		}
	}
}

// FuzzRollback checks the rollback of random rollouts (FuzzStepOrder's scenarios) stopped after
// random operations started, some finished and some marked in flight:
//   - only members whose restart or replace started go back, each at most once, to the record
//     the rollout planned from, and every operation is marked as a rollback;
//   - the operations keep FuzzStepOrder's invariants: prepared before the member stops,
//     preserved volumes never deleted, a waited-for start last;
//   - no wave takes down more members than the budget;
//   - a rollback is never rolled back.
func FuzzRollback(f *testing.F) {
	addSeeds(f)
	f.Add([]byte{0xff, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 1, 0, 1, 1, 1, 1, 2, 1, 0x43, 2, 3, 0, 1, 4})
	f.Add([]byte{0x33, 5, 5, 1, 2, 1, 1, 0, 0, 2, 2, 2, 3, 1, 0, 0, 2, 3, 0x41})
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := newStepScenario(data)
		s := sc.changed
		s.Group.Policy.OnFailure = OnFailureRollback
		forward := sc.plans["change"]
		var started []string
		prev := map[string]Operation{}
		now := slices.Clone(sc.observed)
		k := 0
		for _, w := range forward.Waves {
			for _, op := range w.Ops {
				k++
				pick := byte(k)
				if len(data) > 0 {
					pick = data[k%len(data)]
				}
				if pick%3 == 0 {
					continue
				}
				started = append(started, op.Name)
				if op.Kind != OpRestart && op.Kind != OpReplace {
					continue
				}
				prev[op.Name] = op
				for i := range now {
					if now[i].Name != op.Name {
						continue
					}
					if pick%3 == 1 {
						now[i].Instance = op.Step.Recorded()
						now[i].Attached = slices.Clone(op.Step.Plan.Desired.Disks)
					} else {
						target := op.Step.Plan.Desired
						now[i].Instance.InFlight, now[i].Instance.InFlightAction = &target, op.Step.Action
					}
				}
			}
		}
		rp := PlanRollback(s, forward, started, now, Env{})
		seen := map[string]bool{}
		budget := s.Group.Policy.Budget(s.Group.TargetSize)
		running := s.Group.Running && s.Group.Readiness().Waits()
		for _, w := range rp.Plan.Waves {
			if len(w.Ops) > budget {
				t.Fatalf("a rollback wave of %d members, budget %d", len(w.Ops), budget)
			}
			for _, op := range w.Ops {
				fwd, ok := prev[op.Name]
				if !ok || seen[op.Name] || !op.Rollback {
					t.Fatalf("rollback of %s (started: %v, twice: %v, marked: %v)", op.Name, ok, seen[op.Name], op.Rollback)
				}
				seen[op.Name] = true
				desired := op.Step.Plan.Desired
				if op.Kind == OpCreate {
					desired = op.New.Plan.Desired
				}
				if desired.Hash() != fwd.Step.Current.Current.Hash() {
					t.Fatalf("%s goes back to %+v, not to its record %+v", op.Name, desired, fwd.Step.Current.Current)
				}
				tasks := allTasks(op)
				checkPreparedBeforeStop(t, "rollback", op, tasks)
				states := append(slices.Clone(sc.states[op.Name]), fwd.Step.Plan.Desired, fwd.Step.Current.Current)
				checkPreservedVolumes(t, "rollback", op, tasks, states)
				checkWaitReady(t, "rollback", op, running)
			}
		}
		if again := PlanRollback(s, rp.Plan, started, now, Env{}); len(again.Plan.Waves) != 0 {
			t.Fatalf("a rollback of the rollback: %+v", summarize(again))
		}
	})
}
