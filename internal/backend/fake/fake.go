// Package fake is an in-memory backend.Backend for unit tests of the reconcile logic. It is never
// a stand-in for libvirt in acceptance tests.
package fake

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Volume is a fake volume; Data stands for its bytes, so tests can tell a reused volume from a
// recreated one.
type Volume struct {
	SizeMiB int64
	Backing string
	// BackingVolume is the volume of the same pool the volume is an overlay of.
	BackingVolume string
	Data          string
	// Format is the image format StatVolume reports; "" is qcow2 for a volume with a size or a
	// backing image, raw for one that only holds bytes (see move.go).
	Format string
}

// Domain is a fake domain.
type Domain struct {
	Spec backend.DomainSpec
	UUID string
	ID   int32 // -1 when stopped
	// Unmanaged marks a domain no provider created: it is listed without a record until one is
	// set.
	Unmanaged bool
	// Autostart is what SetAutostart or the definition last set.
	Autostart bool
	// Transient marks a domain left running without a definition (see Backend.StartedSince).
	Transient bool
	// IgnoresACPI makes the guest ignore ShutdownDomain, as one with no OS or a hung one does;
	// only StopDomain (or UndefineDomain) stops it then. By default a guest honours the request
	// and is stopped at once.
	IgnoresACPI bool
	// Halted, when set (PAUSED, SUSPENDED or FAILED), is the status of a domain that is up but
	// not running, as libvirt's paused, pmsuspended and crashed: it is listed so, ShutdownDomain
	// refuses it as libvirt does (a *backend.NotRunningError), and StopDomain or StartDomain
	// clears it.
	Halted engine.Status
	// Adoption is the virt_domain resource's adoption record, nil when it has none.
	Adoption *backend.Adoption
}

type groupRecord struct {
	pool        string
	generations map[int64][]byte
}

// Backend is an in-memory host.
type Backend struct {
	mu      sync.Mutex
	Domains map[string]*Domain
	Volumes map[string]*Volume // "pool/name"
	Calls   map[string]int
	// Probes answers health probes by domain name; see Probe.
	Probes map[string]func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error)
	// Log is every operation in the order it was called, as "op object" ("shutdown db-1"), so
	// tests can check the order across calls; Calls only counts them.
	Log     []string
	nextID  int32
	nextUID int
	// FailOn makes the named operation fail for the named object (operation + " " + object).
	FailOn map[string]error
	// Hook, when set, is called with every operation and object, under the backend's lock; an
	// error it returns fails the operation. Tests use it to fail the n-th call of something.
	Hook func(op, obj string) error
	// MissingPools and MissingNetworks are what the lookups do not find.
	MissingPools    map[string]bool
	MissingNetworks map[string]bool
	// DHCPLeases are what Leases returns, by network and MAC address.
	DHCPLeases map[string]map[string][]string
	// Networks are the networks' DHCP set-ups and host entries, by name; one not in it is made
	// as DefaultDHCPNetwork describes when first read (see network_hosts.go).
	Networks map[string]*engine.DHCPNetwork
	// AgentAddresses are the addresses a connected guest agent reports, by domain; a domain
	// listed here is listed with Agent set.
	AgentAddresses map[string][]string
	// StartedSince are domains started behind the provider's back after its listing saw them
	// stopped: UndefineDomain leaves such a domain running without a definition, as libvirt
	// does when the backend skips the power-off, and StopDomain then removes it.
	StartedSince map[string]bool
	// Clock, when set, is moved on by the waits that last: a WaitStopped whose domain does not
	// stop ends its timeout after it began, on this clock, instead of answering at once.
	Clock  *Clock
	groups map[string]*groupRecord
	// pools are the pools defined by name (pool.go).
	pools map[string]*Pool
	// HostID is what HostUUID answers; "" is "fake".
	HostID string
	// MigrationPolls are, by domain, how many calls of MigrationRunning find a migration under
	// way before it ends.
	MigrationPolls map[string]int
	// Peers are the other fake hosts MigrateLive reaches, by the URI a migration names.
	Peers map[string]*Backend
	// MigrateDuration is how long a migration from this host would take: MigrateLive aborts one
	// whose Timeout is shorter (move.go).
	MigrateDuration time.Duration
	// Caps, when set, answers DomainCaps for a domain type, whatever the machine (see
	// DefaultCaps); a machine it does not list is unknown.
	Caps map[string]backend.DomainCaps
	// Virt is what HostVirt answers (no kvm by default).
	Virt engine.HostVirt
	// poolAvailable is what VolumeSpace reports pools have free (SetPoolAvailable).
	poolAvailable map[string]uint64
	// snapshots are the volumes' snapshots, by "pool/name" and tag: the volume's Data when each
	// was taken. They are not in Volume, which tests compare.
	snapshots map[string]map[string]string
}

var _ backend.Backend = (*Backend)(nil)

// New returns an empty host.
func New() *Backend {
	return &Backend{Domains: map[string]*Domain{}, Volumes: map[string]*Volume{}, Calls: map[string]int{}, FailOn: map[string]error{}, groups: map[string]*groupRecord{}}
}

func (b *Backend) call(op, obj string) error {
	b.Calls[op]++
	b.Log = append(b.Log, op+" "+obj)
	if err, ok := b.FailOn[op+" "+obj]; ok {
		return fmt.Errorf("%s %s: %w", op, obj, err)
	}
	if b.Hook != nil {
		if err := b.Hook(op, obj); err != nil {
			return fmt.Errorf("%s %s: %w", op, obj, err)
		}
	}
	return nil
}

func (b *Backend) ListDomains(_ context.Context, prefix string, names ...string) ([]backend.Domain, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("list", prefix); err != nil {
		return nil, err
	}
	match := backend.Matcher(prefix, names)
	var out []backend.Domain
	for name, d := range b.Domains {
		if !match(name) {
			continue
		}
		status := engine.StatusStopped
		if d.ID > 0 {
			status = engine.StatusRunning
			if d.Halted != "" {
				status = d.Halted
			}
		}
		dom := backend.Domain{Name: name, UUID: d.UUID, ID: d.ID, Status: status, Disks: append([]backend.Disk(nil), d.Spec.Disks...),
			Type: d.Spec.DomainType, VCPU: d.Spec.VCPU, MemoryMiB: d.Spec.MemoryMiB, Description: d.Spec.Description}
		if !d.Unmanaged {
			rec := d.Spec.Record
			dom.Record = &rec
		}
		dom.Adopted = d.Adoption != nil
		dom.MACs = append([]string(nil), d.Spec.MACs...)
		for _, n := range d.Spec.NICs {
			dom.Networks = append(dom.Networks, n.Network)
		}
		if d.Spec.Graphics != nil && d.ID > 0 {
			dom.GraphicsPort = FakeGraphicsPort
		}
		if d.Spec.Seed != nil {
			dom.Seed = d.Spec.Seed.Volume
		}
		_, dom.Agent = b.AgentAddresses[name]
		out = append(out, dom)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *Backend) DefineDomain(_ context.Context, spec backend.DomainSpec) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("define", spec.Name); err != nil {
		return err
	}
	if d, ok := b.Domains[spec.Name]; ok {
		if spec.UUID != d.UUID {
			return fmt.Errorf("define %s: domain already exists with uuid %s", spec.Name, d.UUID)
		}
		// A running domain without a definition (Transient) gets one, as with libvirt.
		d.Spec, d.Autostart, d.Transient = spec, spec.Autostart, false
		return nil
	}
	for _, disk := range spec.Disks {
		if _, ok := b.Volumes[disk.Pool+"/"+disk.Volume]; disk.Volume != "" && !ok {
			return fmt.Errorf("define %s: volume %s/%s does not exist", spec.Name, disk.Pool, disk.Volume)
		}
	}
	uuid := spec.UUID
	if uuid == "" {
		b.nextUID++
		uuid = fmt.Sprintf("uuid-%d", b.nextUID)
	}
	b.Domains[spec.Name] = &Domain{Spec: spec, UUID: uuid, ID: -1, Autostart: spec.Autostart}
	return nil
}

func (b *Backend) domain(op, name string) (*Domain, error) {
	if err := b.call(op, name); err != nil {
		return nil, err
	}
	d, ok := b.Domains[name]
	if !ok {
		return nil, fmt.Errorf("%s %s: %w", op, name, backend.ErrNotFound)
	}
	return d, nil
}

func (b *Backend) StartDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("start", name)
	if err != nil {
		return err
	}
	if d.ID < 0 {
		b.nextID++
		d.ID = b.nextID
	}
	d.Halted = ""
	if nv := d.Spec.NVRAM; nv != nil {
		// libvirt copies the firmware's variable store template to a missing NVRAM at the start.
		if _, ok := b.Volumes[nv.Pool+"/"+nv.Volume]; !ok {
			b.Volumes[nv.Pool+"/"+nv.Volume] = &Volume{Data: NVRAMTemplate}
		}
	}
	return nil
}

// NVRAMTemplate is what a fresh NVRAM volume holds.
const NVRAMTemplate = "OVMF_VARS"

func (b *Backend) StopDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("stop", name)
	if err != nil {
		return err
	}
	d.ID, d.Halted = -1, ""
	if d.Transient {
		delete(b.Domains, name)
	}
	return nil
}

// ShutdownDomain stops the domain at once unless its guest ignores ACPI; a halted one refuses,
// as libvirt does.
func (b *Backend) ShutdownDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("shutdown", name)
	if err != nil {
		return err
	}
	if d.ID > 0 && d.Halted != "" {
		return &backend.NotRunningError{Domain: name, Status: d.Halted}
	}
	if !d.IgnoresACPI {
		d.ID = -1
	}
	return nil
}

// WaitStopped does not wait: nothing changes in the fake unless a test or a call changes it, so
// it answers at once whether the domain is stopped. A missing domain is stopped. A domain that
// is still running has the wait last its whole timeout on Clock, when set.
func (b *Backend) WaitStopped(_ context.Context, name string, timeout time.Duration) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("wait-stopped", name); err != nil {
		return false, err
	}
	d, ok := b.Domains[name]
	stopped := !ok || d.ID < 0
	if !stopped && b.Clock != nil {
		b.Clock.wait(timeout)
	}
	return stopped, nil
}

func (b *Backend) UndefineDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("undefine", name); err != nil {
		return err
	}
	if d, ok := b.Domains[name]; ok && b.StartedSince[name] {
		delete(b.StartedSince, name)
		b.nextID++
		d.ID, d.Transient = b.nextID, true
		return nil
	}
	delete(b.Domains, name)
	return nil
}

func (b *Backend) DiskSources(context.Context) (map[string][]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("disk-sources", ""); err != nil {
		return nil, err
	}
	out := map[string][]string{}
	for n, d := range b.Domains {
		for _, disk := range d.Spec.Disks {
			switch {
			case disk.Path != "":
				out[n] = append(out[n], disk.Path)
			case disk.Volume != "":
				out[n] = append(out[n], "/fake/"+disk.Pool+"/"+disk.Volume)
			}
		}
	}
	return out, nil
}

func (b *Backend) TransientDomainNames(context.Context) (map[string]bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("names", ""); err != nil {
		return nil, err
	}
	names := map[string]bool{}
	for n, d := range b.Domains {
		if d.Transient {
			names[n] = true
		}
	}
	return names, nil
}

// AddUnmanaged defines a domain as if someone had made it by hand: no provider record.
func (b *Backend) AddUnmanaged(spec backend.DomainSpec) *Domain {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.nextUID++
	d := &Domain{Spec: spec, UUID: fmt.Sprintf("uuid-%d", b.nextUID), ID: -1, Unmanaged: true}
	b.Domains[spec.Name] = d
	return d
}

func (b *Backend) SetAutostart(_ context.Context, name string, on bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-autostart", name)
	if err != nil {
		return err
	}
	d.Autostart = on
	return nil
}
