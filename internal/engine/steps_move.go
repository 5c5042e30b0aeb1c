package engine

// The tasks of a move (OpMove), in the order they run; see moves.go for what a move is and
// steps.go for how the other operations' tasks are built.

// moveOp plans a member's move, or the end of one cut off: which volumes go with it (its own:
// boot, disks, seed; its NVRAM when it may have one).
func moveOp(s GroupState, o Observed, mv MemberMove) Operation {
	op := Operation{Kind: OpMove, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Reason: "move " + mv.Move.String(), Power: mv.Power, Move: &mv,
		Step: Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance}}
	for _, d := range knownVolumes(o) {
		op.Volumes = append(op.Volumes, VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: Keep})
	}
	if o.Instance.Current.CloudInit != nil {
		op.Volumes = append(op.Volumes, VolumeOp{DeviceName: "cidata", Volume: SeedVolumeName(o.Name), Fate: Keep})
	}
	op.Move.NVRAM = o.Instance.Current.Firmware == FirmwareEFI
	// Its address reservations go with it: made in the target's networks before it is defined
	// there, and let go in the source's once it has left.
	op.Reserve, op.Release = Reservations(s.Group.Name, o.Instance.Current), deletionReleases(s, o)
	return op
}

// move adds the tasks of the operation's move phase.
func (b *taskBuilder) move() {
	mv := b.op.Move
	switch mv.Phase {
	case MoveStart:
		b.moveStart()
	case MoveFinish:
		b.moveFinish()
	case MoveUndo:
		b.clearOn(mv.Leftover)
		b.releaseOn(mv.Leftover)
		b.add(Task{Kind: TaskRecord, Record: b.moveRecord(nil)})
		b.add(Task{Kind: TaskAutostart, Autostart: b.s.Group.Running})
		if !mv.Running {
			b.startReady()
		}
	}
}

// moveRecord is the member's record with the move m (nil: none).
func (b *taskBuilder) moveRecord(m *Move) ManagedInstance {
	mi := b.op.Step.Current
	mi.Move = m
	return mi
}

// clearOn deletes, on host, what a cut-off move left there: the member's volumes, once no
// domain there holds the member's name (a name is not proof of ownership).
func (b *taskBuilder) clearOn(host string) {
	if host == "" {
		return
	}
	b.add(Task{Kind: TaskNameFree, Host: host})
	b.deleteVolumes(host)
}

// reserveOn makes the member's address reservations on host; releaseOn lets them go there.
func (b *taskBuilder) reserveOn(host string) {
	for _, r := range b.op.Reserve {
		b.add(Task{Kind: TaskReserve, Reservation: r, Host: host})
	}
}

func (b *taskBuilder) releaseOn(host string) {
	for _, r := range b.op.Release {
		b.add(Task{Kind: TaskRelease, Reservation: r, Host: host})
	}
}

// deleteVolumes deletes the member's volumes (and NVRAM) on host: its source's once the member is
// on its target, or what a cut-off move left on a target (clearOn).
func (b *taskBuilder) deleteVolumes(host string) {
	for _, v := range b.op.Volumes {
		b.add(Task{Kind: TaskDeleteVolume, Volume: VolumeOp{DeviceName: v.DeviceName, Volume: v.Volume, Fate: Delete}, Host: host})
	}
	if b.op.Move.NVRAM {
		b.add(Task{Kind: TaskDeleteNVRAM, Volume: VolumeOp{Volume: NVRAMVolumeName(b.op.Name), Fate: Delete}, Host: host})
	}
}

// moveStart moves the member from its source (the operation's host) to the target. The marker
// goes first; the target is cleared of what an earlier cut-off move left (its volumes, which no
// definition there holds), and its address reservations are made there. Live: empty volumes on
// the target (the seed, read-only, which a migration does not carry, is copied), then libvirt's
// migration, which leaves the member defined and running there; when libvirt refuses it before
// the member left, the move goes on cold (TaskMigrate's Otherwise), the prepared volumes cleared
// first. Cold: see coldMove. Either way the source's reservations and volumes go once the member
// is on the target, and the record without the marker ends the move.
func (b *taskBuilder) moveStart() {
	mv := b.op.Move
	to := HostOf(mv.Move.To)
	marked := mv.Move
	b.add(Task{Kind: TaskMark, Record: b.moveRecord(&marked)})
	if mv.Leftover != "" && mv.Leftover != to {
		b.clearOn(mv.Leftover)
	}
	b.clearOn(to)
	b.reserveOn(to)
	if mv.Move.Live {
		for _, v := range b.op.Volumes {
			kind := TaskPrepareVolume
			if v.Volume == SeedVolumeName(b.op.Name) {
				kind = TaskCopyVolume
			}
			b.add(Task{Kind: kind, Volume: v, Host: to})
		}
		cold := taskBuilder{s: b.s, op: b.op}
		cold.clearOn(to)
		cold.coldMove(to, marked)
		b.add(Task{Kind: TaskMigrate, Host: to, Timeout: LiveMoveTimeout, Otherwise: cold.tasks})
	} else {
		b.coldMove(to, marked)
	}
	b.releaseOn("")
	b.deleteVolumes("")
	b.add(Task{Kind: TaskAutostart, Autostart: b.s.Group.Running, Host: to})
	b.add(Task{Kind: TaskRecord, Record: b.moveRecord(nil), Host: to})
}

// coldMove stops the member and takes its autostart away here (a host restart must not start
// the copy being read), copies and checks every volume, defines the member on the target (proof
// of a whole copy: the next apply finishes from there), undefines it here and starts it there.
func (b *taskBuilder) coldMove(to string, marked Move) {
	// Stopped whatever was observed: a paused or crashed domain still holds its disks open.
	b.add(Task{Kind: TaskAutostart, Autostart: false})
	b.stop()
	for _, v := range b.op.Volumes {
		b.add(Task{Kind: TaskCopyVolume, Volume: v, Host: to})
	}
	if b.op.Move.NVRAM {
		b.add(Task{Kind: TaskCopyVolume, Volume: VolumeOp{Volume: NVRAMVolumeName(b.op.Name), Fate: Keep}, Host: to, Optional: true})
	}
	def := b.define(TaskDefine, b.op.Step.Current.Current, b.moveRecord(&marked), b.op.Step.UUID, Stamp{})
	def.Host = to
	b.add(def)
	b.add(Task{Kind: TaskUndefine})
	b.startOn(to)
}

// moveFinish ends a move cut off after the target got the member's definition: the member's
// copy on the source (stopped) is undefined and its volumes deleted, the member started on the
// target (the operation's host) and its record written without the marker.
func (b *taskBuilder) moveFinish() {
	from := HostOf(b.op.Move.Move.From)
	b.add(Task{Kind: TaskUndefineCopy, Host: from})
	b.releaseOn(from)
	b.deleteVolumes(from)
	b.add(Task{Kind: TaskAutostart, Autostart: b.s.Group.Running})
	if !b.op.Move.Running {
		b.startReady()
	}
	b.add(Task{Kind: TaskRecord, Record: b.moveRecord(nil)})
}

// startOn starts the member on host and waits until it is ready, as startReady does on the
// operation's host.
func (b *taskBuilder) startOn(host string) {
	n := len(b.tasks)
	b.startReady()
	for i := n; i < len(b.tasks); i++ {
		b.tasks[i].Host = host
	}
}
