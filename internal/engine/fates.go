package engine

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
	states := append([]DesiredInstance{mi.Current, deref(mi.InFlight), now}, s.releasedStates(o.Name, env)...)
	var ops []VolumeOp
	for _, d := range knownVolumes(o) {
		made := createdByGroup(o.Name, d.DeviceName, d.Source, mi.Current, deref(mi.InFlight))
		fate := VolumeFate(protection(d.DeviceName, d.Source, states...), made, PermanentDeletion)
		ops = append(ops, VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: fate})
	}
	return append(ops, stagingCleanup(o.Name, env)...)
}

// stagingCleanup deletes the member's staged boot volume, which is there only when a replacement
// was interrupted: one the pool listing did not show needs no call.
func stagingCleanup(instance string, env Env) []VolumeOp {
	if staging := StagingVolumeName(instance); env.Volumes == nil || env.Volumes[staging] {
		return []VolumeOp{{DeviceName: BootDeviceName, Volume: staging, Fate: Delete}}
	}
	return nil
}

// deletionPower is what a deletion does to the member's power first: a member seen shut off
// needs no shutdown (one started since is found after the wave and powered off, as a safety net).
func deletionPower(o Observed) Status {
	if o.Status == StatusStopped {
		return ""
	}
	return StatusStopped
}

// creationVolumes decides the fate of the own volumes a new member needs, and clears a staged
// boot volume an interrupted replacement may have left.
func creationVolumes(desired DesiredInstance, t Template, env Env) []VolumeOp {
	var ops []VolumeOp
	for _, d := range desired.Disks {
		if d.SizeMiB == 0 || d.Source != VolumeName(desired.Name, d.DeviceName) {
			continue
		}
		op := ownVolumeOp(d, t, VolumeFate(d, true, Creation))
		op.Absent = op.Fate == Recreate && env.Volumes != nil && !env.Volumes[op.Volume]
		ops = append(ops, op)
	}
	return append(ops, stagingCleanup(desired.Name, env)...)
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
	p := protection(d.DeviceName, d.Source, append([]DesiredInstance{mi.Current, deref(mi.InFlight), desired}, s.releasedStates(o.Name, env)...)...)
	return VolumeOp{DeviceName: d.DeviceName, Volume: d.Source, Fate: VolumeFate(p, made, PermanentDeletion)}
}

// NVRAMFate decides the fate of an EFI member's NVRAM volume on an event, as VolumeFate does for
// disks. It is the member's alone and never preserved (a policy or config cannot name it): it
// holds what the firmware learnt about this instance's boot disk, so it is made fresh with every
// new instance and deleted with the member. A restart is no event: it is kept, and the firmware
// finds its boot entries again.
func NVRAMFate(e Event) Fate {
	if e == PermanentDeletion {
		return Delete
	}
	return Recreate
}

// Fate is what happens to a volume.
type Fate int

const (
	// Keep leaves the volume as it is.
	Keep Fate = iota
	// Recreate deletes the volume and creates it blank again from the template.
	Recreate
	// Delete deletes the volume for good.
	Delete
	// Release detaches the volume and leaves it in place, for a disk the group did not create.
	Release
)

func (f Fate) String() string {
	return [...]string{"keep", "recreate", "delete", "release"}[f]
}

// Event is what happens to an instance.
type Event int

const (
	// Recreation is a replacement, an autoheal or an update that recreates the domain.
	Recreation Event = iota
	// PermanentDeletion is scale-in, group destroy or remove_instance_on_destroy, and a disk the
	// instance stops having for good (removed from the template, or replaced by a config's volume).
	PermanentDeletion
	// Creation is a member created where no domain of its identity exists: a new member, or one
	// whose domain went away.
	Creation
)

func (e Event) String() string {
	return [...]string{"recreation", "permanent deletion", "creation"}[e]
}

// VolumeFate decides a disk's volume's fate on an event; it is the only place that does, and
// every plan's volume operations come from it. A preserved disk survives every recreation and
// creation; on a permanent deletion it is deleted only with ON_PERMANENT_INSTANCE_DELETION. A
// stateless template disk is recreated with the instance and deleted with it. A disk that the
// group did not create is never the group's to delete.
//
// On creation, an existing stateless boot volume is recreated: it is an overlay of the image of
// whatever revision made it, so reusing it would boot a new member on an old image. An existing
// stateless data volume is reused as it is (identity reuse): it was blank when made, and it may
// hold what a NEVER rule kept when an earlier member of that name was deleted.
func VolumeFate(d DesiredDisk, fromTemplate bool, e Event) Fate {
	switch {
	case d.Preserved && e == PermanentDeletion && d.DeleteRule == DeleteOnPermanentDeletion:
		return Delete
	case d.Preserved && e == PermanentDeletion:
		return Release
	case d.Preserved:
		return Keep
	case !fromTemplate:
		return Release
	case e == Creation && d.DeviceName != BootDeviceName:
		return Keep
	case e == PermanentDeletion:
		return Delete
	default:
		return Recreate
	}
}
