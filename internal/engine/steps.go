package engine

// The tasks of each kind of operation, built from what the plan decided (see Task).

// withTasks returns op with its task lists built.
func (s GroupState) withTasks(op Operation) Operation {
	op = s.ownFates(op)
	b := taskBuilder{s: s, op: op}
	switch op.Kind {
	case OpCreate:
		b.create()
	case OpDelete:
		b.delete()
	case OpMark:
		b.preserve()
		b.dropSnapshots()
	case OpPower:
		b.preserve()
		b.dropSnapshots()
		b.power()
	case OpLive:
		b.live()
	case OpRestart:
		b.restart()
	case OpReplace:
		b.replace()
	case OpMove:
		b.move()
	case OpAbandon:
		// Only the member's record goes: no stop, no definition, no volume.
		b.add(Task{Kind: TaskForget})
	}
	op.Early, op.Tasks = b.early, b.tasks
	op.Sweep = op.Kind == OpDelete && op.Name != ""
	s.guardTasks(&op)
	s.snapshotHelpers(&op)
	return op
}

// taskBuilder appends an operation's tasks in the order they run.
type taskBuilder struct {
	s     GroupState
	op    Operation
	early []Task
	tasks []Task
	// nameChecked is set once a creation checks that its name is free: once is enough.
	nameChecked bool
	// imported is set once the operation makes its image volume (TaskImportImage).
	imported bool
}

func (b *taskBuilder) add(ts ...Task) { b.tasks = append(b.tasks, ts...) }

// volumes adds the tasks of the operation's volumes whose fate is one of fates, in their order.
// Only a creation checks that the name is free before it deletes: any other operation's member
// is the group's, as observed under its lease, and a creation of new volumes only needs no
// look, since the definition refuses a name that is taken.
func (b *taskBuilder) volumes(fates ...Fate) {
	for _, v := range b.op.Volumes {
		if !containsFate(fates, v.Fate) {
			continue
		}
		if v.Fate == Recreate || v.Fate == Keep && v.SizeMiB > 0 {
			b.image(v)
		}
		switch v.Fate {
		case Delete:
			b.nameFree()
			b.add(Task{Kind: TaskDeleteVolume, Volume: v})
		case Recreate:
			if v.Absent {
				var otherwise []Task
				if b.op.Kind == OpCreate && !b.nameChecked {
					otherwise = append(otherwise, Task{Kind: TaskNameFree})
				}
				otherwise = append(otherwise, Task{Kind: TaskDeleteVolume, Volume: v}, Task{Kind: TaskCreateVolume, Volume: v})
				b.add(Task{Kind: TaskFreshVolume, Volume: v, Otherwise: otherwise})
				continue
			}
			b.nameFree()
			b.add(Task{Kind: TaskDeleteVolume, Volume: v}, Task{Kind: TaskCreateVolume, Volume: v})
		case Keep:
			if v.SizeMiB > 0 {
				b.add(Task{Kind: TaskCreateVolume, Volume: v})
			}
		case Release:
			b.add(Task{Kind: TaskReleaseVolume, Volume: v})
		}
	}
}

// image makes the image volume v backs onto first, when the plan must make it, once per
// operation.
func (b *taskBuilder) image(v VolumeOp) {
	if v.Import == nil || b.imported {
		return
	}
	b.imported = true
	b.add(Task{Kind: TaskImportImage, Volume: v})
}

func containsFate(fates []Fate, f Fate) bool {
	for _, x := range fates {
		if x == f {
			return true
		}
	}
	return false
}

// nameFree checks the name once, before a creation's first deletion.
func (b *taskBuilder) nameFree() {
	if b.op.Kind != OpCreate || b.nameChecked {
		return
	}
	b.nameChecked = true
	b.add(Task{Kind: TaskNameFree})
}

// seed adds the operation's seed task: a swap when the member runs on with it (a live change),
// else a write or a deletion of the volume.
func (b *taskBuilder) seed(desired DesiredInstance, swap bool) {
	switch b.op.Seed {
	case SeedWrite:
		if swap {
			b.add(Task{Kind: TaskSwapSeed, Desired: desired, UserDataFromSeed: b.op.SeedKept})
			return
		}
		b.add(Task{Kind: TaskWriteSeed, Desired: desired, UserDataFromSeed: b.op.SeedKept})
	case SeedDelete:
		b.add(Task{Kind: TaskDeleteVolume, Volume: VolumeOp{Volume: SeedVolumeName(b.op.Name), Fate: Delete}})
	case SeedKeep:
	}
}

// start starts the member when the operation leaves it running.
func (b *taskBuilder) start() {
	if b.op.Power == StatusRunning {
		b.add(Task{Kind: TaskStart})
	}
}

// startReady starts the member when the operation leaves it running and, when the group wants
// its members running and has something to wait for (Readiness.Waits), waits until it is ready:
// the last task, so that a member that never becomes ready has its change recorded (it is on the
// new template, and not ready).
func (b *taskBuilder) startReady() {
	b.start()
	if ready := b.s.Group.Readiness(); b.op.Power == StatusRunning && b.s.Group.Running && ready.Waits() {
		b.add(Task{Kind: TaskWaitReady, Ready: ready})
	}
}

// define is a definition of the member from desired, embedding rec.
func (b *taskBuilder) define(kind TaskKind, desired DesiredInstance, rec ManagedInstance, uuid string, stamp Stamp) Task {
	return Task{Kind: kind, Desired: desired, Record: rec, UUID: uuid, Stamp: stamp, Autostart: b.s.Group.Running}
}

func (b *taskBuilder) create() {
	m := b.op.New
	b.volumes(Delete, Recreate, Keep)
	b.reverts()
	b.dropReplaced()
	b.nvram()
	b.seed(m.Plan.Desired, false)
	b.reserve()
	b.add(b.define(TaskDefine, m.Plan.Desired, m.Plan.Applied(b.s.Group.Template), "", Stamp{Created: true}))
	b.startReady()
}

// delete takes a member away for good. A running member's shutdown request is an early task:
// the executor issues every request of the wave before it waits for any, so that the members
// of a destroy or a scale-in, which no availability budget holds back, shut down together and
// are waited for together, one shutdown_timeout in all.
func (b *taskBuilder) delete() {
	if b.op.Name != "" {
		if b.op.Power == StatusStopped {
			request, rest := b.stopping()
			b.early = append(b.early, request...)
			b.add(rest...)
		}
		// Released before the definition goes: a deletion interrupted between the two is
		// planned again from the member still there, and released again (a no-op). The NVRAM
		// goes before it too, for the same reason: its name is not one the group's volume sweep
		// (PlanDestroy) reads as a member's disk, and the stopped domain does not hold it open.
		b.release()
		b.nvram()
		b.add(Task{Kind: TaskUndefine})
		b.seed(DesiredInstance{}, false)
	}
	b.volumes(Delete, Release)
}

// reserve makes the operation's address reservations: before the member's definition, so that
// the guest's first DHCP request after the (re)start gets its address, and, in a restart or a
// replacement, before anything stops, so that an address taken by another MAC fails the change
// while the member still runs.
func (b *taskBuilder) reserve() {
	for _, r := range b.op.Reserve {
		b.add(Task{Kind: TaskReserve, Reservation: r})
	}
}

// release deletes the member's host entries the operation lets go.
func (b *taskBuilder) release() {
	for _, r := range b.op.Release {
		b.add(Task{Kind: TaskRelease, Reservation: r})
	}
}

// preserve writes the preservation the step starts or releases in the member's record, and
// nothing else of it.
func (b *taskBuilder) preserve() {
	st := b.op.Step
	if st.Preserve == nil {
		return
	}
	mi := st.Current
	mi.Preserved, mi.PreservedSince = st.Preserve.Kind, st.Preserve.Since
	b.add(Task{Kind: TaskPreserve, Record: mi})
}

// power power-cycles a paused or crashed member into a clean run, then starts or stops it.
func (b *taskBuilder) power() {
	if b.op.Reset {
		b.add(Task{Kind: TaskPowerOff})
	}
	switch b.op.Power {
	case StatusRunning:
		// A member started is waited for as one a rollout starts: the apply ends with it ready,
		// and a member that does not come up fails the apply rather than the next plan.
		b.add(Task{Kind: TaskAutostart, Autostart: true})
		b.startReady()
	case StatusStopped:
		b.add(Task{Kind: TaskAutostart, Autostart: false})
		b.stop()
	}
}

// marked is the in-flight marker: where the member is going, written before anything changes,
// so that an interruption is seen and settled by the next apply whatever the configuration says
// then. A heal is counted in it, so that a heal that fails counts too.
func (b *taskBuilder) marked() (ManagedInstance, Stamp) {
	st := b.op.Step
	mi := st.Current
	target := st.Plan.Desired
	mi.InFlight, mi.InFlightAction = &target, st.Action
	if st.Heal > 0 {
		mi.Heals = st.Heal
		return mi, Stamp{LastHeal: true}
	}
	return mi, Stamp{}
}

// live applies a change to the running member: disks detached, volumes dropped or made, disks
// attached and grown, the description when it changes, then metadata and labels in the final
// record write, and its power last.
func (b *taskBuilder) live() {
	st := b.op.Step
	if b.op.Define {
		b.add(b.define(TaskDefineAgain, st.Current.Current, st.Current, st.UUID, Stamp{}))
	}
	if b.op.Mark {
		rec, stamp := b.marked()
		b.add(Task{Kind: TaskMark, Record: rec, Stamp: stamp})
	}
	for _, dev := range b.op.Detach {
		b.add(Task{Kind: TaskDetach, Device: dev})
	}
	b.volumes(Delete, Keep)
	for _, d := range b.op.Attach {
		b.add(Task{Kind: TaskAttach, Disk: d})
	}
	for _, d := range b.op.Grow {
		b.add(Task{Kind: TaskGrow, Disk: d})
	}
	b.seed(st.Plan.Desired, true)
	if b.op.Password {
		b.add(Task{Kind: TaskGraphicsPassword, Desired: st.Plan.Desired})
	}
	b.release()
	b.reserve()
	if b.op.Description {
		b.add(Task{Kind: TaskDescribe, Description: st.Plan.Desired.Description})
	}
	if b.op.Record {
		b.add(Task{Kind: TaskRecord, Record: st.Recorded()})
	}
	b.dropSnapshots()
	b.power()
}

// restart makes the new volumes and stores the new definition while the member still runs, then
// stops it, grows its disks, drops the volumes it no longer has, records the change and starts
// it.
func (b *taskBuilder) restart() {
	st := b.op.Step
	rec, stamp := b.marked()
	b.snapshotRoom()
	b.add(Task{Kind: TaskMark, Record: rec, Stamp: stamp})
	b.volumes(Keep)
	b.reserve()
	b.add(b.define(TaskDefineNext, st.Plan.Desired, rec, st.UUID, stamp))
	b.stop()
	b.snapshots()
	b.reverts()
	b.dropSnapshots()
	for _, d := range b.op.Grow {
		b.add(Task{Kind: TaskGrow, Disk: d})
	}
	b.volumes(Delete, Release)
	b.release()
	b.seed(st.Plan.Desired, false)
	// A heal's record keeps its count and is stamped with when it healed (Step.Recorded).
	b.add(Task{Kind: TaskRecord, Record: st.Recorded(), Stamp: stamp})
	b.startReady()
}

// replace stages the new boot volume, makes new volumes and stores the new definition while the
// old member still runs, so that a bad image, a full pool or a definition libvirt refuses fails
// before anything stops; then it stops and undefines the old domain, recreates its stateless
// volumes, keeps its preserved ones, and defines and starts the new domain under the same name.
// The new domain is created now: its heal count goes on when this is a heal, starts again when
// the step applies a change, and is kept otherwise.
func (b *taskBuilder) replace() {
	st := b.op.Step
	rec, stamp := b.marked()
	b.snapshotRoom()
	b.add(Task{Kind: TaskMark, Record: rec, Stamp: stamp})
	if b.op.Staging != "" {
		// A staged volume left by an interrupted replacement may back onto another image.
		var boot VolumeOp
		for _, v := range b.op.Volumes {
			if v.DeviceName == BootDeviceName && v.Fate == Recreate {
				boot = v
			}
		}
		staged := VolumeOp{DeviceName: BootDeviceName, Volume: b.op.Staging, Fate: Recreate, SizeMiB: boot.SizeMiB, BackingImage: boot.BackingImage,
			BackingVolume: boot.BackingVolume, Import: boot.Import}
		b.add(Task{Kind: TaskDeleteVolume, Volume: staged})
		b.image(staged)
		b.add(Task{Kind: TaskStage, Volume: staged})
	}
	b.volumes(Keep)
	// The member keeps its MACs, so its reservations stay across the replacement: they are
	// only checked (or made) before anything stops.
	b.reserve()
	// The definition that follows the stop is the same, under a new UUID, so it does not fail
	// on its content.
	b.add(b.define(TaskDefineNext, st.Plan.Desired, rec, st.UUID, stamp))
	b.stop()
	b.snapshots()
	b.reverts()
	b.dropSnapshots()
	b.add(Task{Kind: TaskUndefine})
	b.volumes(Recreate, Delete, Release)
	b.nvram()
	b.release()
	if b.op.Staging != "" {
		b.add(Task{Kind: TaskDeleteVolume, Volume: VolumeOp{DeviceName: BootDeviceName, Volume: b.op.Staging, Fate: Delete}})
	}
	b.seed(st.Plan.Desired, false)
	replaced := st.applied()
	created := Stamp{Created: true}
	switch {
	case st.Heal > 0:
		replaced.Heals, created.LastHeal = st.Heal, true
	case !st.ResetHeals:
		replaced.Heals, replaced.LastHeal = st.Current.Heals, st.Current.LastHeal
	}
	b.add(b.define(TaskDefine, st.Plan.Desired, replaced, "", created))
	b.startReady()
}
