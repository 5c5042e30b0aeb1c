// Package backend defines what the provider needs from a virtualisation host. The reconcile
// package drives it; internal/backend/libvirt implements it on go-libvirt, and
// internal/backend/fake implements it in memory for unit tests of the reconcile logic.
//
// A Backend does what it is told and decides nothing: which action a change needs is the
// engine's business.
package backend

import (
	"context"
	"errors"
	"io"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// ErrNotFound is wrapped by errors about domains, volumes or group records that do not exist.
var ErrNotFound = errors.New("not found")

// ErrConflict is wrapped by WriteGroupRecord when another writer took the generation first, and
// by ReadGroupRecord when the record changed while it was being read; both mean "read again".
var ErrConflict = errors.New("the group record was changed by another writer")

// Backend is a virtualisation host: the union of the pieces below, which libvirt.Backend and
// fake.Backend implement. Every method is safe for concurrent use. A consumer that needs a few
// methods takes the piece (or pieces) they belong to; every method belongs to exactly one
// (TestPiecesPartitionBackend).
type Backend interface {
	Host
	Domains
	Metadata
	Devices
	Seeds
	GuestAgent
	Networks
	Volumes
	Pools
	Snapshots
	Migrator
	GroupRecords
}

// Host is what a host is and offers: its virtualisation, limits, firmware and identity. The
// plan checks read it; the moves read the UUID.
type Host interface {
	// HostVirt says whether the host's capabilities offer kvm domains for x86_64 and whether its
	// CPU has VMX or SVM; its DefaultDomainType is what an unset template.domain_type resolves to.
	HostVirt(ctx context.Context) (engine.HostVirt, error)
	// HostUUID is libvirt's UUID of the host (its capabilities' host UUID): libvirt refuses to
	// migrate a domain between two daemons of one UUID, and only between them (two daemons of one
	// machine have their own UUIDs and migrate between each other).
	HostUUID(ctx context.Context) (string, error)
	// Limits returns the most a domain of domainType ("kvm" or "qemu") may have here.
	Limits(ctx context.Context, domainType string) (Limits, error)
	// DomainCaps returns what the host offers x86_64 domains of domainType on machine ("" for
	// libvirt's default machine). An unknown machine is ErrNotFound.
	DomainCaps(ctx context.Context, domainType, machine string) (DomainCaps, error)
}

// Domains are the host's domains: listing them and their lifecycle.
type Domains interface {
	// ListDomains returns every domain whose name starts with prefix or is one of names, with its
	// status, disks and record (every name starts with an empty prefix). Only those domains'
	// definitions are read: a host's other domains cost nothing but their place in one listing
	// call.
	ListDomains(ctx context.Context, prefix string, names ...string) ([]Domain, error)
	// DefineDomain creates or replaces a domain's persistent definition. A running domain keeps
	// running on its old definition until it is restarted.
	DefineDomain(ctx context.Context, spec DomainSpec) error
	StartDomain(ctx context.Context, name string) error
	// ShutdownDomain asks the guest to shut down, as pressing its ACPI power button would, and
	// returns without waiting: WaitStopped tells when it has. A guest may ignore the request.
	// Asking a domain that is shut off is not an error; one that is paused, suspended or crashed
	// cannot act on the request, which libvirt refuses, and is a *NotRunningError, so that the
	// caller powers it off rather than wait for it. A missing domain is ErrNotFound.
	ShutdownDomain(ctx context.Context, name string) error
	// WaitStopped waits until the domain is shut off, for at most timeout. stopped is false when
	// the timeout passed first, which is not an error; a missing domain counts as stopped. It
	// returns ctx's error when ctx ends first.
	WaitStopped(ctx context.Context, name string, timeout time.Duration) (stopped bool, err error)
	// SetAutostart sets whether libvirtd starts the domain when it starts.
	SetAutostart(ctx context.Context, name string, on bool) error
	// StopDomain powers a domain off at once, without asking the guest (the virtual power cord is
	// pulled); stopping a stopped domain is not an error.
	StopDomain(ctx context.Context, name string) error
	// UndefineDomain removes a domain's definition, powering it off first if it runs (the safety
	// net for a guest that did not shut down when asked); a missing domain is not an error. A
	// domain the backend last saw stopped is not powered off first, which spares a call per
	// member of a large deletion: if it was started since, it is left running without a
	// definition (libvirt keeps it as a transient domain until it stops), and the caller finds
	// it with TransientDomainNames and stops it.
	UndefineDomain(ctx context.Context, name string) error
	// TransientDomainNames returns, in one call, the names of the domains that run without a
	// definition.
	TransientDomainNames(ctx context.Context) (map[string]bool, error)
	// DiskSources returns, in one call, the files every domain of the host has as disks, running
	// or not, managed or not: each domain's disk source paths (a pool volume's as its path), by
	// domain name.
	DiskSources(ctx context.Context) (map[string][]string, error)
}

// Metadata is what the provider writes into a domain's metadata: the member record, the
// adoption record and the description.
type Metadata interface {
	// SetRecord writes the record to the domain, live when it runs.
	SetRecord(ctx context.Context, name string, rec Record) error
	// ClearRecord removes the provider's record from the domain's metadata, live when it runs,
	// and touches nothing else of it: the domain is then one no provider created. A domain
	// without a record is not an error.
	ClearRecord(ctx context.Context, name string) error
	// Adoption reads the adoption record of the domain (nil when it has none); ErrNotFound when
	// there is no such domain.
	Adoption(ctx context.Context, name string) (*Adoption, error)
	// SetAdoption writes the adoption record to the domain, live when it runs, replacing any.
	// It touches nothing else: a member record, if any, stays.
	SetAdoption(ctx context.Context, name string, a Adoption) error
	// ClearAdoption removes the adoption record, live when it runs; a domain without one is not
	// an error.
	ClearAdoption(ctx context.Context, name string) error
	// SetDescription writes the domain's description ("" for none), live when it runs.
	SetDescription(ctx context.Context, name, description string) error
}

// Devices changes a defined domain's disks and graphical console, live when it runs.
type Devices interface {
	// AttachDisk attaches a disk to the domain's definition, and live when it runs.
	AttachDisk(ctx context.Context, name string, disk Disk) error
	// DetachDisk detaches the disk with that device name, from the definition and live.
	DetachDisk(ctx context.Context, name, deviceName string) error
	// GrowDisk grows the disk with that device name to sizeMiB, live when the domain runs.
	GrowDisk(ctx context.Context, name, deviceName string, disk Disk, sizeMiB int64) error
	// SetGraphicsPassword sets the password of the domain's graphical console (g.Password, ""
	// for none) in its definition, and live when it runs, without a restart. The console must
	// be g's type and listen address.
	SetGraphicsPassword(ctx context.Context, name string, g Graphics) error
	// GraphicsPassword returns the password the domain's definition gives its graphical console
	// ("" for none, or no console); ErrNotFound when there is no such domain. It is for a
	// redefinition by a run that does not have the write-only password: the domain keeps its own.
	GraphicsPassword(ctx context.Context, name string) (string, error)
}

// Seeds are the cloud-init seed volumes and the domain's seed drive.
type Seeds interface {
	// WriteSeed stores data as a raw volume of that name in pool, replacing any volume of the
	// name.
	WriteSeed(ctx context.Context, pool, name string, data []byte) error
	// ReplaceSeed stores data as the seed volume and puts it in the domain's seed drive. A
	// running domain has the old media ejected first and the new inserted after, live, so that
	// the guest sees a media change in the same boot; a stopped one only gets the new volume.
	ReplaceSeed(ctx context.Context, name string, seed Disk, data []byte) error
	// ReadSeed returns the bytes of the seed volume of that name in pool; ErrNotFound when there
	// is none. It is for a seed written again by a run that does not have the write-only user
	// data: the new seed keeps the user data of the member's current one.
	ReadSeed(ctx context.Context, pool, name string) ([]byte, error)
}

// GuestAgent asks a running domain's guest: its addresses and health probes.
type GuestAgent interface {
	// GuestAddresses asks the domain's guest agent for the guest's addresses.
	GuestAddresses(ctx context.Context, name string) ([]string, error)
	// Probe runs one health probe against the running domain and returns when it ends or spec's
	// Timeout passed. A probe that ran and failed (the guest agent did not answer in time, the
	// command exited non-zero, the port refused) is a result with OK false and its reason, not an
	// error; err is for a host that could not be asked at all (the connection is down), which
	// makes the member UNKNOWN.
	Probe(ctx context.Context, name string, spec ProbeSpec) (ProbeResult, error)
}

// Networks are the host's libvirt networks: whether one runs, its DHCP leases and host entries.
type Networks interface {
	// LookupNetwork tells whether the libvirt network is active; ErrNotFound when there is none.
	LookupNetwork(ctx context.Context, name string) (active bool, err error)
	// Leases returns the addresses the libvirt network's DHCP server has leased, by MAC address;
	// ErrNotFound when there is no such network.
	Leases(ctx context.Context, network string) (map[string][]string, error)
	// DHCPNetwork reads the libvirt network's IPv4 address, prefix, DHCP range and host entries
	// (as running); ErrNotFound when there is no such network.
	DHCPNetwork(ctx context.Context, network string) (engine.DHCPNetwork, error)
	// SetDHCPHost adds host's entry to the network's DHCP, or with modify moves the entry of
	// host's MAC to host's address: live (without restarting the network) and in its persistent
	// definition.
	SetDHCPHost(ctx context.Context, network string, host engine.DHCPHost, modify bool) error
	// DeleteDHCPHost deletes the network's DHCP host entry host, as DHCPNetwork read it, live
	// and in its persistent definition.
	DeleteDHCPHost(ctx context.Context, network string, host engine.DHCPHost) error
}

// Volumes are the volumes of the host's pools, with the streams a copy between hosts reads and
// writes them through.
type Volumes interface {
	// EnsureVolume creates the volume unless one of that name exists, which is reused as it is.
	EnsureVolume(ctx context.Context, spec VolumeSpec) (created bool, err error)
	// DeleteVolume deletes a volume; a missing volume is not an error.
	DeleteVolume(ctx context.Context, pool, name string) error
	// ListVolumes returns every volume of the pool whose name starts with prefix.
	ListVolumes(ctx context.Context, pool, prefix string) ([]Volume, error)
	// ListVolumeNames returns the names of the pool's volumes that start with prefix: what a plan
	// needs to know which volumes are there, without reading each one.
	ListVolumeNames(ctx context.Context, pool, prefix string) ([]string, error)
	// RefreshPool makes the pool read its directory again, so that the lists above show the
	// files libvirt wrote there without the storage API (an EFI member's NVRAM, made at its
	// first start).
	RefreshPool(ctx context.Context, pool string) error
	// LookupVolume finds a volume by name in pool, or by absolute path in whichever pool holds it
	// (pool is then ignored). A file newly put in a pool's directory is found: the pool is
	// refreshed first. ErrNotFound when no pool holds it.
	LookupVolume(ctx context.Context, pool, nameOrPath string) (VolumeInfo, error)
	// StatVolume returns what a copy of the volume needs to know of it; ErrNotFound when the
	// pool has no such volume.
	StatVolume(ctx context.Context, pool, name string) (VolumeStat, error)
	// DownloadVolume streams the volume's content, its file's bytes as stored (a qcow2 volume's
	// qcow2 image, backing reference included), to w, and returns how many bytes it wrote.
	DownloadVolume(ctx context.Context, pool, name string, w io.Writer) (int64, error)
	// UploadVolume makes the volume spec names, which must not exist (ErrExists when one of that
	// name does), with its format and capacity, and writes spec.Bytes bytes read from r as its
	// content. A failed upload deletes the volume it made, so that no half-written copy stays.
	UploadVolume(ctx context.Context, spec VolumeUpload, r io.Reader) error
}

// Pools are the host's storage pools.
type Pools interface {
	// LookupPool returns the storage pool; ErrNotFound when there is none of that name.
	LookupPool(ctx context.Context, name string) (Pool, error)
	// ListPools returns every storage pool of the host, active or not, with its UUID and
	// target, in one listing.
	ListPools(ctx context.Context) ([]Pool, error)
	// CreatePool defines a directory pool of that name on the directory path, builds it (makes
	// the directory; one that is there is used as it is, with its files), starts it and marks it
	// autostart. A pool it defined but could not start is undefined again, so that a failed
	// create leaves no pool behind.
	CreatePool(ctx context.Context, name, path string) (Pool, error)
	// PoolByUUID returns the pool with that UUID; ErrNotFound when there is none.
	PoolByUUID(ctx context.Context, uuid string) (Pool, error)
	// DeletePool stops (pool-destroy) and undefines the pool with that UUID. It never deletes
	// the pool's directory or a file in it (no pool-delete). A missing pool is not an error.
	DeletePool(ctx context.Context, uuid string) error
}

// Snapshots are point-in-time snapshots of qcow2 volumes, kept inside the volume's own file (qcow2
// internal snapshots): taking one costs the same whatever the volume's size, because it copies
// no data, only the image's table of clusters; the clusters it shares with the live image are
// copied on the next write to them. A snapshot is named by its tag, which the caller chooses;
// a volume holds at most one snapshot of a tag after any of these calls.
type Snapshots interface {
	// SnapshotVolume takes the snapshot tag of the qcow2 volume, which no running domain may use
	// (the caller stopped it). A snapshot of that tag the volume holds already (a run cut off
	// after the snapshot and before its record) is deleted first, so that calling it again is
	// safe and leaves exactly one snapshot of the tag, of the bytes the volume has now. A volume
	// of another format (raw) is an error that says so; a missing volume wraps ErrNotFound.
	SnapshotVolume(ctx context.Context, pool, volume, tag string) error
	// RevertVolume puts the qcow2 volume's bytes back to those of its snapshot tag, which stays.
	// No running domain may use the volume. A volume without that snapshot, or no such volume,
	// is an error wrapping ErrNotFound.
	RevertVolume(ctx context.Context, pool, volume, tag string) error
	// DeleteVolumeSnapshot deletes the volume's snapshot tag; a missing snapshot or volume is not
	// an error. runningDomain is "" when no running domain uses the volume; otherwise it is the
	// running domain the volume is a disk of, whose QEMU holds the file and deletes the snapshot
	// live, the domain running on (one found shut off by then is no longer in the way). Deleting
	// live deletes the tag from every disk of that domain that holds one of that name (QEMU's
	// delvm knows no other way), so a caller gives each volume's snapshots tags of their own. A
	// running domain that uses the volume and is not named keeps the deletion out, which is an
	// error.
	DeleteVolumeSnapshot(ctx context.Context, pool, volume, tag, runningDomain string) error
	// VolumeSpace returns the room the volume's pool has left and what the volume takes in it,
	// so that a caller can refuse a snapshot the pool has no room for before it stops the
	// volume's domain: a snapshot takes no room when taken, but every cluster the domain then
	// writes is a new one, up to the volume's allocation. ErrNotFound when there is no such pool
	// or volume.
	VolumeSpace(ctx context.Context, pool, volume string) (VolumeSpace, error)
	// VolumeSnapshots returns the names (tags) of the qcow2 volume's internal snapshots, read from
	// the file: what tells whether a snapshot a cut-off run meant to take is there. A volume of
	// another format is an error; a missing volume wraps ErrNotFound.
	VolumeSnapshots(ctx context.Context, pool, volume string) ([]string, error)
	// DropSnapshotHelper undefines the helper domain a snapshot call on the volume left behind
	// (its run was cut off), when there is one: only a domain of the helper's name that carries
	// the marker for this pool and volume and does not run. None is not an error, and a domain
	// of that name that is not the volume's helper is left as it is. It is for the deletion of a
	// volume that held snapshots: no later snapshot call on it would remove the helper.
	DropSnapshotHelper(ctx context.Context, pool, volume string) error
}

// Migrator moves a running domain to another host.
type Migrator interface {
	// MigrateLive moves the running domain to the host m names, live, peer to peer (this host's
	// daemon connects to m.DestURI itself), its disks' contents copied into the volumes of the
	// same names the caller made in the destination's pool beforehand; the domain is defined
	// on the destination and undefined here when it succeeds. It takes at most m.Timeout: the
	// migration job is aborted then, and the domain runs on here as before. Any failure leaves
	// the domain running here; libvirt's own message is in the error.
	MigrateLive(ctx context.Context, name string, m Migration) error
	// MigrationRunning reports whether a migration of the domain is under way from this host:
	// one a cut-off apply started, which libvirt's daemons carry on without it. A missing domain
	// has none.
	MigrationRunning(ctx context.Context, name string) (bool, error)
}

// GroupRecords are the group records the host keeps, generation by generation.
type GroupRecords interface {
	// ReadGroupRecord returns the newest complete generation of the group's record, with the
	// pool it was written for; ErrNotFound when there is none. Generation is the number a writer
	// must claim next minus one: a reader never sees a torn record.
	ReadGroupRecord(ctx context.Context, group string) (GroupRecord, error)
	// WriteGroupRecord stores data and rec.Pool as generation rec.Generation of the group's
	// record. Exactly one writer can store a generation; the others get ErrConflict and must
	// read again.
	WriteGroupRecord(ctx context.Context, group string, rec GroupRecord) error
	// DeleteGroupRecord deletes every generation of the group's record.
	DeleteGroupRecord(ctx context.Context, pool, group string) error
	// ListGroups returns the names of the groups that have a record on this host, in one call.
	ListGroups(ctx context.Context) ([]string, error)
}

// Matcher tells whether a domain name is one ListDomains returns: it starts with prefix or is
// one of names.
func Matcher(prefix string, names []string) func(name string) bool {
	if len(names) == 0 {
		return func(name string) bool { return strings.HasPrefix(name, prefix) }
	}
	named := make(map[string]bool, len(names))
	for _, n := range names {
		named[n] = true
	}
	return func(name string) bool { return strings.HasPrefix(name, prefix) || named[name] }
}
