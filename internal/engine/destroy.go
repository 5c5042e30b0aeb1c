package engine

import (
	"sort"
	"strings"
)

// PlanDestroy deletes every member the group created for good, then the group's own volumes
// that no member holds any more (left by an interruption or kept by an earlier deletion), each
// with the fate VolumeFate gives it, host by host: volumes holds each host's volume names. A
// volume a NEVER rule protects, now, earlier in this run, or in an unfinished release of an
// earlier run (see Released), stays. A member whose host cannot be reached blocks the destroy:
// nothing is deleted until every member can be.
//
// Only what the group made is deleted: a volume of the group's naming scheme that its inventory
// does not hold (made by hand, or there before the group would have made it) is left, and the
// plan names it (Left); so is a member's own volume that the inventory does not hold.
func PlanDestroy(s GroupState, observed []Observed, volumes map[string][]string, env Env) GroupPlan {
	env.groupDestroy = true
	s = s.inventoriedFrom(observed, listingOf(volumes, nil, nil), nil)
	var p GroupPlan
	known := map[string]bool{}
	adoptedDisks := map[string]bool{}
	var del []Operation
	for _, o := range observed {
		// An NVRAM of a member's name is swept (orphan) only when no domain of that name is
		// there: a deleted member's own goes with its operation, and any other domain's stays.
		known[HostOf(o.Host)+"/"+NVRAMVolumeName(o.Name)] = true
		if o.Unmanaged {
			continue
		}
		if o.Unknown {
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: unreachable(o.Host) + ": the group is destroyed once every member's host answers"})
			continue
		}
		op := Operation{Kind: OpDelete, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Reason: "group destroyed", Power: deletionPower(o), Volumes: deletionVolumes(s, o, env), Seed: deletionSeed(o, env), NVRAM: deletionNVRAM(o), Release: deletionReleases(s, o)}
		for _, v := range op.Volumes {
			known[HostOf(o.Host)+"/"+v.Volume] = true
		}
		known[HostOf(o.Host)+"/"+SeedVolumeName(o.Name)] = true
		if o.Instance.Template.Adopted {
			// An adopted member's disks are its own whatever their names (one given back after an
			// abandon has the group's): kept, and named as its own (DestroyedMembers).
			for _, d := range o.Instance.Current.Disks {
				adoptedDisks[HostOf(o.Host)+"/"+d.Source] = true
			}
		}
		del = append(del, s.withTasks(op))
	}
	if len(p.Blocked) > 0 {
		return p
	}
	if len(del) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: del})
	}
	hosts := make([]string, 0, len(volumes))
	for h := range volumes {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	var orphanOps []Operation
	for _, h := range hosts {
		var orphans []VolumeOp
		for _, v := range volumes[h] {
			if !s.Inventory.Has(h, v) {
				// Not the group's, whether a member's name or none is on it: left, and named
				// (here, unless it is an adopted member's disk, which its account names).
				if s.schemeVolume(v) && !adoptedDisks[HostOf(h)+"/"+v] {
					p.Left = append(p.Left, Left{Host: HostOf(h), Volume: v})
				}
				continue
			}
			if known[HostOf(h)+"/"+v] {
				continue
			}
			if s.Inventory.reclaimed(h, v) {
				// Taken over from a kept record and not yet preserved by a policy: it stays.
				p.Kept = append(p.Kept, Left{Host: HostOf(h), Volume: v})
				continue
			}
			if s.madeImage(HostOf(h), v) {
				// An image volume the group made: its members are deleted in the wave before.
				orphans = append(orphans, VolumeOp{Volume: v, Fate: Delete})
				continue
			}
			if op, ok := s.orphan(v, env); ok {
				orphans = append(orphans, op)
			} else {
				// The group's own, and its rules keep it: a disk an earlier scale-in kept
				// under a NEVER delete_rule, which the destroy's warning names too.
				p.Kept = append(p.Kept, Left{Host: HostOf(h), Volume: v})
			}
		}
		if len(orphans) > 0 {
			orphanOps = append(orphanOps, s.withTasks(Operation{Kind: OpDelete, Host: HostOf(h), Reason: "volumes no member holds", Volumes: orphans}))
		}
	}
	if len(orphanOps) > 0 {
		p.Waves = append(p.Waves, Wave{Ops: orphanOps})
	}
	p.KeptRecord = keptRecordOf(s.Inventory, p.Waves)
	return p
}

// orphan is the deletion of one of the group's own volumes that no member holds, when its
// rules let it go.
func (s GroupState) orphan(v string, env Env) (VolumeOp, bool) {
	if inst, ok := strings.CutSuffix(v, "-cidata.iso"); ok && s.owns(inst) && SeedVolumeName(inst) == v {
		if s.Group.Abandoned(inst) {
			// An abandoned domain keeps every volume it has, its seed among them.
			return VolumeOp{}, false
		}
		// A seed is made from the template and the member's name: it holds nothing of its own.
		return VolumeOp{Volume: v, Fate: Delete}, true
	}
	if inst, ok := strings.CutSuffix(v, "-"+NVRAMDeviceName+".fd"); ok && s.owns(inst) && NVRAMVolumeName(inst) == v {
		// Left by a deletion interrupted before it (its name is not a disk's); it holds only
		// the UEFI variables libvirt made for a member that is gone, unless the domain was
		// abandoned, which keeps everything it has.
		return VolumeOp{DeviceName: NVRAMDeviceName, Volume: v, Fate: Delete}, !s.Group.Abandoned(inst)
	}
	instance, device, staged, ok := s.ownerOf(v)
	if !ok || s.Group.Abandoned(instance) {
		// Not the group's, or the volume of a domain it abandoned, which stays as it is.
		return VolumeOp{}, false
	}
	if staged {
		return VolumeOp{DeviceName: BootDeviceName, Volume: v, Fate: Delete}, true
	}
	if _, inTemplate := s.Group.Template.DiskByName(device); !inTemplate && device != BootDeviceName {
		return VolumeOp{}, false
	}
	fromPolicy, fromConfig := Preserve(instance, s.Group.Template, s.StatefulPolicy(), s.Config(instance))
	now := Desire(instance, s.Group.Template, fromPolicy, fromConfig)
	fate := VolumeFate(protection(device, v, append([]DesiredInstance{now}, s.releasedStates(instance, env)...)...), true, PermanentDeletion)
	return VolumeOp{DeviceName: device, Volume: v, Fate: Delete}, fate == Delete
}

// schemeVolume reports whether the volume's name is one of the group's own (a member's disk,
// staged boot volume, NVRAM or seed) of a member it has not abandoned: one a sweep would take for
// the group's if a name were proof.
func (s GroupState) schemeVolume(v string) bool {
	for _, suffix := range []string{"-cidata.iso", "-" + NVRAMDeviceName + ".fd"} {
		if inst, ok := strings.CutSuffix(v, suffix); ok && s.owns(inst) {
			return !s.Group.Abandoned(inst)
		}
	}
	instance, _, _, ok := s.ownerOf(v)
	return ok && !s.Group.Abandoned(instance)
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
	s = s.Inventoried(observed, env)
	var p GroupPlan
	for _, o := range observed {
		if o.Name == name && !o.Unmanaged {
			if o.Unknown {
				p.Blocked = []Blocked{{Name: o.Name, Problem: unreachable(o.Host) + ": the member is removed once its host answers"}}
				return p
			}
			p.Waves = []Wave{{Ops: []Operation{s.withTasks(Operation{Kind: OpDelete, Name: o.Name, Index: o.Index, Host: HostOf(o.Host), Observed: o.Status, Reason: "per-instance config destroyed",
				Power: deletionPower(o), Volumes: deletionVolumes(s, o, env), Seed: deletionSeed(o, env), NVRAM: deletionNVRAM(o), Release: deletionReleases(s, o)})}}}
		}
	}
	return p
}

// Takedown is how a deletion takes its member down before it undefines it, as its tasks do it.
type Takedown int

const (
	// TakedownNone: the member is stopped already and is undefined as it is.
	TakedownNone Takedown = iota
	// TakedownShutdown: an ACPI shutdown request, a wait of up to shutdown_timeout, then a
	// power-off if it has not stopped.
	TakedownShutdown
	// TakedownPowerOff: a power-off at once, with no request (the member cannot act on one,
	// Destroyed.Halted, or shutdown_timeout is "0s").
	TakedownPowerOff
)

// Destroyed is a member a destroy deletes, as its plan tells it: whether the group adopted it,
// how it is taken down, and the volumes of its disks that stay.
type Destroyed struct {
	Name    string
	Adopted bool
	// Takedown is how its deletion stops it; Halted, for a TakedownPowerOff, the status it was
	// observed in that cannot act on a shutdown request ("" when shutdown_timeout is "0s").
	Takedown Takedown
	Halted   Status
	// Kept are the volumes that stay, sources as configs write them: those a NEVER rule keeps,
	// and every disk of an adopted member (they came with it).
	Kept []string
}

// DestroyedMembers lists the members the destroy plan p deletes, in its order, each with what
// it keeps; observed are the members p was planned from.
func (p GroupPlan) DestroyedMembers(observed []Observed) []Destroyed {
	byName := make(map[string]Observed, len(observed))
	for _, o := range observed {
		byName[o.Name] = o
	}
	var out []Destroyed
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Kind != OpDelete || op.Name == "" {
				continue
			}
			o := byName[op.Name]
			d := Destroyed{Name: op.Name, Adopted: o.Instance.Template.Adopted}
			d.Takedown, d.Halted = takedownOf(op)
			seen := map[string]bool{}
			for _, l := range op.Left {
				// Named with the plan's other volumes the group did not make (LeftVolumes).
				seen[l.Volume] = true
			}
			for _, v := range op.Volumes {
				if v.Fate == Release && !seen[v.Volume] {
					seen[v.Volume] = true
					d.Kept = append(d.Kept, v.Volume)
				}
			}
			if d.Adopted {
				// Its disks are the domain's own, whatever their names: none is deleted.
				for _, disk := range o.Instance.Current.Disks {
					if disk.Source != "" && !seen[disk.Source] {
						seen[disk.Source] = true
						d.Kept = append(d.Kept, disk.Source)
					}
				}
			}
			sort.Strings(d.Kept)
			out = append(out, d)
		}
	}
	return out
}

// takedownOf reads how the deletion op stops its member from its tasks, so that what a destroy
// plan says is what it runs: a shutdown request (an early task, see delete), a power-off at once,
// or neither for a member stopped already.
func takedownOf(op Operation) (Takedown, Status) {
	for _, t := range op.Early {
		if t.Kind == TaskShutdown {
			return TakedownShutdown, ""
		}
	}
	for _, t := range op.Tasks {
		switch t.Kind {
		case TaskShutdown:
			return TakedownShutdown, ""
		case TaskPowerOff:
			return TakedownPowerOff, t.Halted
		default:
			// Every other task is part of the deletion, not of how the domain stops.
		}
	}
	return TakedownNone, ""
}
