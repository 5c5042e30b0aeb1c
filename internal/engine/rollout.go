package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Env is what a plan depends on besides the group's record and what the host shows.
type Env struct {
	// Run identifies one run of the provider, that is one terraform command. What the stateful
	// policy and the configs preserved when the run began still protects its volumes from every
	// permanent deletion of that run (see GroupState.Release).
	Run string
	// groupDestroy is set by PlanDestroy: the group's own destroy also honours the unfinished
	// releases of earlier runs (see Released).
	groupDestroy bool
	// Now is when the plan is made: autohealing's delays and backoff are judged against it.
	Now time.Time
	// Volumes are the names of the volumes in the group's pool, when known: a member to create
	// whose own boot volume is there existed and lost its definition.
	Volumes map[string]bool
	// Hosts are the hosts the provider is configured with, by name; nil when not told (every
	// host counts as configured). A member placed on a host no longer configured is forgotten:
	// the user removed that host, and the member is created again on the group's hosts.
	Hosts []string
	// Taken are the names, on the group's hosts, that something other than the group holds: a
	// domain carrying another group's record, or another group's claim on the name (its naming
	// scheme, a config, a placement). The value says who, for the plan's words ("group \"a\"").
	// A member is never created under one of them.
	Taken map[string]string
	// Down are the hosts that did not answer the observation the plan is made from: no new
	// member is placed on them.
	Down []string
	// Machines are the names of the machines the hosts' daemons run on, by host: a move is
	// live only between two hosts known to be different machines.
	Machines map[string]string
	// action, when set, is a member action (PlanMemberAction) the plan forces on the members it
	// names.
	action *memberAction
}

// answers reports whether host answered the observation.
func (e Env) answers(host string) bool { return !slices.Contains(e.Down, HostOf(host)) }

// configured reports whether host is one of the provider's hosts.
func (e Env) configured(host string) bool {
	return e.Hosts == nil || slices.Contains(e.Hosts, HostOf(host))
}

// OpKind is what an operation does to one member.
type OpKind int

const (
	// OpDelete deletes a member for good: scale-in, group destroy, remove_instance_on_destroy.
	OpDelete OpKind = iota
	// OpCreate creates a member where no domain of its identity exists.
	OpCreate
	// OpPower only starts or stops a member.
	OpPower
	// OpLive changes a member live (REFRESH, or NONE for labels and description).
	OpLive
	// OpRestart redefines a member and power-cycles it.
	OpRestart
	// OpReplace recreates a member's domain and stateless volumes, keeping its preserved disks.
	OpReplace
	// OpMark only writes the member's record: a preservation started or released.
	OpMark
	// OpAbandon takes a member out of the group: its record goes from the domain's metadata,
	// and its domain (power, definition) and volumes stay as they are.
	OpAbandon
	// OpMove moves a member to another host, or finishes or undoes a move cut off (Move).
	OpMove
)

func (k OpKind) String() string {
	return [...]string{"delete", "create", "power", "refresh", "restart", "replace", "mark", "abandon", "move"}[k]
}

// Done is the kind as a past participle, for progress logs ("instance 3 of 20 replaced").
func (k OpKind) Done() string {
	return [...]string{"deleted", "created", "powered", "refreshed", "restarted", "replaced", "marked", "abandoned", "moved"}[k]
}

// VolumeOp is what an operation does to one volume of the group's pool.
type VolumeOp struct {
	DeviceName string
	Volume     string
	// Fate is Keep (reuse, or create when missing), Recreate (delete, then create), Delete or
	// Release (leave it in place, unattached).
	Fate Fate
	// SizeMiB and BackingImage describe the volume to create when the fate makes one.
	SizeMiB      int64
	BackingImage string
	// Absent marks a Recreate of a volume the pool listing the plan was made from did not have:
	// it need not be deleted first (a new member's volumes, which a large create would otherwise
	// delete one by one before making them).
	Absent bool
}

// Operation is one typed step of a rollout, with everything decided: the executor carries it out
// as it is.
type Operation struct {
	Kind  OpKind
	Name  string
	Index int
	// Host is the host the operation runs on; "" is DefaultHost.
	Host string
	// Reason says why, in a few words: "scale-in", "boot image", "metadata role changed".
	Reason string
	// Step is the plan of an existing member (every kind but OpCreate and OpDelete); New is the
	// member an OpCreate makes.
	Step Step
	New  NewMember
	// Power is the state the member ends in, StatusRunning or StatusStopped; empty leaves it.
	Power Status
	// Reset powers a paused or crashed member off before it is started again.
	Reset bool
	// Mark writes the in-flight marker before the change, because the change takes more than
	// one write; a change that is one record write needs none.
	Mark bool
	// Description writes the desired description to the domain, live when it runs, before the
	// record: the host does not have it. A member whose description was not read gets it
	// written. Only a live change writes it on its own; a restart or a replacement defines it.
	Description bool
	// Record writes the member's record at the end of a live change: always, but for a change
	// of the description alone, which the description write applies (see Described).
	Record bool
	// Define defines a running member that lost its persistent definition again, first, from
	// its record as it was built (its UUID, and its autostart), without touching the running
	// domain. A restart or a replacement defines it anyway.
	Define bool
	// Volumes is every volume the operation makes, keeps, recreates, deletes or releases.
	Volumes []VolumeOp
	// Detach lists the devices taken off the domain; Attach the disks put on it live; Grow the
	// disks grown, live or, in a restart, while the domain is down.
	Detach []string
	Attach []DesiredDisk
	Grow   []DesiredDisk
	// Staging is the volume a replacement first makes its new boot volume as, while the old
	// member still runs, so that a bad image fails before anything is stopped.
	Staging string
	// Seed is what the operation does to the member's NoCloud seed volume.
	Seed SeedOp
	// SeedKept says that the member's current seed holds the write-only user data the seed
	// written is made with (seedKeepsUserData): a run without the group's apply takes it from
	// there.
	SeedKept bool
	// NVRAM is the fate of the member's NVRAM volume (see NVRAMFate): Keep, Recreate or Delete.
	NVRAM Fate
	// Password sets the console's password live: a live change to a new password version.
	Password bool
	// Reserve are the address reservations the operation makes (or checks) before the member
	// starts; Release those it deletes: the member's own host entries, by its MACs.
	Reserve []Reservation
	Release []Reservation
	// Tasks are the operation as it runs, in order (see Task); the fields above say what it
	// does, for the plan's words, and the executor reads only these. Early are tasks the
	// executor runs for every operation of the wave before any operation's Tasks: the shutdown
	// requests of members going away, whose waits then overlap.
	Early []Task
	Tasks []Task
	// Sweep asks the executor to check, once the wave is done, that the member this operation
	// deleted is gone: one started behind Terraform's back while it was deleted is powered off.
	Sweep bool
	// Move is the move an OpMove carries out; its volumes are Volumes (Keep: copied).
	Move *MemberMove
	// Rollback marks an operation of a rollback (PlanRollback): it is never rolled back itself.
	Rollback bool
}

// Wave is a set of operations that run together; the next wave starts only when every operation
// of this one succeeded.
type Wave struct {
	Ops []Operation
}

// StagingVolumeName is the name a replacement's new boot volume is staged under. Device names
// cannot hold a dot, so it never collides with a member's own volume.
func StagingVolumeName(instance string) string {
	return instance + "-" + BootDeviceName + ".staging." + VolumeFormat
}

// Budget is how many members may be unavailable at once: max_unavailable, or its percentage of
// the target size rounded down, and at least 1.
func (p UpdatePolicy) Budget(targetSize int) int {
	if p.MaxUnavailablePercent > 0 {
		return max(targetSize*p.MaxUnavailablePercent/100, 1)
	}
	return max(p.MaxUnavailable, 1)
}

// ParseMaxUnavailable reads max_unavailable as users write it: a whole number of members, at
// least 1, or a percentage of the target size from "1%" to "100%".
func ParseMaxUnavailable(s string) (fixed, percent int, err error) {
	if num, ok := strings.CutSuffix(s, "%"); ok {
		if _, err := fmt.Sscanf(num, "%d", &percent); err != nil || fmt.Sprint(percent) != num || percent < 1 || percent > 100 {
			return 0, 0, fmt.Errorf("%q is not a percentage from 1%% to 100%%", s)
		}
		return 0, percent, nil
	}
	if _, err := fmt.Sscanf(s, "%d", &fixed); err != nil || fmt.Sprint(fixed) != s || fixed < 1 {
		return 0, 0, fmt.Errorf("%q is neither a whole number of members of at least 1 nor a percentage such as \"25%%\"", s)
	}
	return fixed, 0, nil
}

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
	op := Operation{Kind: OpLive, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power}
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
	op := Operation{Kind: OpRestart, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
	if op.Power == "" {
		op.Power = s.Group.DesiredStatus()
	}
	op.Grow, _, _, op.Volumes = diskChanges(s, o, st, env)
	if seedChanged(o, st.Plan.Desired) {
		op.Seed, op.SeedKept = SeedWrite, seedKeepsUserData(o, st.Plan.Desired)
	}
	op.Reserve, op.Release = Reservations(s.Group.Name, st.Plan.Desired), Releases(s.Group.Name, o.Name, &st.Plan.Desired, heldStates(o)...)
	return op
}

// replaceOp plans a recreation: the new boot volume is staged first, then the old domain goes,
// its stateless volumes are recreated, its preserved ones kept, and the new domain is defined.
func replaceOp(s GroupState, o Observed, st Step, env Env) Operation {
	op := Operation{Kind: OpReplace, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
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
		del = append(del, s.withTasks(Operation{Kind: OpDelete, Name: name, Index: o.Index, Host: HostOf(o.Host), Reason: "scale-in", Power: deletionPower(o), Volumes: deletionVolumes(s, o, env), Seed: deletionSeed(o, env), NVRAM: deletionNVRAM(o), Release: deletionReleases(s, o)}))
	}
	for _, m := range p.Create {
		create = append(create, s.withTasks(Operation{Kind: OpCreate, Name: m.Name, Index: m.Index, New: m, Host: HostOf(m.Host), Reason: "new member",
			Power: s.Group.DesiredStatus(), Volumes: creationVolumes(m.Plan.Desired, s.Group.Template, env), Seed: creationSeed(m.Plan.Desired), NVRAM: creationNVRAM(m.Plan.Desired),
			Reserve: Reservations(s.Group.Name, m.Plan.Desired)}))
	}
	var down, up []Operation
	fixed := make(map[string]bool, len(p.Steps))
	for _, st := range p.Steps {
		o := byName[st.Name]
		fixed[st.Name] = true
		switch {
		case st.Preserve != nil && !st.Changed() && st.Power == "":
			live = append(live, s.withTasks(Operation{Kind: OpMark, Name: st.Name, Index: st.Index, Host: HostOf(o.Host), Step: st, Reason: st.Preserve.Why}))
		case !st.Disruptive():
			live = append(live, s.withTasks(liveOp(s, o, st, env)))
		case st.Action == ActionReplace && unavailable(s.Group, o):
			down = append(down, s.withTasks(replaceOp(s, o, st, env)))
		case st.Action == ActionReplace:
			up = append(up, s.withTasks(replaceOp(s, o, st, env)))
		case unavailable(s.Group, o):
			down = append(down, s.withTasks(restartOp(s, o, st, env)))
		default:
			up = append(up, s.withTasks(restartOp(s, o, st, env)))
		}
	}
	// An abandonment writes one record and waits for nothing: it goes first, with nothing else
	// of the plan depending on it.
	abandon := make([]Operation, 0, len(p.Abandon))
	for _, o := range p.Abandon {
		abandon = append(abandon, s.withTasks(Operation{Kind: OpAbandon, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Reason: "abandoned",
			Step: Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance}}))
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

// moveWaves adds the plan's moves, last: the ends of cut-off moves and the moves of members that
// are down in one wave, then live moves a budget's worth at a time (a live move keeps its member
// available, and the budget still bounds the load), then the cold moves of running members as
// many at a time as the budget leaves once the members that stay down are counted.
func (p *GroupPlan) moveWaves(s GroupState, byName map[string]Observed, budget, room int) {
	var down, live, cold []Operation
	for _, mv := range p.Moves {
		o := byName[mv.Name]
		op := s.withTasks(moveOp(s, o, mv))
		switch {
		case mv.Phase != MoveStart || o.Status != StatusRunning:
			down = append(down, op)
		case mv.Move.Live:
			live = append(live, op)
		default:
			cold = append(cold, op)
		}
	}
	if len(down) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: down})
	}
	for ops := range slices.Chunk(live, budget) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
	if room < 1 && len(cold) > 0 {
		for _, op := range cold {
			p.Blocked = append(p.Blocked, Blocked{Name: op.Name,
				Problem: fmt.Sprintf("its cold move (%s) takes it down, but max_unavailable (%d) is used up by members that are down and that this plan does not bring back", op.Move.Move, budget)})
		}
		return
	}
	for ops := range slices.Chunk(cold, max(room, 1)) {
		p.Waves = append(p.Waves, Wave{Ops: ops})
	}
}

// Ops counts the operations of every wave.
func (p GroupPlan) Ops() int {
	n := 0
	for _, w := range p.Waves {
		n += len(w.Ops)
	}
	return n
}
