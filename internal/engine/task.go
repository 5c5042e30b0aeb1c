package engine

import (
	"fmt"
	"time"
)

// An operation is carried out as an ordered list of tasks, which the engine builds from what it
// decided (the operation's kind, fates, seed, power and records): the executor runs them one by
// one, in order, and stops at the first error. Which volumes are made before a member stops and
// which go after, when its in-flight marker is written and what record ends the change are
// decided in steps.go, where the fuzz targets see them (FuzzStepOrder), and nowhere else. A task is
// named so because Step is already a member's plan.

// TaskKind is what one task of an operation does.
type TaskKind int

const (
	// TaskMark writes Record, the member's in-flight marker, before anything of it changes.
	TaskMark TaskKind = iota
	// TaskPreserve writes Record, which starts or releases the member's preservation.
	TaskPreserve
	// TaskRecord writes Record, the applied state, once the change is done.
	TaskRecord
	// TaskNameFree checks that no domain holds the member's name, before a creation deletes a
	// volume of that name: a name is not proof of ownership.
	TaskNameFree
	// TaskCreateVolume makes Volume, or reuses it when it is there.
	TaskCreateVolume
	// TaskFreshVolume makes Volume new, which the pool listing did not show; if it is there after
	// all, it is not the member's to reuse, and the tasks of Otherwise run instead.
	TaskFreshVolume
	// TaskDeleteVolume deletes Volume; a missing one is not an error.
	TaskDeleteVolume
	// TaskReleaseVolume leaves Volume in place, unattached: it is only logged.
	TaskReleaseVolume
	// TaskStage makes Volume, a replacement's new boot volume, while the old member still runs.
	TaskStage
	// TaskWriteSeed writes the member's NoCloud seed volume from Desired.
	TaskWriteSeed
	// TaskSwapSeed writes the seed from Desired and swaps the running member's CD-ROM media.
	TaskSwapSeed
	// TaskDefine defines the member's domain from Desired with Record (a new UUID unless UUID is
	// set): its definition once the member is created or replaced.
	TaskDefine
	// TaskDefineNext stores the member's new definition over the running domain's, with its UUID:
	// libvirt checks it before anything stops, and it takes effect at the next start.
	TaskDefineNext
	// TaskDefineAgain gives a running member that lost its persistent definition the one its
	// record describes, with its UUID, without touching the running domain.
	TaskDefineAgain
	// TaskDetach takes Device off the running domain.
	TaskDetach
	// TaskAttach puts Disk on the running domain.
	TaskAttach
	// TaskGrow grows Disk to its size.
	TaskGrow
	// TaskDescribe writes Description to the domain.
	TaskDescribe
	// TaskShutdown asks the guest to shut down (ACPI) and returns; the executor notes when. When
	// the host refuses the request because the member is not running (paused, suspended or
	// crashed since the plan), the tasks of Otherwise run instead.
	TaskShutdown
	// TaskStopWait waits until the member is shut off, until Timeout after its TaskShutdown of
	// the same run was issued, and powers it off if it is still running then.
	TaskStopWait
	// TaskPowerOff powers the member off at once; Halted, when set, is the status that made the
	// plan power it off rather than ask it to shut down.
	TaskPowerOff
	// TaskUndefine removes the member's definition (powering it off if it runs).
	TaskUndefine
	// TaskAutostart sets whether libvirtd starts the member, to Autostart.
	TaskAutostart
	// TaskStart starts the member.
	TaskStart
	// TaskWaitReady waits until the member just started is ready as Ready says (HEALTHY for
	// min_ready), or fails when it is not by the timeout. It is an operation's last task: what
	// the operation wrote is true whether the member becomes ready or not.
	TaskWaitReady
	// TaskForget removes the provider's member record from the domain's metadata, live when it
	// runs, and changes nothing else of it: the member is abandoned (OpAbandon).
	TaskForget
	// TaskDeleteNVRAM deletes Volume, the member's NVRAM volume, which libvirt wrote when the
	// member started and its pool may not list yet; a missing one is not an error.
	TaskDeleteNVRAM
	// TaskGraphicsPassword sets the password of the member's console to the one of the apply's
	// configuration, live when it runs: Desired's graphics has the new password version.
	TaskGraphicsPassword
	// TaskReserve makes Reservation's host entry in its network's DHCP (PlanReservation
	// decides which), live and in the network's persistent definition; an entry already right
	// is left as it is.
	TaskReserve
	// TaskRelease deletes the host entries of Reservation's MAC, the member's own, from its
	// network's DHCP; none is not an error.
	TaskRelease
	// TaskCopyVolume copies Volume from the operation's host (a move's source) to the task's
	// Host, which must not have it, and checks the copy (size and checksum); with Optional, a
	// source without the volume copies nothing.
	TaskCopyVolume
	// TaskPrepareVolume makes Volume on the task's Host empty, with the source's capacity, for a
	// live migration to copy the disk into.
	TaskPrepareVolume
	// TaskMigrate migrates the running member live to Host, within Timeout: defined there and
	// undefined on the operation's host when it succeeds, running on here when it fails.
	TaskMigrate
	// TaskUndefineCopy undefines the member's copy on the task's Host, left there by a move
	// whose target has the member: only a domain carrying the group's record for the member
	// with the member's UUID, and only when it is not running; none is not an error.
	TaskUndefineCopy
	// TaskImportImage reads Volume.Import, a host file outside every pool, through a descriptor
	// opened after it is judged, into its image volume of the group's pool (checked by its
	// sha256), unless that volume is there with those bytes: the boot overlay that follows backs
	// onto the volume, and libvirt is never given the host path.
	TaskImportImage
	// TaskRefuse fails the operation with Refusal, changing nothing: a later task would write
	// over or attach a volume the group did not make (see guardTasks).
	TaskRefuse
	// TaskSnapshotRoom checks that the pool has room for Snapshots, before the member stops:
	// every byte of a snapshotted volume may be written again once the new template runs.
	TaskSnapshotRoom
	// TaskSnapshot takes Snapshot of its volume, which the stopped member no longer writes; one
	// of that tag already there (a run cut off after it) is taken again.
	TaskSnapshot
	// TaskRevertSnapshot puts Snapshot's volume back to its bytes, the member stopped; with
	// Optional, a volume without the snapshot (the rollout failed before it took it, and did not
	// touch the disk) is left as it is.
	TaskRevertSnapshot
	// TaskDeleteSnapshot deletes Snapshot from its volume, through the running member when it
	// runs (Live); a missing snapshot is not an error.
	TaskDeleteSnapshot
)

// taskKindNames name the kinds, in their order, for logs and tests.
var taskKindNames = [...]string{"mark", "preserve", "record", "name-free", "create-volume", "fresh-volume", "delete-volume",
	"release-volume", "stage", "write-seed", "swap-seed", "define", "define-next", "define-again", "detach", "attach", "grow",
	"describe", "shutdown", "stop-wait", "power-off", "undefine", "autostart", "start", "wait-ready", "forget", "delete-nvram",
	"graphics-password", "reserve-address", "release-address", "copy-volume",
	"prepare-volume", "migrate", "undefine-copy", "import-image", "refuse", "snapshot-room", "snapshot", "revert-snapshot", "delete-snapshot"}

func (k TaskKind) String() string {
	if k < 0 || int(k) >= len(taskKindNames) {
		return fmt.Sprintf("task kind %d", int(k))
	}
	return taskKindNames[k]
}

// Down reports whether the task takes the member down: a failure from it on leaves the member
// stopped or removed, for the next apply to bring back.
func (k TaskKind) Down() bool {
	switch k {
	case TaskShutdown, TaskStopWait, TaskPowerOff, TaskUndefine:
		return true
	default:
		return false
	}
}

// Stamp names the fields of a task's record that the executor fills with its clock when it runs
// the task: the time a change happens is known only then.
type Stamp struct {
	// Created is when the domain was created.
	Created bool
	// LastHeal is when the heal started.
	LastHeal bool
}

// Task is one step of an operation, with every value it writes.
type Task struct {
	Kind TaskKind
	// Volume is the volume of the volume tasks: its name, and the size and backing image it is
	// made with.
	Volume VolumeOp
	// Otherwise are the tasks a TaskFreshVolume runs when the volume was there already, or a
	// TaskShutdown when the member is not running.
	Otherwise []Task
	// Device is the device a TaskDetach takes off; Disk the disk attached or grown.
	Device string
	Disk   DesiredDisk
	// Desired is the instance a definition or a seed is made from.
	Desired DesiredInstance
	// UserDataFromSeed lets a seed task that has not got the apply's write-only user data
	// (desired's user_data_wo_version) take it from the member's current seed volume, which
	// holds that version (Operation.SeedKept); without it, only the group's apply can write it.
	UserDataFromSeed bool
	// Record is the member record a definition embeds or a record task writes, with Stamp's
	// fields filled at run time.
	Record ManagedInstance
	Stamp  Stamp
	// UUID is the UUID a definition keeps; "" gives a new one.
	UUID string
	// Autostart is a definition's autostart, or what a TaskAutostart sets.
	Autostart bool
	// Description is what a TaskDescribe writes.
	Description string
	// Halted is, for a TaskPowerOff that takes the place of a graceful stop, the status the
	// member was observed in that cannot act on a shutdown request (Status.HearsShutdown).
	Halted Status
	// Timeout is how long after its shutdown request a TaskStopWait waits.
	Timeout time.Duration
	// Ready is what a TaskWaitReady waits for.
	Ready Readiness
	// Reservation is what a TaskReserve or TaskRelease makes or deletes.
	Reservation Reservation
	// Host is the host the task runs on, for a move's tasks on the other host; "" is the
	// operation's host.
	Host string
	// Refusal is why a TaskRefuse stops the operation.
	Refusal string
	// Optional lets a TaskCopyVolume find no volume to copy (an NVRAM libvirt has not written),
	// and a TaskRevertSnapshot no snapshot to put back.
	Optional bool
	// Snapshot is what a snapshot task takes, puts back or deletes; Snapshots what a
	// TaskSnapshotRoom makes room for.
	Snapshot  SnapshotOp
	Snapshots []SnapshotOp
	// Live deletes a snapshot through the running member (TaskDeleteSnapshot).
	Live bool
	// DropHelper asks a TaskDeleteVolume to undefine first the snapshot helper domain a cut-off
	// run may have left on the volume: the group's inventory holds snapshots of it.
	DropHelper bool
}
