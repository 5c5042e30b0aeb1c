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
	// NewUUID gives a fresh domain UUID: a member's new definition (TaskDefine) is given one in
	// the plan, so that the inventory's intent names the domain by the UUID it will have. nil
	// leaves the choice to libvirt (the inventory learns the UUID at the next plan).
	NewUUID func() string
	// HostVolumes are the same names host by host, for the hosts whose pool was listed; nil
	// when not told (Volumes then stands for every host's).
	HostVolumes map[string][]string
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
	// HostUUIDs are libvirt's UUIDs of the hosts, by host: a move is live only between two
	// hosts of known, different UUIDs (libvirt refuses to migrate within one).
	HostUUIDs map[string]string
	// DestroyRun is set for the plans of a Terraform destroy (the removals of the group's policy
	// and configs that come before the group's own destroy): they make nothing (leaveMaking).
	DestroyRun bool
	// SnapshotTags are the snapshot tags the volumes hold whose snapshots the inventory keeps
	// unsettled (UnsettledSnapshots), by host (HostOf) and volume: what tells an intent of a
	// snapshot a cut-off run took from one it never took, and a snapshot deleted by hand. A
	// volume not read (its host did not answer, the read failed) is absent.
	SnapshotTags map[string]map[string][]string
	// Images are the group's source_image, by host, where it is a host file outside every pool
	// that the provider can read (its host is this machine): new boot volumes there back onto a
	// copy of it in the group's pool (HostImage), never onto the host path. A host without an
	// entry gets the path, as the template gives it.
	Images map[string]HostImage
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
	// BackingVolume, instead of BackingImage, is the group's image volume (Env.Images) the
	// volume is an overlay of; Import is set when the plan must make that volume first.
	BackingVolume string
	Import        *HostImage
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
	// Left are the volumes the operation leaves because the group did not make them, though
	// their names are of its scheme (see guardTasks).
	Left []Left
	// Step is the plan of an existing member (every kind but OpCreate and OpDelete); New is the
	// member an OpCreate makes.
	Step Step
	New  NewMember
	// Power is the state the member ends in, StatusRunning or StatusStopped; empty leaves it.
	Power Status
	// Observed is the member's status as the plan observed it: one paused, suspended or crashed
	// is powered off at once when the operation stops it (see stopping); "" for a new member.
	Observed Status
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
	// ImageProblem says why the operation cannot make its boot volume: its host image cannot be
	// copied into the pool (HostImage.Problem). The plan blocks the member, naming it.
	ImageProblem string
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
	// Snapshots are the snapshots a rollout's restart or replacement takes once the member is
	// stopped (update_policy.snapshot); Reverts those a rollback's puts the member's disks back
	// to before it starts it again.
	Snapshots []SnapshotOp
	Reverts   []SnapshotOp
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
	return parseMembers(s, 1)
}

// parseMembers reads a number of members as users write it, at least least: a whole number, or a
// percentage of the target size from least% to 100% ("25%"). max_unavailable and canary are
// written the same way and read here, so that both take the same forms.
func parseMembers(s string, least int) (fixed, percent int, err error) {
	if num, ok := strings.CutSuffix(s, "%"); ok {
		if _, err := fmt.Sscanf(num, "%d", &percent); err != nil || fmt.Sprint(percent) != num || percent < least || percent > 100 {
			return 0, 0, fmt.Errorf("%q is not a percentage from %d%% to 100%%", s, least)
		}
		return 0, percent, nil
	}
	if _, err := fmt.Sscanf(s, "%d", &fixed); err != nil || fmt.Sprint(fixed) != s || fixed < least {
		return 0, 0, fmt.Errorf("%q is neither a whole number of members of at least %d nor a percentage such as \"25%%\"", s, least)
	}
	return fixed, 0, nil
}
