package engine

import (
	"fmt"
	"slices"
	"strings"
)

// Env is what a plan depends on besides the group's record and what the host shows.
type Env struct {
	// Run identifies one run of the provider, that is one terraform command. What the stateful
	// policy and the configs preserved when the run began still protects its volumes from every
	// permanent deletion of that run (see GroupState.Release).
	Run string
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
)

func (k OpKind) String() string {
	return [...]string{"delete", "create", "power", "refresh", "restart", "replace"}[k]
}

// Done is the kind as a past participle, for progress logs ("instance 3 of 20 replaced").
func (k OpKind) Done() string {
	return [...]string{"deleted", "created", "powered", "refreshed", "restarted", "replaced"}[k]
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
}

// Creates reports whether the operation makes the volume when it is missing.
func (v VolumeOp) Creates() bool { return v.Fate == Keep || v.Fate == Recreate }

// Operation is one typed step of a rollout, with everything decided: the executor carries it out
// as it is.
type Operation struct {
	Kind  OpKind
	Name  string
	Index int
	// Reason says why, in a few words: "scale-in", "boot image", "metadata role changed".
	Reason string
	// Step is the plan of an existing member (every kind but OpCreate and OpDelete); New is the
	// member an OpCreate makes.
	Step Step
	New  NewMember
	// Power is the state the member ends in, StatusRunning or StatusStopped; empty leaves it.
	Power string
	// Reset powers a paused or crashed member off before it is started again.
	Reset bool
	// Mark writes the in-flight marker before the change, because the change takes more than
	// one write; a change that is one record write needs none.
	Mark bool
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
}

// Desired is the domain the operation builds or changes the member into.
func (o Operation) Desired() DesiredInstance {
	if o.Kind == OpCreate {
		return o.New.Plan.Desired
	}
	return o.Step.Plan.Desired
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

// Released is what the stateful policy and the configs preserved at some point of one run.
type Released struct {
	Run     string                 `json:"run"`
	Policy  Policy                 `json:"stateful_policy"`
	Configs map[string]ConfigEntry `json:"per_instance_configs,omitempty"`
}

// Release remembers what the policy and the configs preserve now, before a change to either,
// for the rest of the run. Terraform destroys a group's policy and configs before the group, so
// without this a `terraform destroy` would make every preserved disk stateless just before the
// group's destroy deleted them. A removal still makes the disks stateless at once; only the
// permanent deletions of the same run keep honouring the rules that held when it began. A
// device released under both rules keeps the more protective NEVER.
func (s *GroupState) Release(run string) {
	if s.Released == nil || s.Released.Run != run {
		s.Released = &Released{Run: run}
	}
	r := s.Released
	for _, d := range s.StatefulPolicy().Disks {
		r.Policy.Disks = mergePolicyDisk(r.Policy.Disks, d)
	}
	for name, c := range s.Configs {
		if r.Configs == nil {
			r.Configs = map[string]ConfigEntry{}
		}
		kept := r.Configs[name]
		for _, d := range c.Config.Disks {
			kept.Config.Disks = mergeConfigDisk(kept.Config.Disks, d)
		}
		r.Configs[name] = kept
	}
}

func mergePolicyDisk(disks []PolicyDisk, d PolicyDisk) []PolicyDisk {
	for i, x := range disks {
		if x.DeviceName == d.DeviceName {
			if orDefault(d.DeleteRule, defaultDeleteRule) == DeleteNever {
				disks[i].DeleteRule = DeleteNever
			}
			return disks
		}
	}
	return append(disks, d)
}

func mergeConfigDisk(disks []ConfigDisk, d ConfigDisk) []ConfigDisk {
	for i, x := range disks {
		if x.DeviceName == d.DeviceName && x.Source == d.Source {
			if orDefault(d.DeleteRule, defaultDeleteRule) == DeleteNever {
				disks[i].DeleteRule = DeleteNever
			}
			return disks
		}
	}
	return append(disks, d)
}

// releasedState is the instance's disks as this run's released policy and configs preserved
// them, or nothing when nothing was released in this run.
func (s GroupState) releasedState(name string, env Env) DesiredInstance {
	r := s.Released
	if r == nil || env.Run == "" || r.Run != env.Run {
		return DesiredInstance{}
	}
	fromPolicy, fromConfig := Preserve(name, s.Group.Template, r.Policy, r.Configs[name].Config)
	// Desire lays config entries over template disks, so two released entries of one device
	// with different sources both count: check each source on its own.
	d := Desire(name, s.Group.Template, fromPolicy, PreservedState{})
	for _, c := range fromConfig.Disks {
		d.Disks = append(d.Disks, DesiredDisk{DeviceName: c.DeviceName, Source: c.Source, Preserved: true, DeleteRule: c.DeleteRule})
	}
	return d
}

// protection is the volume as the most protective of the states that name it: the applied
// record, an interrupted change, the desired state, and what this run released. A state protects
// a volume only through a disk of that very source.
func protection(device, volume string, states ...DesiredInstance) DesiredDisk {
	out := DesiredDisk{DeviceName: device, Source: volume}
	for _, st := range states {
		for _, d := range st.Disks {
			if d.Source != volume || !d.Preserved {
				continue
			}
			if !out.Preserved || orDefault(d.DeleteRule, defaultDeleteRule) == DeleteNever {
				out.Preserved, out.DeleteRule = true, orDefault(d.DeleteRule, defaultDeleteRule)
			}
		}
	}
	return out
}

// createdByGroup reports whether a state knows the volume as one the group made from its
// template: only those are ever the group's to delete or recreate.
func createdByGroup(instance string, device, volume string, states ...DesiredInstance) bool {
	if volume != VolumeName(instance, device) {
		return false
	}
	for _, st := range states {
		if d, ok := st.DiskByName(device); ok && d.Source == volume && d.SizeMiB > 0 {
			return true
		}
	}
	return false
}

func deref(d *DesiredInstance) DesiredInstance {
	if d == nil {
		return DesiredInstance{}
	}
	return *d
}

// knownVolumes lists, once each, the member's own volumes that the record, an interrupted
// change or the domain itself know, in device order.
func knownVolumes(o Observed) []DesiredDisk {
	seen := map[string]bool{}
	var out []DesiredDisk
	for _, st := range [][]DesiredDisk{o.Instance.Current.Disks, deref(o.Instance.InFlight).Disks, o.Attached} {
		for _, d := range st {
			if seen[d.Source] || d.Source != VolumeName(o.Name, d.DeviceName) {
				continue
			}
			seen[d.Source] = true
			out = append(out, d)
		}
	}
	return out
}

// deletionVolumes decides the fate of every own volume of a member deleted for good. What the
// record, an interrupted change, the policy and config the group holds now, and this run's
// released state preserve all protect a volume: a policy stored a moment ago and not yet applied
// to the member counts as much as the member's own record.
func deletionVolumes(s GroupState, o Observed, env Env) []VolumeOp {
	mi := o.Instance
	fromPolicy, fromConfig := Preserve(o.Name, s.Group.Template, s.StatefulPolicy(), s.Config(o.Name))
	now := Desire(o.Name, s.Group.Template, fromPolicy, fromConfig)
	states := []DesiredInstance{mi.Current, deref(mi.InFlight), now, s.releasedState(o.Name, env)}
	var ops []VolumeOp
	for _, d := range knownVolumes(o) {
		made := createdByGroup(o.Name, d.DeviceName, d.Source, mi.Current, deref(mi.InFlight))
		fate := VolumeFate(protection(d.DeviceName, d.Source, states...), made, PermanentDeletion)
		ops = append(ops, VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: fate})
	}
	return append(ops, VolumeOp{DeviceName: BootDeviceName, Volume: StagingVolumeName(o.Name), Fate: Delete})
}

// creationVolumes decides the fate of the own volumes a new member needs, and clears a staged
// boot volume an interrupted replacement may have left.
func creationVolumes(desired DesiredInstance, t Template) []VolumeOp {
	var ops []VolumeOp
	for _, d := range desired.Disks {
		if d.SizeMiB == 0 || d.Source != VolumeName(desired.Name, d.DeviceName) {
			continue
		}
		ops = append(ops, ownVolumeOp(d, t, VolumeFate(d, true, Creation)))
	}
	return append(ops, VolumeOp{DeviceName: BootDeviceName, Volume: StagingVolumeName(desired.Name), Fate: Delete})
}

func ownVolumeOp(d DesiredDisk, t Template, fate Fate) VolumeOp {
	v := VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: fate, SizeMiB: d.SizeMiB}
	if d.DeviceName == BootDeviceName {
		v.BackingImage = t.BootDisk.SourceImage
	}
	return v
}

// dropped decides the fate of an attached disk the member stops having (detached, or swapped
// for another source): the group's own stateless volume is deleted, anything else released.
func dropped(s GroupState, o Observed, desired DesiredInstance, d DesiredDisk, env Env) VolumeOp {
	mi := o.Instance
	made := createdByGroup(o.Name, d.DeviceName, d.Source, mi.Current, deref(mi.InFlight))
	p := protection(d.DeviceName, d.Source, mi.Current, deref(mi.InFlight), desired, s.releasedState(o.Name, env))
	return VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: VolumeFate(p, made, PermanentDeletion)}
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
	op := Operation{Kind: OpLive, Name: o.Name, Index: o.Index, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power}
	op.Grow, op.Detach, op.Attach, op.Volumes = diskChanges(s, o, st, env)
	op.Mark = o.Unmanaged || o.Instance.InFlight != nil || len(op.Detach)+len(op.Attach)+len(op.Grow) > 0
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
	op := Operation{Kind: OpRestart, Name: o.Name, Index: o.Index, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
	if op.Power == "" {
		op.Power = s.Group.DesiredStatus()
	}
	op.Grow, _, _, op.Volumes = diskChanges(s, o, st, env)
	return op
}

// replaceOp plans a recreation: the new boot volume is staged first, then the old domain goes,
// its stateless volumes are recreated, its preserved ones kept, and the new domain is defined.
func replaceOp(s GroupState, o Observed, st Step, env Env) Operation {
	op := Operation{Kind: OpReplace, Name: o.Name, Index: o.Index, Step: st, Reason: JoinReasons(st.Plan.Reasons), Power: st.Power, Mark: true}
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
	var del, create, live []Operation
	for _, name := range p.Delete {
		o := byName[name]
		del = append(del, Operation{Kind: OpDelete, Name: name, Index: o.Index, Reason: "scale-in", Power: StatusStopped, Volumes: deletionVolumes(s, o, env)})
	}
	for _, m := range p.Create {
		create = append(create, Operation{Kind: OpCreate, Name: m.Name, Index: m.Index, New: m, Reason: "new member",
			Power: s.Group.DesiredStatus(), Volumes: creationVolumes(m.Plan.Desired, s.Group.Template)})
	}
	var down, up []Operation
	fixed := map[string]bool{}
	for _, st := range p.Steps {
		o := byName[st.Name]
		fixed[st.Name] = true
		switch {
		case !st.Disruptive():
			live = append(live, liveOp(s, o, st, env))
		case st.Action == ActionReplace && unavailable(s.Group, o):
			down = append(down, replaceOp(s, o, st, env))
		case st.Action == ActionReplace:
			up = append(up, replaceOp(s, o, st, env))
		case unavailable(s.Group, o):
			down = append(down, restartOp(s, o, st, env))
		default:
			up = append(up, restartOp(s, o, st, env))
		}
	}
	for _, ops := range [][]Operation{del, create, live} {
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
		return
	}
	for ops := range slices.Chunk(up, max(room, 1)) {
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

// PlanDestroy deletes every member the group created for good, then the group's own volumes
// that no member holds any more (left by an interruption or kept by an earlier deletion), each
// with the fate VolumeFate gives it. A volume a NEVER rule protects, now or earlier in this run,
// stays.
func PlanDestroy(s GroupState, observed []Observed, volumes []string, env Env) GroupPlan {
	var p GroupPlan
	known := map[string]bool{}
	var del []Operation
	for _, o := range observed {
		if o.Unmanaged {
			continue
		}
		op := Operation{Kind: OpDelete, Name: o.Name, Index: o.Index, Reason: "group destroyed", Power: StatusStopped, Volumes: deletionVolumes(s, o, env)}
		for _, v := range op.Volumes {
			known[v.Volume] = true
		}
		del = append(del, op)
	}
	if len(del) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: del})
	}
	var orphans []VolumeOp
	for _, v := range volumes {
		if known[v] {
			continue
		}
		instance, device, staged, ok := s.ownerOf(v)
		if !ok {
			continue
		}
		if staged {
			orphans = append(orphans, VolumeOp{DeviceName: BootDeviceName, Volume: v, Fate: Delete})
			continue
		}
		if _, inTemplate := s.Group.Template.DiskByName(device); !inTemplate && device != BootDeviceName {
			continue
		}
		fromPolicy, fromConfig := Preserve(instance, s.Group.Template, s.StatefulPolicy(), s.Config(instance))
		now := Desire(instance, s.Group.Template, fromPolicy, fromConfig)
		fate := VolumeFate(protection(device, v, now, s.releasedState(instance, env)), true, PermanentDeletion)
		if fate == Delete {
			orphans = append(orphans, VolumeOp{DeviceName: device, Volume: v, Fate: Delete})
		}
	}
	if len(orphans) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: []Operation{{Kind: OpDelete, Reason: "volumes no member holds", Volumes: orphans}}})
	}
	return p
}

// ownerOf reads a volume name as one of the group's own: the instance and the device it
// belongs to, or a staged boot volume. Named members count when a config names them.
func (s GroupState) ownerOf(volume string) (instance, device string, staged, ok bool) {
	stem, ok := strings.CutSuffix(volume, "."+VolumeFormat)
	if !ok {
		return "", "", false, false
	}
	if inst, ok := strings.CutSuffix(stem, "-"+BootDeviceName+".staging"); ok && s.owns(inst) {
		return inst, BootDeviceName, true, true
	}
	rest, ok := strings.CutPrefix(stem, s.Group.Base+"-")
	if ok {
		if i := strings.IndexByte(rest, '-'); i > 0 {
			inst := s.Group.Base + "-" + rest[:i]
			if _, isIndex := ParseInstanceIndex(s.Group.Base, inst); isIndex {
				return inst, rest[i+1:], false, ValidDeviceName(rest[i+1:]) || rest[i+1:] == BootDeviceName
			}
		}
	}
	for name := range s.Configs {
		if dev, ok := strings.CutPrefix(stem, name+"-"); ok && s.Named(name) && (ValidDeviceName(dev) || dev == BootDeviceName) {
			return name, dev, false, true
		}
	}
	return "", "", false, false
}

func (s GroupState) owns(instance string) bool {
	if _, ok := ParseInstanceIndex(s.Group.Base, instance); ok {
		return true
	}
	_, ok := s.Configs[instance]
	return ok
}

// PlanRemove deletes one member for good, as remove_instance_on_destroy asks.
func PlanRemove(s GroupState, observed []Observed, name string, env Env) GroupPlan {
	var p GroupPlan
	for _, o := range observed {
		if o.Name == name && !o.Unmanaged {
			p.Waves = []Wave{{Ops: []Operation{{Kind: OpDelete, Name: o.Name, Index: o.Index, Reason: "per-instance config destroyed",
				Power: StatusStopped, Volumes: deletionVolumes(s, o, env)}}}}
		}
	}
	return p
}
