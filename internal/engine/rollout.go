package engine

import (
	"fmt"
	"slices"
)

// sameDisk reports whether an attached disk is the desired one.
func sameDisk(a, d DesiredDisk) bool { return a.Source == d.Source && a.ReadOnly == d.ReadOnly }

// diskChanges compares what is attached with the desired disks: the disks to grow, the devices
// whose attached disk goes (detached, swapped, or its mode changed), the disks to attach, and the
// volumes made for new disks or dropped with the old ones.
func diskChanges(s GroupState, o Observed, st Step, env Env) (grow []DesiredDisk, detach []string, attach []DesiredDisk, volumes []VolumeOp) {
	desired, mi := st.Plan.Desired, o.Instance
	attached := map[string]DesiredDisk{}
	for _, a := range o.Attached {
		attached[a.DeviceName] = a
	}
	for _, want := range desired.Disks {
		a, ok := attached[want.DeviceName]
		if ok && sameDisk(a, want) {
			if have, ok := mi.Current.DiskByName(want.DeviceName); ok && have.SizeMiB > 0 && want.SizeMiB > have.SizeMiB {
				grow = append(grow, want)
			}
			continue
		}
		if ok {
			detach = append(detach, want.DeviceName)
			if a.Source != want.Source {
				volumes = append(volumes, dropped(s, o, desired, a, env))
			}
		}
		if want.SizeMiB > 0 && want.Source == VolumeName(o.Name, want.DeviceName) {
			volumes = append(volumes, ownVolumeOp(want, st.Template, Keep))
		}
		attach = append(attach, want)
	}
	for _, a := range o.Attached {
		if _, ok := desired.DiskByName(a.DeviceName); !ok {
			detach = append(detach, a.DeviceName)
			volumes = append(volumes, dropped(s, o, desired, a, env))
		}
	}
	return grow, detach, attach, volumes
}

// liveOp plans a live change from what is really attached: a change interrupted half-way is
// finished by the same operation.
func liveOp(s GroupState, o Observed, st Step, env Env) Operation {
	op := Operation{Kind: OpLive, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power}
	op.Grow, op.Detach, op.Attach, op.Volumes = diskChanges(s, o, st, env)
	if st.Changed() && seedChanged(o, st.Plan.Desired) {
		op.Seed, op.SeedKept = SeedWrite, seedKeepsUserData(o, st.Plan.Desired)
	}
	// Setting the password again is harmless, so a change interrupted after it needs no marker:
	// the record still has the old version, and the next plan sets it again.
	op.Password = st.Changed() && GraphicsPasswordChanged(o.Instance.Current, st.Plan.Desired)
	op.Mark = o.Unmanaged || o.Instance.InFlight != nil || len(op.Detach)+len(op.Attach)+len(op.Grow) > 0 || op.Seed != SeedKeep
	if st.Changed() {
		op.Reserve, op.Release = liveReservations(s.Group.Name, o, st.Plan.Desired)
		// A reservation is a write to the network before the record's: the in-flight marker
		// names it first, so that an apply killed in between watches the member's entries and
		// finishes the reservation, or releases it when it is no longer wanted.
		op.Mark = op.Mark || len(op.Reserve) > 0
	}
	op.Description = st.Changed() && (o.Description == nil || *o.Description != st.Plan.Desired.Description)
	op.Record = st.Changed() && recordWritten(o, st, op)
	op.Define = o.Transient && drifts(o)
	if !st.Changed() {
		op.Kind, op.Reason = OpPower, "power"
	}
	op.Reset = st.Power == StatusRunning && o.Status != StatusStopped
	return op
}

// restartOp plans a redefinition and power cycle: new volumes are made and the new definition
// stored while the member still runs; disks are grown while it is down. The new definition
// attaches and detaches, so only the volumes and the growth are the operation's own.
func restartOp(s GroupState, o Observed, st Step, env Env) Operation {
	op := Operation{Kind: OpRestart, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
	if op.Power == "" {
		op.Power = s.Group.DesiredStatus()
	}
	op.Grow, _, _, op.Volumes = diskChanges(s, o, st, env)
	if seedChanged(o, st.Plan.Desired) {
		op.Seed, op.SeedKept = SeedWrite, seedKeepsUserData(o, st.Plan.Desired)
	}
	op.Reserve, op.Release = Reservations(s.Group.Name, st.Plan.Desired), Releases(s.Group.Name, o.Name, &st.Plan.Desired, heldStates(o)...)
	op.Snapshots, op.Reverts = snapshotOps(s, o, st, env), st.Restore
	if len(st.Restore) > 0 {
		// A restore takes no snapshot: a new one would replace the one it puts back.
		op.Snapshots = nil
	}
	return op
}

// replaceOp plans a recreation: the new boot volume is staged first, then the old domain goes,
// its stateless volumes are recreated, its preserved ones kept, and the new domain is defined.
func replaceOp(s GroupState, o Observed, st Step, env Env) Operation {
	op := Operation{Kind: OpReplace, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
	desired, mi := st.Plan.Desired, o.Instance
	if op.Power == "" {
		op.Power = s.Group.DesiredStatus()
	}
	states := []DesiredInstance{mi.Current, deref(mi.InFlight), desired}
	wanted := map[string]bool{}
	for _, d := range desired.Disks {
		if d.SizeMiB == 0 || d.Source != VolumeName(o.Name, d.DeviceName) {
			continue
		}
		wanted[d.Source] = true
		fate := VolumeFate(protection(d.DeviceName, d.Source, states...), true, Recreation)
		v := ownVolumeOp(d, st.Template, fate)
		if d.DeviceName == BootDeviceName && fate == Recreate {
			op.Staging = StagingVolumeName(o.Name)
		}
		op.Volumes = append(op.Volumes, v)
	}
	for _, d := range knownVolumes(o) {
		if !wanted[d.Source] {
			op.Volumes = append(op.Volumes, dropped(s, o, desired, d, env))
		}
	}
	switch {
	case desired.CloudInit != nil:
		op.Seed, op.SeedKept = SeedWrite, seedKeepsUserData(o, desired)
	case hadSeed(o, env):
		op.Seed = SeedDelete
	}
	op.NVRAM = replacementNVRAM(o, desired)
	op.Reserve, op.Release = Reservations(s.Group.Name, desired), Releases(s.Group.Name, o.Name, &desired, heldStates(o)...)
	op.Snapshots = snapshotOps(s, o, st, env)
	return op
}

// unavailable reports whether a member counts against max_unavailable now: it should run and
// does not. Adopted members' power is not the group's to decide.
func unavailable(g Group, o Observed) bool {
	return g.Running && !o.Unmanaged && !o.Instance.Template.Adopted && o.Status != StatusRunning
}

// buildWaves turns the plan's deletions, creations and steps into waves: scale-in first, then
// new members, then live changes and power (which bring unavailable members back), then the
// restarts and replacements, a budget's worth per wave. Members already down go first and cost
// nothing more; each later wave takes as many running members as the budget leaves once the
// members that stay unavailable are counted.
func (p *GroupPlan) buildWaves(s GroupState, byName map[string]Observed, env Env) {
	// Operations are large values: the slices are made to size once rather than grown.
	del := make([]Operation, 0, len(p.Delete))
	create := make([]Operation, 0, len(p.Create))
	live := make([]Operation, 0, len(p.Steps))
	for _, name := range p.Delete {
		o := byName[name]
		del = append(del, s.withTasks(Operation{Kind: OpDelete, Name: name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Reason: "scale-in", Power: deletionPower(o), Volumes: deletionVolumes(s, o, env), Seed: deletionSeed(o, env), NVRAM: deletionNVRAM(o), Release: deletionReleases(s, o)}))
	}
	for _, m := range p.Create {
		// A member the canary holds back is built from the held members' template, as a
		// rollback's creation is built from the template it goes back to.
		built := s
		if m.Template != nil {
			built.Group.Template = *m.Template
		}
		create = append(create, built.withTasks(env.imaged(s.Group, Operation{Kind: OpCreate, Name: m.Name, Index: m.Index, New: m, Host: HostOf(m.Host), Reason: "new member",
			Power: s.Group.DesiredStatus(), Volumes: creationVolumes(m.Plan.Desired, built.Group.Template, env), Seed: creationSeed(m.Plan.Desired), NVRAM: creationNVRAM(m.Plan.Desired),
			Reserve: Reservations(s.Group.Name, m.Plan.Desired)})))
	}
	var down, up []Operation
	fixed := make(map[string]bool, len(p.Steps))
	for _, st := range p.Steps {
		o := byName[st.Name]
		fixed[st.Name] = true
		switch {
		case (st.Preserve != nil || len(st.DropSnapshots) > 0) && !st.Changed() && st.Power == "":
			why := droppedWhy(st.DropSnapshots)
			if st.Preserve != nil {
				why = st.Preserve.Why
			}
			live = append(live, s.withTasks(Operation{Kind: OpMark, Name: st.Name, Index: st.Index, Host: HostOf(o.Host), Observed: o.Status, Step: st, Reason: why}))
		case !st.Disruptive():
			live = append(live, s.withTasks(env.imaged(s.Group, liveOp(s, o, st, env))))
		case st.Action == ActionReplace && unavailable(s.Group, o):
			down = append(down, s.withTasks(env.imaged(s.Group, replaceOp(s, o, st, env))))
		case st.Action == ActionReplace:
			up = append(up, s.withTasks(env.imaged(s.Group, replaceOp(s, o, st, env))))
		case unavailable(s.Group, o):
			down = append(down, s.withTasks(env.imaged(s.Group, restartOp(s, o, st, env))))
		default:
			up = append(up, s.withTasks(env.imaged(s.Group, restartOp(s, o, st, env))))
		}
	}
	// An abandonment writes one record and waits for nothing: it goes first, with nothing else
	// of the plan depending on it.
	abandon := make([]Operation, 0, len(p.Abandon))
	for _, o := range p.Abandon {
		abandon = append(abandon, s.withTasks(Operation{Kind: OpAbandon, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Reason: "abandoned",
			Step: Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance}}))
	}
	for _, ops := range [][]Operation{create, live, down, up} {
		for _, op := range ops {
			if op.ImageProblem != "" {
				p.Blocked = append(p.Blocked, Blocked{Name: op.Name, Problem: op.ImageProblem})
			}
		}
	}
	for _, ops := range [][]Operation{abandon, del, create, live} {
		if len(ops) > 0 {
			p.Waves = append(p.Waves, Wave{Ops: ops})
		}
	}
	budget := s.Group.Policy.Budget(s.Group.TargetSize)
	for ops := range slices.Chunk(down, budget) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
	for _, mv := range p.Moves {
		// A move that leaves its member running brings a member that is down back, as a step
		// does: it goes in the first move wave, which costs no budget.
		if mv.Power == StatusRunning && !mv.Running {
			fixed[mv.Name] = true
		}
	}
	stillDown := 0
	for _, m := range p.Final {
		if p.Preservation[m.Name].Preserved() {
			continue // kept down on purpose, out of the rollout's budget
		}
		if o, ok := byName[m.Name]; ok && !fixed[m.Name] && unavailable(s.Group, o) {
			stillDown++
		}
	}
	room := budget - stillDown
	if room < 1 && len(up) > 0 {
		for _, op := range up {
			p.Blocked = append(p.Blocked, Blocked{Name: op.Name, Needs: op.Step.Action, Allowed: op.Step.Plan.Allowed,
				Problem: fmt.Sprintf("needs %s (%s), but max_unavailable (%d) is used up by %d member(s) that are down and that this plan does not bring back", op.Step.Action, op.Reason, budget, stillDown)})
		}
		p.moveWaves(s, byName, budget, room)
		return
	}
	for ops := range slices.Chunk(up, max(room, 1)) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
	p.moveWaves(s, byName, budget, room)
}

// Ops counts the operations of every wave.
func (p GroupPlan) Ops() int {
	n := 0
	for _, w := range p.Waves {
		n += len(w.Ops)
	}
	return n
}
