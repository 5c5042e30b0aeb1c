package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// opRun carries out one operation of a plan, task by task, as the engine listed them; each
// failure names its task.
type opRun struct {
	r  *Reconciler
	s  engine.GroupState
	op engine.Operation
	// backend is the host the running task is on: the operation's, or a move's other host while
	// a task of the move runs there (task). Task code reaches it through the accessors of its
	// pieces (domains, volumes, ...), never whole.
	backend backend.Backend
	// requests are the shutdown requests of the Execute run this operation is part of.
	requests *shutdowns
	down     bool // the member has been taken down (see engine.TaskKind.Down)
	// startedAt is when the operation started the member: its ready_timeout counts from then.
	startedAt time.Time
	// probes bounds the probes of the wave's waits for ready (nil: unbounded).
	probes chan struct{}
	// keptPassword is the console password the member's domain had, for a run without the
	// apply's secrets (see keepPassword); never logged.
	keptPassword string
	// keptUserData is the write-only user data of the member's current seed, for a run without
	// the apply's (see keepUserData); nil when not read. Never logged.
	keptUserData *string
}

// shutdowns remembers when each member's shutdown was requested in one Execute run, so that a
// wait that starts late in the bounded fan-out waits only for what is left of the same deadline.
type shutdowns struct {
	mu sync.Mutex
	at map[string]time.Time // by host and name
}

func newShutdowns() *shutdowns { return &shutdowns{at: map[string]time.Time{}} }

func (s *shutdowns) note(key string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.at[key] = t
}

// deadline is timeout after the member's request, or after now when it had none.
func (s *shutdowns) deadline(key string, now time.Time, timeout time.Duration) time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	if t, ok := s.at[key]; ok {
		return t.Add(timeout)
	}
	return now.Add(timeout)
}

// The pieces of the task's host, one accessor each, so that a task's code says which part of
// libvirt it touches. x.backend itself, the whole host, is only for choosing the host a task runs
// on (task, onHost, and a live move that goes on cold).

// domains is the task's host's domains and their lifecycle: define, start, stop, undefine.
func (x *opRun) domains() backend.Domains { return x.backend }

// metadata is the task's host's domain metadata: the member record and the description.
func (x *opRun) metadata() backend.Metadata { return x.backend }

// devices is the task's host's changes to a defined domain's disks and console.
func (x *opRun) devices() backend.Devices { return x.backend }

// seeds is the task's host's cloud-init seed volumes and seed drives.
func (x *opRun) seeds() backend.Seeds { return x.backend }

// guest is the task's host's guest agent: the health probes.
func (x *opRun) guest() backend.GuestAgent { return x.backend }

// networks is the task's host's networks: the DHCP host entries of address reservations.
func (x *opRun) networks() backend.Networks { return x.backend }

// volumes is the task's host's pool volumes.
func (x *opRun) volumes() backend.Volumes { return x.backend }

// key names the member across the hosts of the run.
func (x *opRun) key() string { return engine.HostOf(x.op.Host) + "/" + x.op.Name }

// do names the failed task in the error.
func (x *opRun) do(step string, err error) error {
	if err == nil {
		return nil
	}
	return &StepError{Op: x.op, Step: step, Down: x.down, Err: err}
}

// runTasks carries out tasks in order and stops at the first error.
func (x *opRun) runTasks(ctx context.Context, tasks []engine.Task) error {
	for _, t := range tasks {
		if t.Kind.Down() {
			x.down = true
		}
		if err := x.task(ctx, t); err != nil {
			return err
		}
	}
	return nil
}

// stamped is the task's record with the fields only known now filled from the clock.
func (x *opRun) stamped(t engine.Task) backend.Record {
	mi := t.Record
	if t.Stamp.Created || t.Stamp.LastHeal {
		now := x.r.now().UnixMilli()
		if t.Stamp.Created {
			mi.Created = now
		}
		if t.Stamp.LastHeal {
			mi.LastHeal = now
		}
	}
	return record(x.s, x.op.Index, mi)
}

// define is the domain definition a task stores, with the console's password.
func (x *opRun) define(ctx context.Context, t engine.Task) (backend.DomainSpec, error) {
	ds := domainSpec(x.s, t.Desired, x.stamped(t))
	ds.UUID, ds.Autostart = t.UUID, t.Autostart
	g, err := x.graphicsOf(ctx, t.Desired)
	ds.Graphics = g
	return ds, err
}

// defineTask stores the definition a define task makes, the step named what.
func (x *opRun) defineTask(ctx context.Context, what string, t engine.Task) error {
	ds, err := x.define(ctx, t)
	if err != nil {
		return x.do(what, err)
	}
	return x.do(what, x.domains().DefineDomain(ctx, ds))
}

func (x *opRun) volumeSpec(v engine.VolumeOp) backend.VolumeSpec {
	return backend.VolumeSpec{Pool: x.s.Pool, Name: v.Volume, SizeMiB: v.SizeMiB, BackingPath: v.BackingImage, BackingVolume: v.BackingVolume}
}

// task carries out one task. Only its kind and the backend's answers choose what happens: what
// should happen was decided by the engine. The kinds are grouped by the piece of the host they
// touch.
func (x *opRun) task(ctx context.Context, t engine.Task) error {
	name := x.op.Name
	// A move's task on its other host runs on that host's backend (on); home is the operation's.
	home := x.backend
	on, err := x.onHost(t)
	if err != nil {
		return x.do(t.Kind.String(), err)
	}
	if on != home {
		x.backend = on
		defer func() { x.backend = home }()
	}
	switch t.Kind {
	// No host at all: the engine's judgement, told.
	case engine.TaskRefuse:
		// The engine found a volume of the member's names that the group did not make where
		// the operation would write over or attach it: nothing of the member is changed.
		return x.do("check that the group made "+t.Volume.Volume, errors.New(t.Refusal))
	case engine.TaskReleaseVolume:
		tflog.Info(ctx, "volume kept", map[string]any{"instance": name, "volume": t.Volume.Volume, "device": t.Volume.DeviceName})
		return nil

	// Volumes.
	case engine.TaskImportImage:
		return x.importImage(ctx, t.Volume.Import)
	case engine.TaskCopyVolume:
		return x.copyVolume(ctx, home, on, t.Host, t)
	case engine.TaskPrepareVolume:
		return x.prepareVolume(ctx, home, on, t)
	case engine.TaskCreateVolume:
		_, err := x.volumes().EnsureVolume(ctx, x.volumeSpec(t.Volume))
		return x.do("create volume "+t.Volume.Volume, err)
	case engine.TaskFreshVolume:
		// Not there when the plan was made: created straight away. If it appeared since, the
		// engine's other tasks for it run instead.
		spec := x.volumeSpec(t.Volume)
		spec.Fresh = true
		created, err := x.volumes().EnsureVolume(ctx, spec)
		if err != nil {
			return x.do("create volume "+t.Volume.Volume, err)
		}
		if created {
			return nil
		}
		return x.runTasks(ctx, t.Otherwise)
	case engine.TaskDeleteVolume:
		if t.DropHelper {
			if err := x.snapshots().DropSnapshotHelper(ctx, x.s.Pool, t.Volume.Volume); err != nil {
				return x.do("drop the snapshot helper of volume "+t.Volume.Volume, err)
			}
		}
		return x.do("delete volume "+t.Volume.Volume, x.volumes().DeleteVolume(ctx, x.s.Pool, t.Volume.Volume))
	case engine.TaskDeleteNVRAM:
		return x.do("delete NVRAM volume "+t.Volume.Volume, x.deleteNVRAM(ctx, t.Volume.Volume))
	case engine.TaskStage:
		_, err := x.volumes().EnsureVolume(ctx, x.volumeSpec(t.Volume))
		return x.do("stage the new boot volume", err)

	// Seeds.
	case engine.TaskWriteSeed, engine.TaskSwapSeed:
		return x.seed(ctx, t)

	// Metadata: the member record and the description.
	case engine.TaskMark:
		return x.do("mark in flight", x.metadata().SetRecord(ctx, name, x.stamped(t)))
	case engine.TaskPreserve:
		return x.do("record preservation", x.metadata().SetRecord(ctx, name, x.stamped(t)))
	case engine.TaskRecord:
		return x.do("record", x.metadata().SetRecord(ctx, name, x.stamped(t)))
	case engine.TaskForget:
		return x.do("remove record", x.metadata().ClearRecord(ctx, name))
	case engine.TaskDescribe:
		return x.do("set description", x.metadata().SetDescription(ctx, name, t.Description))

	// Devices of a defined domain: disks and the console's password.
	case engine.TaskGraphicsPassword:
		return x.graphicsPassword(ctx, t)
	case engine.TaskDetach:
		return x.do("detach disk "+t.Device, x.devices().DetachDisk(ctx, name, t.Device))
	case engine.TaskAttach:
		return x.do("attach disk "+t.Disk.DeviceName, x.devices().AttachDisk(ctx, name, diskOf(x.s.Pool, t.Disk)))
	case engine.TaskGrow:
		return x.do("grow disk "+t.Disk.DeviceName, x.devices().GrowDisk(ctx, name, t.Disk.DeviceName, diskOf(x.s.Pool, t.Disk), t.Disk.SizeMiB))

	// Domains: the definition and the lifecycle.
	case engine.TaskNameFree:
		return x.nameFree(ctx)
	case engine.TaskUndefineCopy:
		return x.undefineCopy(ctx, on, t.Host)
	case engine.TaskDefine:
		return x.defineTask(ctx, "define", t)
	case engine.TaskDefineNext:
		return x.defineTask(ctx, "define the new definition", t)
	case engine.TaskDefineAgain:
		return x.defineTask(ctx, "define again", t)
	case engine.TaskShutdown:
		var halted *backend.NotRunningError
		if err := x.domains().ShutdownDomain(ctx, name); errors.As(err, &halted) {
			// Paused, suspended or crashed since the plan saw it running: the engine's
			// Otherwise (a power-off) runs instead of a wait the guest cannot end.
			tflog.Info(ctx, halted.Status.PowerOffWhy(), map[string]any{"instance": name})
			return x.runTasks(ctx, t.Otherwise)
		} else if err != nil {
			return x.do("shut down", err)
		}
		x.requests.note(x.key(), x.r.now())
		return nil
	case engine.TaskStopWait:
		return x.stopWait(ctx, t.Timeout)
	case engine.TaskPowerOff:
		if t.Halted != "" {
			tflog.Info(ctx, t.Halted.PowerOffWhy(), map[string]any{"instance": name})
		}
		return x.do("power off", x.domains().StopDomain(ctx, name))
	case engine.TaskUndefine:
		return x.do("undefine", x.domains().UndefineDomain(ctx, name))
	case engine.TaskAutostart:
		return x.do("set autostart", x.domains().SetAutostart(ctx, name, t.Autostart))
	case engine.TaskStart:
		x.startedAt = x.r.now()
		if err := x.domains().StartDomain(ctx, name); err != nil {
			return x.do("start", err)
		}
		x.down = false
		return nil

	// The guest agent's probes, or the domain's state without a health check.
	case engine.TaskWaitReady:
		return x.waitReady(ctx, t.Ready)

	// Networks: address reservations.
	case engine.TaskReserve:
		return x.reserve(ctx, t.Reservation)
	case engine.TaskRelease:
		return x.release(ctx, t.Reservation)

	// Snapshots: data-safe upgrades.
	case engine.TaskSnapshotRoom, engine.TaskSnapshot, engine.TaskRevertSnapshot, engine.TaskDeleteSnapshot:
		return x.snapshotTask(ctx, t)

	// Migrator: a live move, which goes on cold when libvirt does not migrate.
	case engine.TaskMigrate:
		if cold, err := x.migrate(ctx, home, t.Host, t); !cold {
			return err
		}
		// The cold move's tasks run from the operation's host, as the engine listed them.
		x.backend = home
		return x.runTasks(ctx, t.Otherwise)
	}
	return x.do("run", fmt.Errorf("unknown task kind %d", t.Kind))
}

// deleteNVRAM deletes the member's NVRAM volume. libvirt wrote the file when the member started,
// behind its storage pool's back: the lookup reads the pool's directory again when the pool does
// not list it yet, so that the deletion does not miss a file that is there.
func (x *opRun) deleteNVRAM(ctx context.Context, name string) error {
	if _, err := x.volumes().LookupVolume(ctx, x.s.Pool, name); errors.Is(err, backend.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	return x.volumes().DeleteVolume(ctx, x.s.Pool, name)
}

// seed writes the member's NoCloud seed, or swaps the running member's media for it.
func (x *opRun) seed(ctx context.Context, t engine.Task) error {
	userData, err := x.userDataOf(ctx, t)
	if err != nil {
		return x.do("build cloud-init seed", err)
	}
	data, err := seedImage(t.Desired, userData)
	if err != nil {
		return x.do("build cloud-init seed", err)
	}
	if t.Kind == engine.TaskSwapSeed {
		return x.do("replace cloud-init seed", x.seeds().ReplaceSeed(ctx, x.op.Name, seedDisk(x.s, x.op.Name), data))
	}
	name := engine.SeedVolumeName(x.op.Name)
	return x.do("write cloud-init seed "+name, x.seeds().WriteSeed(ctx, x.s.Pool, name, data))
}

// stopWait waits for the member to shut down until timeout after its request, and powers it
// off if it has not by then. A wait that starts after the deadline only looks once.
func (x *opRun) stopWait(ctx context.Context, timeout time.Duration) error {
	now := x.r.now()
	left := max(x.requests.deadline(x.key(), now, timeout).Sub(now), 0)
	stopped, err := x.domains().WaitStopped(ctx, x.op.Name, left)
	if err != nil {
		return x.do("wait for shutdown", err)
	}
	if stopped {
		return nil
	}
	tflog.Info(ctx, "member did not shut down in time; powering it off", map[string]any{"instance": x.op.Name, "shutdown_timeout": timeout.String()})
	return x.do("power off", x.domains().StopDomain(ctx, x.op.Name))
}

// nameFree checks, before a creation deletes a volume (a leftover of the member's own
// interrupted creation, as the plan judged it, or one that appeared after the plan), that no
// domain holds the member's name: a name is not proof of ownership, and a domain of that name
// means the volumes are its own.
func (x *opRun) nameFree(ctx context.Context) error {
	doms, err := x.domains().ListDomains(ctx, x.op.Name, x.op.Name)
	if err != nil {
		return x.do("check that the name is free", err)
	}
	for _, d := range doms {
		if d.Name != x.op.Name {
			continue
		}
		owner := "no provider created it"
		if d.Record != nil {
			owner = fmt.Sprintf("it carries the record of group %q", d.Record.Group)
		}
		return x.do("check that the name is free", fmt.Errorf("a domain named %s appeared on the host after the plan was made (%s): nothing of it was touched; plan again", x.op.Name, owner))
	}
	return nil
}
