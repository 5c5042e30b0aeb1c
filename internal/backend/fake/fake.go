// Package fake is an in-memory backend.Backend for unit tests of the reconcile logic. It is never
// a stand-in for libvirt in acceptance tests.
package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"
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
	Data    string
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
}

// Clock is a fake clock that waits move on instead of taking time, so that a test reads how long
// a run would have taken without a timing threshold. The fake runs its calls one at a time, so
// the clock is exact for a run of one worker; concurrent waits would add up.
type Clock struct {
	mu  sync.Mutex
	now time.Time
}

// NewClock returns a clock that reads start.
func NewClock(start time.Time) *Clock { return &Clock{now: start} }

// Now reads the clock.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// wait is a wait of d from now.
func (c *Clock) wait(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(max(d, 0))
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

func (b *Backend) DefaultDomainType(context.Context) (string, error) { return "qemu", nil }

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
		}
		dom := backend.Domain{Name: name, UUID: d.UUID, ID: d.ID, Status: status, Disks: append([]backend.Disk(nil), d.Spec.Disks...),
			Type: d.Spec.Type, VCPU: d.Spec.VCPU, MemoryMiB: d.Spec.MemoryMiB, Description: d.Spec.Description}
		if !d.Unmanaged {
			rec := d.Spec.Record
			dom.Record = &rec
		}
		dom.MACs = append([]string(nil), d.Spec.MACs...)
		for _, n := range d.Spec.NICs {
			dom.Networks = append(dom.Networks, n.Network)
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
	return nil
}

func (b *Backend) StopDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("stop", name)
	if err != nil {
		return err
	}
	d.ID = -1
	if d.Transient {
		delete(b.Domains, name)
	}
	return nil
}

// ShutdownDomain stops the domain at once unless its guest ignores ACPI.
func (b *Backend) ShutdownDomain(_ context.Context, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("shutdown", name)
	if err != nil {
		return err
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

func (b *Backend) SetRecord(_ context.Context, name string, rec backend.Record) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-record", name)
	if err != nil {
		return err
	}
	d.Spec.Record, d.Unmanaged = rec, false
	return nil
}

func (b *Backend) SetDescription(_ context.Context, name, description string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("set-description", name)
	if err != nil {
		return err
	}
	d.Spec.Description = description
	return nil
}

func (b *Backend) AttachDisk(_ context.Context, name string, disk backend.Disk) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("attach", name)
	if err != nil {
		return err
	}
	d.Spec.Disks = append(d.Spec.Disks, disk)
	return nil
}

func (b *Backend) DetachDisk(_ context.Context, name, device string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("detach", name)
	if err != nil {
		return err
	}
	var keep []backend.Disk
	for _, x := range d.Spec.Disks {
		if x.DeviceName != device {
			keep = append(keep, x)
		}
	}
	d.Spec.Disks = keep
	return nil
}

func (b *Backend) GrowDisk(_ context.Context, name, _ string, disk backend.Disk, sizeMiB int64) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("grow", name); err != nil {
		return err
	}
	v, ok := b.Volumes[disk.Pool+"/"+disk.Volume]
	if !ok {
		return fmt.Errorf("grow %s: %w", disk.Volume, backend.ErrNotFound)
	}
	v.SizeMiB = sizeMiB
	return nil
}

func (b *Backend) EnsureVolume(_ context.Context, spec backend.VolumeSpec) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("ensure-volume", spec.Name); err != nil {
		return false, err
	}
	key := spec.Pool + "/" + spec.Name
	if _, ok := b.Volumes[key]; ok {
		return false, nil
	}
	b.Volumes[key] = &Volume{SizeMiB: spec.SizeMiB, Backing: spec.BackingPath}
	return true, nil
}

// WriteSeed stores data as the volume's Data.
func (b *Backend) WriteSeed(_ context.Context, pool, name string, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("write-seed", name); err != nil {
		return err
	}
	b.Volumes[pool+"/"+name] = &Volume{Data: string(data)}
	return nil
}

// ReplaceSeed stores the seed and puts it in the domain's drive.
func (b *Backend) ReplaceSeed(_ context.Context, name string, seed backend.Disk, data []byte) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, err := b.domain("replace-seed", name)
	if err != nil {
		return err
	}
	if d.Spec.Seed == nil {
		return fmt.Errorf("replace-seed %s: the domain has no seed drive", name)
	}
	b.Volumes[seed.Pool+"/"+seed.Volume] = &Volume{Data: string(data)}
	s := seed
	d.Spec.Seed = &s
	return nil
}

// GuestAddresses returns AgentAddresses[name]; a domain not in it has no agent to ask.
func (b *Backend) GuestAddresses(_ context.Context, name string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("guest-addresses", name); err != nil {
		return nil, err
	}
	ips, ok := b.AgentAddresses[name]
	if !ok {
		return nil, fmt.Errorf("guest-addresses %s: the guest agent is not connected", name)
	}
	return ips, nil
}

// Leases returns DHCPLeases[network].
func (b *Backend) Leases(_ context.Context, network string) (map[string][]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("leases", network); err != nil {
		return nil, err
	}
	if b.MissingNetworks[network] {
		return nil, fmt.Errorf("network %s: %w", network, backend.ErrNotFound)
	}
	return b.DHCPLeases[network], nil
}

func (b *Backend) DeleteVolume(_ context.Context, pool, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("delete-volume", name); err != nil {
		return err
	}
	delete(b.Volumes, pool+"/"+name)
	return nil
}

func (b *Backend) ListVolumeNames(ctx context.Context, pool, prefix string) ([]string, error) {
	vols, err := b.ListVolumes(ctx, pool, prefix)
	names := make([]string, len(vols))
	for i, v := range vols {
		names[i] = v.Name
	}
	return names, err
}

func (b *Backend) ListVolumes(_ context.Context, pool, prefix string) ([]backend.Volume, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []backend.Volume
	for key, v := range b.Volumes {
		p, name, _ := strings.Cut(key, "/")
		if p == pool && strings.HasPrefix(name, prefix) {
			out = append(out, backend.Volume{Name: name, Path: "/fake/" + key, CapacityBytes: uint64(v.SizeMiB) << 20})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

// VolumeNames lists the volumes of a pool, sorted.
func (b *Backend) VolumeNames(pool string) []string {
	vols, _ := b.ListVolumes(context.Background(), pool, "")
	out := make([]string, len(vols))
	for i, v := range vols {
		out[i] = v.Name
	}
	return out
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

func (b *Backend) ReadGroupRecord(_ context.Context, group string) (backend.GroupRecord, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("read-group", group); err != nil {
		return backend.GroupRecord{}, err
	}
	g, ok := b.groups[group]
	if !ok || len(g.generations) == 0 {
		return backend.GroupRecord{}, fmt.Errorf("group record of %s: %w", group, backend.ErrNotFound)
	}
	var newest int64
	for gen := range g.generations {
		newest = max(newest, gen)
	}
	return backend.GroupRecord{Pool: g.pool, Generation: newest, Data: append([]byte(nil), g.generations[newest]...)}, nil
}

func (b *Backend) WriteGroupRecord(_ context.Context, group string, rec backend.GroupRecord) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("write-group", group); err != nil {
		return err
	}
	g, ok := b.groups[group]
	if !ok {
		g = &groupRecord{pool: rec.Pool, generations: map[int64][]byte{}}
		b.groups[group] = g
	}
	if _, taken := g.generations[rec.Generation]; taken {
		return fmt.Errorf("write group record %s generation %d: %w", group, rec.Generation, backend.ErrConflict)
	}
	g.generations[rec.Generation] = append([]byte(nil), rec.Data...)
	return nil
}

// ListGroups lists the groups that have a record.
func (b *Backend) ListGroups(context.Context) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("list-groups", ""); err != nil {
		return nil, err
	}
	var out []string
	for g, rec := range b.groups {
		if len(rec.generations) > 0 {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (b *Backend) DeleteGroupRecord(_ context.Context, _, group string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("delete-group", group); err != nil {
		return err
	}
	delete(b.groups, group)
	return nil
}

// LookupPool finds every pool active, with its directory at /fake/<pool>, unless MissingPools
// names it.
func (b *Backend) LookupPool(_ context.Context, name string) (backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-pool", name); err != nil {
		return backend.Pool{}, err
	}
	if b.MissingPools[name] {
		return backend.Pool{}, fmt.Errorf("look up storage pool %s: %w", name, backend.ErrNotFound)
	}
	return backend.Pool{Name: name, Path: "/fake/" + name, Active: true}, nil
}

// LookupNetwork finds every network active unless MissingNetworks names it.
func (b *Backend) LookupNetwork(_ context.Context, name string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-network", name); err != nil {
		return false, err
	}
	if b.MissingNetworks[name] {
		return false, fmt.Errorf("look up network %s: %w", name, backend.ErrNotFound)
	}
	return true, nil
}

// LookupVolume finds the volumes the fake holds, by name or by their path /fake/<pool>/<name>.
func (b *Backend) LookupVolume(_ context.Context, pool, nameOrPath string) (backend.VolumeInfo, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-volume", nameOrPath); err != nil {
		return backend.VolumeInfo{}, err
	}
	key := pool + "/" + nameOrPath
	if rest, ok := strings.CutPrefix(nameOrPath, "/fake/"); ok {
		key = rest
	}
	v, ok := b.Volumes[key]
	if !ok {
		return backend.VolumeInfo{}, fmt.Errorf("look up volume %s: %w", nameOrPath, backend.ErrNotFound)
	}
	p, name, _ := strings.Cut(key, "/")
	return backend.VolumeInfo{Pool: p, Name: name, Path: "/fake/" + key, Kind: backend.VolumeFile, CapacityBytes: uint64(v.SizeMiB) << 20}, nil
}

// Limits are a small host's: 16 vCPUs, 4 GiB.
func (b *Backend) Limits(context.Context, string) (backend.Limits, error) {
	return backend.Limits{MaxVCPU: 16, MemoryMiB: 4096}, nil
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
