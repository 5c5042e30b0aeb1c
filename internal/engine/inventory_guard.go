package engine

import (
	"fmt"
	"slices"
)

// The guard of the inventory: every task that deletes, writes over or attaches a volume asks it
// (see inventory.go for what the inventory holds and how it is kept).

// mayDelete reports whether a task may delete the volume on host: the group made it, or it is
// not there (deleting nothing takes nothing). Before the inventory was asked (a GroupState that
// no plan entry settled), names are trusted as they were.
func (s GroupState) mayDelete(host, volume string) bool {
	if len(s.Listed) == 0 {
		// No pool was listed (a plan made from no listing at all): nothing tells a volume
		// there from one that is not, and names are trusted as they were.
		return true
	}
	if s.Inventory.Has(host, volume) {
		return true
	}
	present, known := s.Listed.present(host, volume)
	return known && !present
}

// foreign reports whether the volume is on host and the group did not make it.
func (s GroupState) foreign(host, volume string) bool {
	if len(s.Listed) == 0 || s.Inventory.Has(host, volume) {
		return false
	}
	present, known := s.Listed.present(host, volume)
	return !known || present
}

// notMade is the plan's word for an object that matches the group's naming scheme and that the
// group did not make.
const notMade = "not made by this group: left"

// Left is a volume a plan leaves because the group did not make it, though its name is one of
// the group's.
type Left struct {
	Host   string
	Volume string
}

func (l Left) String() string {
	return fmt.Sprintf("%s on host %s (%s)", l.Volume, HostOf(l.Host), notMade)
}

// ownFates turns the deletion of every volume of op the group did not make into its release: the
// volume stays, and the operation names it (Left).
func (s GroupState) ownFates(op Operation) Operation {
	if s.Listed == nil {
		return op
	}
	vols := slices.Clone(op.Volumes)
	for i, v := range vols {
		if v.Fate == Delete && op.Kind != OpMove && s.Inventory.reclaimed(op.Host, v.Volume) {
			// Taken over from a kept record: never deleted but by a move (kept.go).
			vols[i].Fate = Keep
			continue
		}
		if v.Fate == Delete && !s.mayDelete(op.Host, v.Volume) {
			vols[i].Fate = Release
			op.Left = append(op.Left, Left{Host: HostOf(op.Host), Volume: v.Volume})
		}
	}
	op.Volumes = vols
	return op
}

// guardTasks asks the inventory of every task that deletes or writes over a volume: a deletion
// of a volume the group did not make is a release (it stays, and the operation names it), or a
// refusal when a later task of the operation would make or use a volume of that name (it would
// write over it, or attach it); a seed or staged volume the group did not make is never written
// over. The volume that a TaskFreshVolume found there after all is the group's only when the
// inventory says so.
func (s GroupState) guardTasks(op *Operation) {
	if s.Listed == nil {
		return
	}
	op.Early = s.guardList(op, op.Early, false)
	op.Tasks = s.guardList(op, op.Tasks, false)
	// An operation that would write over what is not the group's does nothing at all: its
	// refusal is its only task, so that it fails before anything of the member stops or goes.
	// (A TaskFreshVolume's refusal stays where it is: it runs only when the volume appeared
	// after the plan, and a creation has nothing running to stop.)
	var refused []Task
	for _, t := range op.Tasks {
		if t.Kind == TaskRefuse && !slices.ContainsFunc(refused, func(r Task) bool { return r.Volume.Volume == t.Volume.Volume && r.Host == t.Host }) {
			refused = append(refused, t)
		}
	}
	if len(refused) > 0 {
		op.Early, op.Tasks, op.Left = nil, refused, nil
	}
}

func (s GroupState) guardList(op *Operation, tasks []Task, inventoryOnly bool) []Task {
	out := make([]Task, 0, len(tasks))
	for i, t := range tasks {
		host := taskHost(*op, t)
		name := t.Volume.Volume
		switch t.Kind {
		case TaskDeleteVolume, TaskDeleteNVRAM:
			if op.Kind != OpMove && s.Inventory.reclaimed(host, name) {
				// Taken over from a kept record: a move deletes it once its copy is checked;
				// nothing else does, and nothing writes over it (kept.go).
				if usesLater(tasks[i+1:], host, op, name) {
					t = reclaimedRefusal(host, name)
					break
				}
				t = Task{Kind: TaskReleaseVolume, Volume: VolumeOp{DeviceName: t.Volume.DeviceName, Volume: name, Fate: Release}, Host: t.Host}
				break
			}
			ok := s.mayDelete(host, name)
			if inventoryOnly {
				ok = s.Inventory.Has(host, name)
			}
			if ok {
				break
			}
			if usesLater(tasks[i+1:], host, op, name) {
				t = refusal(host, name)
				break
			}
			op.Left = append(op.Left, Left{Host: host, Volume: name})
			t = Task{Kind: TaskReleaseVolume, Volume: VolumeOp{DeviceName: t.Volume.DeviceName, Volume: name, Fate: Release}, Host: t.Host}
		case TaskStage:
			if s.foreign(host, name) {
				t = refusal(host, name)
			}
		case TaskWriteSeed, TaskSwapSeed:
			if seed := SeedVolumeName(op.Name); s.foreign(host, seed) {
				t = refusal(host, seed)
			}
		case TaskSnapshot, TaskRevertSnapshot, TaskDeleteSnapshot:
			// A snapshot is written into its volume, a revert writes over its bytes: only
			// into a volume the group made.
			if v := t.Snapshot.Volume; len(s.Listed) > 0 && !s.Inventory.Has(host, v) {
				t = refusal(host, v)
			}
		case TaskFreshVolume:
			t.Otherwise = s.guardList(op, t.Otherwise, true)
		case TaskMigrate:
			t.Otherwise = s.guardList(op, t.Otherwise, false)
		default:
			// The rest delete and write over nothing.
		}
		out = append(out, t)
	}
	return out
}

// refusal is the task that stops an operation before it writes over a volume it did not make.
func refusal(host, volume string) Task {
	return Task{Kind: TaskRefuse, Volume: VolumeOp{Volume: volume}, Host: host,
		Refusal: fmt.Sprintf("volume %s on host %s has a name of this group's scheme and the group did not make it (%s): a group never deletes, writes over or attaches a volume it did not make. Rename or delete it (virsh vol-delete) if it is garbage", volume, host, notMade)}
}

// reclaimedRefusal is the task that stops an operation before it writes over a volume the group
// took over from the kept record of an earlier group of its name.
func reclaimedRefusal(host, volume string) Task {
	return Task{Kind: TaskRefuse, Volume: VolumeOp{Volume: volume}, Host: host,
		Refusal: fmt.Sprintf("volume %s on host %s was kept by an earlier group of this name (delete_rule NEVER) and this group took it over: it is never deleted or written over until the group's stateful policy (or a per-instance config) preserves that disk. Add the disk to the stateful policy, or delete the volume by hand (virsh vol-delete) if its data is not wanted", volume, host)}
}

// usesLater reports whether a task of tasks makes, writes or attaches the volume on host.
func usesLater(tasks []Task, host string, op *Operation, volume string) bool {
	for _, t := range tasks {
		h := HostOf(op.Host)
		if t.Host != "" {
			h = HostOf(t.Host)
		}
		if h != host {
			continue
		}
		switch t.Kind {
		case TaskCreateVolume, TaskFreshVolume, TaskStage, TaskCopyVolume, TaskPrepareVolume:
			if t.Volume.Volume == volume {
				return true
			}
		case TaskWriteSeed, TaskSwapSeed:
			if SeedVolumeName(op.Name) == volume {
				return true
			}
		case TaskDefine, TaskDefineNext:
			if t.Desired.NVRAM == volume || slices.ContainsFunc(t.Desired.Disks, func(d DesiredDisk) bool { return d.Source == volume }) {
				return true
			}
		default:
			// The rest make, write or attach no volume.
		}
	}
	return false
}

// taskHost is the host a task of op runs on: its own when it names one (a move's tasks on the
// target), else the operation's.
func taskHost(op Operation, t Task) string {
	if t.Host != "" {
		return HostOf(t.Host)
	}
	return HostOf(op.Host)
}
