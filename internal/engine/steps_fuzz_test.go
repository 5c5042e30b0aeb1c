package engine

import (
	"fmt"
	"testing"
	"time"
)

// stepScenario is a random group and a random change to it, from fuzz bytes: members built
// with one policy and config (scenario), planned under another, with random power states, a
// budget, and a template, size or power change, or a destroy.
type stepScenario struct {
	s        GroupState
	observed []Observed
	plans    map[string]GroupPlan
	// states are what preserves each member's volumes: its record and its desired state now.
	states map[string][]DesiredInstance
	// budget is the changed group's max_unavailable, in members.
	budget int
	// running is whether the changed group wants its members running and waits for them to be
	// ready once started (a health check or a min_ready).
	running bool
	// changed is the group the "change" plan is made for.
	changed GroupState
}

func newStepScenario(data []byte) stepScenario {
	half := len(data) / 2
	tp, before, beforeConfig := scenario(data[:half])
	_, now, nowConfig := scenario(data[half:])
	next := func() byte {
		if len(data) == 0 {
			return 0
		}
		b := data[len(data)-1]
		data = data[:len(data)-1]
		return b
	}
	n := int(next()%5) + 1
	g := Group{Name: "i", Base: "i", TargetSize: n, Running: true, Template: tp, Policy: DefaultUpdatePolicy()}
	g.Policy.MaxUnavailable = int(next()%3) + 1
	sc := stepScenario{states: map[string][]DesiredInstance{}}
	for i := 1; i <= n; i++ {
		name := InstanceName("i", i)
		var c InstanceConfig
		if i == 1 {
			c = beforeConfig
		}
		mi := NewInstancePlan(name, tp, before, c).Applied(tp)
		status := []Status{StatusRunning, StatusStopped, StatusRunning, StatusPaused}[next()%4]
		desc := mi.Current.Description
		sc.observed = append(sc.observed, Observed{Name: name, Index: i, Status: status, Instance: mi, Attached: mi.Current.Disks,
			UUID: fmt.Sprintf("uuid-%d", i), VCPU: mi.Current.VCPU, MemoryMiB: mi.Current.MemoryMiB, Description: &desc})
		var cNow InstanceConfig
		if i == 1 {
			cNow = nowConfig
		}
		fromPolicy, fromConfig := Preserve(name, tp, now, cNow)
		sc.states[name] = []DesiredInstance{mi.Current, Desire(name, tp, fromPolicy, fromConfig)}
	}
	sc.s = GroupState{Group: g, Pool: "p", Policy: &now, Configs: map[string]ConfigEntry{"i-1": {Config: nowConfig}}}
	changed := sc.s
	changed.Group.Template = tp.Canonical()
	change := next()
	if change&1 != 0 {
		changed.Group.Template.BootDisk.SourceImage = "/images/other.qcow2"
	}
	if change&2 != 0 {
		changed.Group.Template.VCPU = 2
	}
	if change&4 != 0 {
		changed.Group.Template.Metadata = map[string]string{"k1": "changed"}
	}
	if change&8 != 0 {
		changed.Group.TargetSize = int(next()) % n
	}
	if change&16 != 0 {
		changed.Group.Running = false
	}
	if change&32 != 0 {
		changed.Group.ShutdownTimeout = "0s"
	}
	if change&64 != 0 {
		changed.Group.HealthCheck = &HealthCheck{Probe: Probe{Kind: ProbeGuestAgent}}
	}
	if change&128 != 0 {
		changed.Group.Policy.MinReady = time.Duration(next()) * time.Second
	}
	if a := next(); a%3 == 0 {
		// One member abandoned with the change (and a name past the members, which is not one).
		changed.Group.Abandon = []string{InstanceName("i", int(a/3)%n+1), InstanceName("i", n+1)}
	}
	if a := next(); a%2 == 1 {
		// Stable addresses: the changed template reserves, or pins one member, and some members
		// hold an entry in the network already (made by an earlier apply, or left by one killed).
		changed.Group.Template.NICs = []NIC{{Network: "net", Type: "network", Address: []string{AddressReserved, ""}[a/2%2]}}
		if a&4 != 0 {
			changed.Configs = map[string]ConfigEntry{"i-1": {Config: InstanceConfig{Disks: nowConfig.Disks, Metadata: nowConfig.Metadata,
				NetworkIPs: []NetworkIP{{Interface: "nic0", Address: "10.0.0.5"}}}}}
		}
		for i := range sc.observed {
			if a>>(3+i)&1 != 0 {
				sc.observed[i].Reserved = map[int]string{0: fmt.Sprintf("10.0.0.%d", 10+i)}
				sc.observed[i].Instance.Current.NICs = []NIC{{Network: "net", Type: "network", Address: AddressReserved}}
			}
		}
	}
	if a := next(); a%2 == 1 {
		// Snapshots with the rollout (update_policy.snapshot), of every preserved disk or of
		// the data disk only.
		changed.Group.Policy.Snapshot = &SnapshotPolicy{Retention: time.Hour}
		if a&2 != 0 {
			changed.Group.Policy.Snapshot.Disks = []string{"data"}
		}
	}
	sc.budget = changed.Group.Policy.Budget(changed.Group.TargetSize)
	sc.running = changed.Group.Running && changed.Group.Readiness().Waits()
	sc.changed = changed
	var volumes []string
	for _, o := range sc.observed {
		for _, d := range knownVolumes(o) {
			volumes = append(volumes, d.Source)
		}
	}
	sc.plans = map[string]GroupPlan{
		"change":  PlanGroup(changed, sc.observed, Env{}),
		"destroy": PlanDestroy(changed, sc.observed, map[string][]string{DefaultHost: volumes}, Env{}),
		"remove":  PlanRemove(changed, sc.observed, "i-1", Env{}),
	}
	return sc
}

// allTasks are an operation's tasks in the order they can run: early ones first, and the tasks
// a fresh volume runs instead in place.
func allTasks(op Operation) []Task {
	var out []Task
	var add func(ts []Task)
	add = func(ts []Task) {
		for _, t := range ts {
			out = append(out, t)
			add(t.Otherwise)
		}
	}
	add(op.Early)
	add(op.Tasks)
	return out
}

// FuzzStepOrder checks the task lists the engine emits for random groups and changes:
//   - a member is never taken down (shutdown, power off, undefine) before its replacement's or
//     restart's volumes are made, its new boot volume staged and its new definition stored;
//   - a volume that the member's record or its desired state preserves is deleted only by a
//     permanent deletion when every state that preserves it says ON_PERMANENT_INSTANCE_DELETION;
//   - no wave of a rollout takes down more running members than the budget (deletions and the
//     power changes asked for are not the rollout's);
//   - every wait for a shutdown follows its request, and a deletion's request is an early task,
//     so that the waits of a deletion overlap;
//   - every start of a member (a create, restart, replace, or a power change), while the group
//     wants its members running and has a health check or a min_ready, is followed by a wait for
//     it to be ready, a wait follows only such a start, and nothing follows that wait in the
//     operation: a member that never becomes ready has its change recorded;
//   - an address reservation or release names the member's own MAC; a creation, restart or
//     replacement makes every reservation of its desired state before the member's domain is
//     defined or started, a restart or replacement before it is taken down; no operation
//     releases what its desired state reserves; a deletion releases what the member's record
//     holds, before its definition goes;
//   - an abandoned member's only operation is its abandonment, which removes its record and
//     nothing else (no power change, no definition, no volume), no member is created under an
//     abandoned name, and a destroy deletes no volume of an abandoned name.
func FuzzStepOrder(f *testing.F) {
	addSeeds(f)
	f.Add([]byte{0xff, 1, 2, 3, 4, 0, 1, 0, 1, 2, 3, 1, 0, 1, 1, 1, 1, 2, 1, 0x0f, 2, 3, 0, 1, 4})
	f.Add([]byte{0x33, 5, 5, 1, 2, 1, 1, 0, 0, 2, 2, 2, 3, 1, 0, 0, 2, 3})
	f.Add([]byte{0x0f, 1, 1, 1, 1, 3, 4, 1, 0, 1, 0, 0, 2, 1, 2, 1, 0, 0x09, 1, 2, 0, 3, 4})
	f.Fuzz(func(t *testing.T, data []byte) {
		sc := newStepScenario(data)
		byName := map[string]Observed{}
		for _, o := range sc.observed {
			byName[o.Name] = o
		}
		for what, p := range sc.plans {
			for k, w := range p.Waves {
				down := 0
				for _, op := range w.Ops {
					tasks := allTasks(op)
					checkPreparedBeforeStop(t, what, op, tasks)
					checkSnapshotsWhileStopped(t, what, op, tasks)
					checkPreservedVolumes(t, what, op, tasks, sc.states[op.Name])
					checkShutdownRequests(t, what, op)
					checkWaitReady(t, what, op, sc.running)
					checkAbandon(t, what, op, tasks, sc.changed)
					checkReservations(t, what, op, tasks, sc.changed, byName[op.Name])
					if op.Kind != OpDelete && op.Kind != OpPower && op.Kind != OpLive && byName[op.Name].Status == StatusRunning && takesDown(tasks) {
						down++
					}
				}
				if down > sc.budget {
					t.Fatalf("%s: wave %d takes %d running members down, budget %d", what, k+1, down, sc.budget)
				}
			}
		}
	})
}

func takesDown(tasks []Task) bool {
	for _, t := range tasks {
		if t.Kind.Down() {
			return true
		}
	}
	return false
}

func checkPreparedBeforeStop(t *testing.T, what string, op Operation, tasks []Task) {
	t.Helper()
	if op.Kind != OpRestart && op.Kind != OpReplace {
		return
	}
	created, staged, defined := map[string]bool{}, false, false
	for _, task := range tasks {
		switch task.Kind {
		case TaskCreateVolume:
			created[task.Volume.Volume] = true
		case TaskStage:
			staged = true
		case TaskDefineNext:
			defined = task.Desired.Hash() == op.Step.Plan.Desired.Hash() && task.UUID == op.Step.UUID
		default:
		}
		if !task.Kind.Down() {
			continue
		}
		if !defined {
			t.Fatalf("%s: %s of %s takes it down (%s) before its new definition is stored", what, op.Kind, op.Name, task.Kind)
		}
		if op.Staging != "" && !staged {
			t.Fatalf("%s: %s of %s takes it down before its new boot volume is staged", what, op.Kind, op.Name)
		}
		for _, v := range op.Volumes {
			if v.Fate == Keep && v.SizeMiB > 0 && !created[v.Volume] {
				t.Fatalf("%s: %s of %s takes it down before volume %s is made", what, op.Kind, op.Name, v.Volume)
			}
		}
		return
	}
}

func checkPreservedVolumes(t *testing.T, what string, op Operation, tasks []Task, states []DesiredInstance) {
	t.Helper()
	for _, task := range tasks {
		if task.Kind != TaskDeleteVolume {
			continue
		}
		preserved, never := false, false
		for _, st := range states {
			for _, d := range st.Disks {
				if d.Source == task.Volume.Volume && d.Preserved {
					preserved = true
					never = never || d.DeleteRule != DeleteOnPermanentDeletion
				}
			}
		}
		if preserved && (op.Kind != OpDelete || never) {
			t.Fatalf("%s: preserved volume %s (NEVER: %v) deleted by %s of %s", what, task.Volume.Volume, never, op.Kind, op.Name)
		}
	}
}

func checkShutdownRequests(t *testing.T, what string, op Operation) {
	t.Helper()
	requested := false
	for _, task := range op.Early {
		requested = requested || task.Kind == TaskShutdown
	}
	for _, task := range op.Tasks {
		switch task.Kind {
		case TaskShutdown:
			if op.Kind == OpDelete {
				t.Fatalf("%s: the deletion of %s requests its shutdown late: its wait cannot overlap the others'", what, op.Name)
			}
			requested = true
		case TaskStopWait:
			if !requested {
				t.Fatalf("%s: %s of %s waits for a shutdown it did not request", what, op.Kind, op.Name)
			}
		default:
		}
	}
}

func checkWaitReady(t *testing.T, what string, op Operation, running bool) {
	t.Helper()
	tasks := allTasks(op)
	for i, task := range tasks {
		switch task.Kind {
		case TaskStart:
			if !running {
				continue
			}
			if i+1 >= len(tasks) || tasks[i+1].Kind != TaskWaitReady {
				t.Fatalf("%s: %s of %s starts it and does not wait for it to be ready", what, op.Kind, op.Name)
			}
		case TaskWaitReady:
			if !running || i == 0 || tasks[i-1].Kind != TaskStart {
				t.Fatalf("%s: %s of %s waits for ready, which only a start of a member the group wants running does", what, op.Kind, op.Name)
			}
			if i != len(tasks)-1 {
				t.Fatalf("%s: %s of %s does %s after its wait for ready", what, op.Kind, op.Name, tasks[i+1].Kind)
			}
			if task.Ready.Timeout <= 0 {
				t.Fatalf("%s: %s of %s waits for ready without a timeout", what, op.Kind, op.Name)
			}
		default:
		}
	}
}

func checkAbandon(t *testing.T, what string, op Operation, tasks []Task, s GroupState) {
	t.Helper()
	if op.Kind == OpAbandon {
		if !s.Group.Abandoned(op.Name) {
			t.Fatalf("%s: %s abandoned, which the group does not abandon", what, op.Name)
		}
		if len(tasks) != 1 || tasks[0].Kind != TaskForget {
			t.Fatalf("%s: the abandonment of %s runs %v, not its record's removal alone", what, op.Name, tasks)
		}
		return
	}
	if op.Name != "" && s.Group.Abandoned(op.Name) && what != "destroy" && what != "remove" {
		t.Fatalf("%s: %s of %s, which the group abandons", what, op.Kind, op.Name)
	}
	if op.Name != "" {
		return
	}
	for _, task := range tasks {
		if task.Kind != TaskDeleteVolume {
			continue
		}
		if inst, _, _, ok := s.ownerOf(task.Volume.Volume); ok && s.Group.Abandoned(inst) {
			t.Fatalf("%s: volume %s of abandoned %s deleted", what, task.Volume.Volume, inst)
		}
	}
}

func checkReservations(t *testing.T, what string, op Operation, tasks []Task, s GroupState, o Observed) {
	t.Helper()
	var desired *DesiredInstance
	switch op.Kind {
	case OpCreate:
		desired = &op.New.Plan.Desired
	case OpRestart, OpReplace, OpLive:
		desired = &op.Step.Plan.Desired
	default:
	}
	wanted := map[int]bool{}
	if desired != nil && op.Kind != OpLive {
		for _, r := range Reservations(s.Group.Name, *desired) {
			wanted[r.NIC] = true
		}
	}
	released := map[int]bool{}
	for _, task := range tasks {
		switch task.Kind {
		case TaskReserve, TaskRelease:
			r := task.Reservation
			if r.MAC != MACAddress(s.Group.Name, op.Name, r.NIC) {
				t.Fatalf("%s: %s of %s touches MAC %s, not the member's own", what, task.Kind, op.Name, r.MAC)
			}
			if task.Kind == TaskReserve {
				delete(wanted, r.NIC)
				continue
			}
			released[r.NIC] = true
			if desired != nil && r.NIC < len(desired.NICs) && desired.NICs[r.NIC].Reserves() && desired.NICs[r.NIC].Network == r.Network {
				t.Fatalf("%s: %s of %s releases %s, which its desired state reserves", what, op.Kind, op.Name, InterfaceName(r.NIC))
			}
		case TaskDefine, TaskDefineNext, TaskStart, TaskShutdown, TaskPowerOff:
			if len(wanted) > 0 {
				t.Fatalf("%s: %s of %s runs %s before its reservations are made", what, op.Kind, op.Name, task.Kind)
			}
		case TaskUndefine:
			if op.Kind == OpDelete && !o.Unmanaged {
				for i, n := range o.Instance.Current.NICs {
					if (n.Reserves() || o.Reserved[i] != "") && !released[i] {
						t.Fatalf("%s: deletion of %s undefines it before releasing %s", what, op.Name, InterfaceName(i))
					}
				}
			}
		default:
		}
	}
}

// checkSnapshotsWhileStopped checks where an operation's snapshot tasks are: the room is checked
// before anything of the member changes (its marker) or stops; a snapshot is taken, and a disk
// put back, only once the member is down and before it is defined anew or started; a snapshot is
// of a disk the member had preserved, and only a change of template takes one.
func checkSnapshotsWhileStopped(t *testing.T, what string, op Operation, tasks []Task) {
	t.Helper()
	marked, down, started := false, false, false
	for _, task := range tasks {
		switch {
		case task.Kind == TaskMark:
			marked = true
		case task.Kind.Down():
			down = true
		case task.Kind == TaskStart || task.Kind == TaskDefine:
			started = true
		case task.Kind == TaskSnapshotRoom && (marked || down):
			t.Fatalf("%s: %s of %s checks the room for its snapshots after it changed the member", what, op.Kind, op.Name)
		case task.Kind == TaskSnapshot || task.Kind == TaskRevertSnapshot:
			if !down && op.Kind != OpCreate || started {
				t.Fatalf("%s: %s of %s runs %s while the member may run (down %v, started %v)", what, op.Kind, op.Name, task.Kind, down, started)
			}
			if task.Kind == TaskSnapshot && (op.Step.Revision == op.Step.Current.TemplateRevision || op.Rollback) {
				t.Fatalf("%s: %s of %s takes a snapshot without a change of template", what, op.Kind, op.Name)
			}
			if task.Kind == TaskSnapshot {
				d, ok := op.Step.Current.Current.DiskByName(task.Snapshot.DeviceName)
				if !ok || !d.Preserved || d.Source != task.Snapshot.Volume {
					t.Fatalf("%s: %s of %s snapshots %s, not a preserved disk of the member", what, op.Kind, op.Name, task.Snapshot.Volume)
				}
			}
		default:
		}
	}
}
