package backend

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The values the Backend interface takes and returns.

// Record is the provider's bookkeeping kept in a member domain's libvirt metadata: the group it
// belongs to, its index (0 for a named member) and its managed state, in-flight marker included.
type Record struct {
	Group    string
	Index    int
	Instance engine.ManagedInstance
}

// Adoption is the record a virt_domain resource keeps in the metadata of a domain it adopted
// (store.Adoption is its format): the owner ID of the Terraform state that adopted it, and when,
// in Unix seconds.
type Adoption struct {
	Owner string
	Since int64
}

// GroupRecord is one generation of a group's record as stored on the host. Data is opaque to
// the backend.
type GroupRecord struct {
	Pool       string
	Generation int64
	Data       []byte
}

// Disk is a disk attached to a domain, identified by its device name.
type Disk struct {
	DeviceName string
	Pool       string // the storage pool of Volume
	Volume     string // a volume name in Pool, or empty when Path is used
	Path       string // an absolute path, for disks outside a pool
	// HostFile marks a Path that no storage pool holds: it is attached without relabelling.
	// The libvirt backend sets it; callers need not.
	HostFile bool
	// Format is the image format QEMU opens the disk with (qcow2, raw, ...). The libvirt
	// backend sets it from the volume when libvirt knows it; callers need not.
	Format   string
	ReadOnly bool
}

// DomainSpec is everything needed to define a domain: the desired instance's shape (embedded
// engine.Shape, the hardware with it) and what only the host run resolves (pool and volume paths,
// MACs, the seed, the console log's file, the console's password).
type DomainSpec struct {
	Name string
	// UUID is empty for a new domain; a redefinition must give the domain's own.
	UUID string
	// Shape is the desired instance's (engine.Shape): its domain type, size, description and
	// hardware are what the domain is defined with, so a VM option added there reaches the
	// backend with no change here. Three of its fields reach the host only resolved, and the
	// backend does not read them: CloudInit as Seed, ConsoleLogDir as ConsoleLog, and Labels,
	// which stay the engine's. Its Graphics is not read either: the field below shadows it.
	engine.Shape
	Disks  []Disk // the first is the boot disk
	NICs   []engine.NIC
	Record Record
	// Autostart makes libvirtd start the domain when it starts (a host reboot).
	Autostart bool
	// MACs are the MAC addresses of NICs, in order; a missing or empty one lets the host choose.
	MACs []string
	// Seed is the NoCloud seed volume in the domain's seed CD-ROM drive; nil gives it no drive.
	Seed *Disk
	// ConsoleLog is the file on the host the serial console is appended to; "" keeps no log.
	ConsoleLog string
	// NVRAM is the EFI domain's NVRAM volume (Pool and Volume), in a directory pool: libvirt
	// writes it from the firmware's template when the domain starts without it, and never
	// deletes it.
	NVRAM *Disk
	// Graphics is the domain's graphical console; nil gives none. It stays apart from
	// Shape.Graphics because it holds the console's password, which comes from the apply's
	// configuration (a write-only attribute) and is never part of an engine type.
	Graphics *Graphics
}

// DomainCaps is what a host offers domains of one type on one machine, from libvirt's domain
// capabilities and host capabilities, as plans check templates against it.
type DomainCaps struct {
	// DomainType and Machine are what was asked; CanonicalMachine is the machine libvirt
	// resolved it to (pc-i440fx-7.2 for pc or for libvirt's default).
	DomainType       string
	Machine          string
	CanonicalMachine string
	// KVM is true when the host offers kvm domains for x86_64.
	KVM bool
	// MaxVCPU is the most vCPUs a domain of the type may have on the machine (0: not said).
	MaxVCPU int64
	// Machines are the x86_64 machine names the host lists for the domain type, aliases (pc,
	// q35) included, sorted.
	Machines []string
	// EFI is true when a UEFI firmware is installed that libvirt can select for the machine
	// (OVMF, from Debian's ovmf package); SecureBoot when one of them enforces Secure Boot.
	EFI        bool
	SecureBoot bool
	// Loaders are the firmware images libvirt would choose from.
	Loaders []string
	// CPUModes are the CPU modes supported, of engine.CPUModes.
	CPUModes []string
	// CPUModels are the custom CPU models usable for the domain type here, and
	// UnusableCPUModels those the host names but cannot run.
	CPUModels         []string
	UnusableCPUModels []string
	// TPM is what the host offers a TPM (the <tpm> device element); nil when the domain
	// capabilities do not mention it.
	TPM *engine.HostTPM
}

// Graphics is a graphical console as the host runs it: on a port the host picks (autoport).
type Graphics struct {
	Type   string // "vnc" or "spice"
	Listen string // an IP address
	// Password is the console's password, "" for none. It comes from the apply's configuration
	// (a write-only attribute) and is never logged, recorded or returned in an error.
	Password string
}

// Domain is a domain as read from the host.
type Domain struct {
	Name string
	UUID string
	ID   int32 // the hypervisor id of a running domain, -1 when it is not running
	// Status is the domain's state, converted once to the engine's.
	Status engine.Status
	// Reason is the host's reason for the domain's state, converted once to the engine's
	// (engine.StateReasonCrashed, engine.StateReasonIOError, ...); engine.StateReasonNone when
	// the host gives none worth telling.
	Reason engine.StateReason
	Disks  []Disk
	// Type, VCPU, MemoryMiB and Description are the domain's own: for a member, VCPU and
	// MemoryMiB are its persistent definition's (what its next start gets); for any other domain
	// they are as it runs.
	Type        string
	VCPU        int64
	MemoryMiB   int64
	Description string
	// Record is nil for a domain the provider did not create.
	Record *Record
	// RecordUndefined is true for a running domain whose live definition carries Record while
	// its persistent definition lacks it (removed with virsh metadata --remove --config): the
	// record is gone at the domain's next start unless it is written again.
	RecordUndefined bool
	// Adopted is true when the domain carries a virt_domain resource's adoption record: a
	// domain some Terraform state manages alone, which no group may adopt or take.
	Adopted bool
	// MACs are the MAC addresses of its network interfaces, in order, and Networks the libvirt
	// network each is attached to ("" for another kind of interface).
	MACs     []string
	Networks []string
	// Agent is true when a QEMU guest agent is connected to the domain.
	Agent bool
	// Seed is the volume in the domain's NoCloud seed drive, as defined; "" when the drive is
	// empty or there is none.
	Seed string
	// GraphicsPort is the port of the running domain's graphical console; 0 when it has none or
	// is not running.
	GraphicsPort int
}

// VolumeSpec describes a volume to create.
type VolumeSpec struct {
	Pool    string
	Name    string
	SizeMiB int64
	// BackingPath makes the volume a copy-on-write overlay of the image at that path.
	BackingPath string
	// BackingVolume, instead, makes it an overlay of that volume of Pool (an image the group
	// read into its pool), whose path libvirt gives.
	BackingVolume string
	// Fresh says the caller believes there is no such volume: it is created without looking
	// first, and one that is there after all is reported as not created, as usual.
	Fresh bool
}

// Volume is a volume as read from the host.
type Volume struct {
	Name          string
	Path          string
	CapacityBytes uint64
}

// Pool is a storage pool as read from the host.
type Pool struct {
	Name   string
	Path   string // the directory of a directory-backed pool, else ""
	Active bool
	// UUID is the pool's libvirt UUID and Target its target path whatever its type ("" when it
	// has none); ListPools and PoolByUUID fill them, LookupPool need not.
	UUID   string
	Target string
	// Autostart is whether libvirtd starts the pool when it starts (ListPools and PoolByUUID).
	Autostart bool
}

// ErrNotMigrated is wrapped by MigrateLive when the migration did not happen and the domain runs
// on at its source as before (libvirt refused or failed it, or it was aborted): a move may go on
// another way. A failure without it (a connection lost during the call) leaves the outcome
// unknown.
var ErrNotMigrated = errors.New("not migrated")

// NotRunningError is ShutdownDomain's error for a domain that is neither running nor shut off
// (paused, suspended or crashed): its guest cannot act on a shutdown request.
type NotRunningError struct {
	Domain string
	Status engine.Status
}

func (e *NotRunningError) Error() string {
	return fmt.Sprintf("domain %s is %s: it cannot act on a shutdown request", e.Domain, strings.ToLower(string(e.Status)))
}

// ErrExists is wrapped by UploadVolume when a volume of the name is there already.
var ErrExists = errors.New("already exists")

// VolumeStat is a volume as a copy between hosts sees it.
type VolumeStat struct {
	// Format is the volume's image format as libvirt reports it ("qcow2", "raw").
	Format string
	// CapacityBytes is the volume's virtual size; Bytes the length of its file, which is what a
	// download streams.
	CapacityBytes uint64
	Bytes         uint64
}

// VolumeUpload is a volume to make on a host with content streamed from another.
type VolumeUpload struct {
	Pool          string
	Name          string
	Format        string
	CapacityBytes uint64
	// Bytes is how many bytes the upload writes.
	Bytes uint64
}

// Migration is where a live migration goes and how long it may take.
type Migration struct {
	// DestURI is the destination host's libvirt URI, as the source host's daemon reaches it.
	DestURI string
	// Timeout bounds the migration; the job is aborted when it passes.
	Timeout time.Duration
}

// Volume kinds, as libvirt names them.
const (
	VolumeFile  = "file"
	VolumeBlock = "block"
	VolumeDir   = "dir"
)

// VolumeInfo is what plan-time checks need of an existing volume.
type VolumeInfo struct {
	Pool string
	Name string
	Path string
	Kind string // VolumeFile, VolumeBlock, VolumeDir or another libvirt kind
	// CapacityBytes is the volume's virtual size, as a guest sees it.
	CapacityBytes uint64
}

// ProbeSpec is one health probe, as the backend runs it (engine.Probe, with its timeout).
type ProbeSpec struct {
	Kind         string   // "guest_agent", "exec", "tcp", "http"
	Command      []string // exec: argv, run in the guest through the agent
	Port         int      // tcp, http
	Path         string   // http
	ExpectStatus int      // http
	Timeout      time.Duration
}

// ProbeResult is what one probe found.
type ProbeResult struct {
	OK bool
	// Reason says why the probe failed, quoting it: for exec the exit status and the first 1 KiB
	// of its output; "" when it passed.
	Reason string
}

// Limits are the most a domain of one type may have on this host.
type Limits struct {
	MaxVCPU   int64
	MemoryMiB int64 // the host's physical memory
}

// VolumeSpace is a volume's room in its pool (Snapshots.VolumeSpace).
type VolumeSpace struct {
	// PoolAvailableBytes is what the pool has free, as libvirt reports it (the free space of the
	// file system of a directory pool).
	PoolAvailableBytes uint64
	// AllocationBytes is what the volume's file takes on disk (its blocks, less than its length
	// when it is sparse); CapacityBytes its virtual size.
	AllocationBytes uint64
	CapacityBytes   uint64
}
