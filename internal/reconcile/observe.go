package reconcile

import (
	"context"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Observation is the group's members as they are on their hosts.
type Observation struct {
	Observed []engine.Observed
	Domains  map[string]backend.Domain
	// Volumes are the names of the volumes in the group's pool on every host that answered;
	// nil when no pool could be listed.
	Volumes map[string]bool
	// HostVolumes are the same names host by host; a host whose pool cannot be listed has
	// none.
	HostVolumes map[string][]string
	// All is every domain of the group's hosts that could be a member (engine's Candidates) by
	// name, members or not, as the same listing read them.
	All map[string]backend.Domain
	// Down are the hosts that could not be listed, with why: their members are UNKNOWN.
	Down map[string]error
	// Taken are the names the group could have a member under that something else holds, with
	// who (engine's Env.Taken): a domain carrying another group's record, or another group's
	// claim on a name the group's configs give.
	Taken map[string]string
	// SnapshotTags are the tags of the volumes whose snapshots the inventory holds unsettled,
	// by host (engine.HostOf) and volume (engine's Env.SnapshotTags); a volume not read is
	// absent.
	SnapshotTags map[string]map[string][]string
	// HostUUIDs are the UUIDs of the hosts that answered (Backend.HostUUID), by host: what
	// tells whether a move can be live (engine's Env.HostUUIDs).
	HostUUIDs map[string]string
	// Images describe the group's source_image on the hosts where it is a host file the
	// provider reads (engine's Env.Images).
	Images map[string]engine.HostImage
	// Inventory is the inventory the group's record holds as the observation read it, nil when
	// the group has no record: a plan asks the record's, whatever the caller's copy of the
	// group holds (see withInventory).
	Inventory *engine.Inventory
	// At is when the observation ended, on the reconciler's clock: what members' health is
	// judged at (engine's Group.HealthOf) where no plan is made.
	At time.Time
	// Read are the hosts the observation read (or, under WithHostsSeen, took as its refresh
	// saw them), whether they answered or not.
	Read []string
}

// transient lists, in one call, the domains of doms that run without a persistent definition
// (a member undefined behind Terraform's back: drift). Only a running domain can lack one, so
// the call is spared when none runs; a host that cannot list them tells nothing.
func (r *Reconciler) transient(ctx context.Context, b backend.Domains, s engine.GroupState, h string, doms []backend.Domain) map[string]bool {
	if !slices.ContainsFunc(doms, func(d backend.Domain) bool { return d.ID >= 0 }) {
		return nil
	}
	names, err := b.TransientDomainNames(ctx)
	if err != nil {
		tflog.Warn(ctx, "cannot list the domains that run without a definition", map[string]any{"group": s.Group.Name, "host": engine.HostOf(h), "error": err.Error()})
		return nil
	}
	return names
}

// Observe lists the group's members on each of its hosts: every domain whose record names the
// group, and every domain no provider created that one of the group's configs names (to be
// adopted). A host that cannot be listed, other than the group record's host, does not fail
// the observation: the members the group placed there are UNKNOWN. With a health check, every
// running member is probed (probeMembers), under one time bound for the whole observation.
func (r *Reconciler) Observe(ctx context.Context, s engine.GroupState) (Observation, error) {
	o, err := r.observe(ctx, s)
	if err != nil {
		return o, err
	}
	if err := r.probeMembers(ctx, s, o.Observed); err != nil {
		return Observation{}, err
	}
	o.At = r.now()
	return o, nil
}

// observe is Observe without probes: what a deletion, which asks nothing of its members'
// health, reads. A live move that a cut-off apply left under way goes on in libvirt's daemons
// without it: the member is then between its two hosts, and what a reading shows of it changes
// under the plan. observe waits until such migrations end (at most engine.LiveMoveTimeout, the
// bound the migration itself has) and reads the hosts again.
func (r *Reconciler) observe(ctx context.Context, s engine.GroupState) (Observation, error) {
	return r.observeTags(ctx, s, true)
}

// observeTags is observe, reading the snapshot tables of volumes with unsettled snapshots when
// tags is true (readSnapshotTags). A destroy's observation has no use for them: its plan deletes
// or keeps each volume whole, its snapshots inside it, and the group's record with them.
func (r *Reconciler) observeTags(ctx context.Context, s engine.GroupState, tags bool) (Observation, error) {
	deadline := r.now().Add(engine.LiveMoveTimeout)
	for {
		o, migrating, err := r.observeOnce(ctx, s)
		// Under the group's lease the record is held (read once, kept as written): its
		// inventory costs no read. A plan made without the lease plans from the record its
		// caller just read.
		if err == nil && heldOf(ctx, s.Group.Name) != nil {
			if st, _, lerr := r.load(ctx, s.Group.Name); lerr == nil {
				inv := st.Inventory
				o.Inventory = &inv
			}
		}
		if err != nil {
			return o, err
		}
		if len(migrating) == 0 {
			if tags {
				r.readSnapshotTags(ctx, s, &o)
			}
			return o, nil
		}
		if r.now().After(deadline) {
			tflog.Warn(ctx, "live migrations a cut-off apply left are still under way: the group is read as it is", map[string]any{"group": s.Group.Name, "instances": migrating})
			if tags {
				r.readSnapshotTags(ctx, s, &o)
			}
			return o, nil
		}
		tflog.Info(ctx, "waiting for live migrations a cut-off apply left to end", map[string]any{"group": s.Group.Name, "instances": migrating})
		if err := r.sleep(ctx, migrationPoll); err != nil {
			return Observation{}, err
		}
	}
}

// migrationPoll is how often observe looks whether the migrations it waits for ended.
const migrationPoll = 500 * time.Millisecond

// migrating lists the domains of doms, listed on host h, that are the source of a live move of
// the group that is still migrating (see observe).
func (r *Reconciler) migrating(ctx context.Context, b backend.Migrator, s engine.GroupState, h string, doms []backend.Domain) []string {
	var out []string
	for _, d := range doms {
		if d.Record == nil || d.Record.Group != s.Group.Name {
			continue
		}
		mv := d.Record.Instance.Move
		if mv == nil || !mv.Live || engine.HostOf(mv.From) != engine.HostOf(h) || d.Status == engine.StatusStopped {
			continue
		}
		running, err := b.MigrationRunning(ctx, d.Name)
		if err != nil {
			tflog.Warn(ctx, "cannot read whether a live move is under way", map[string]any{"instance": d.Name, "host": h, "error": err.Error()})
			continue
		}
		if running {
			out = append(out, d.Name)
		}
	}
	return out
}

// observeOnce reads the group's hosts once, and the members whose live move is still migrating.
func (r *Reconciler) observeOnce(ctx context.Context, s engine.GroupState) (Observation, []string, error) {
	var migrating []string
	o := Observation{Domains: map[string]backend.Domain{}, All: map[string]backend.Domain{}, HostVolumes: map[string][]string{}}
	hosts := r.hostsOf(ctx, s)
	prefix, names := s.Candidates()
	// Every host is listed first; which of its domains are members is the engine's to say, over
	// the whole listing (engine's Classify), and each member is then read as the engine sees it.
	var listing []engine.Listed
	var listed []hostDomain
	seen := hostsSeen(ctx)
	reads, err := r.listHosts(ctx, s, hosts, seen, prefix, names)
	if err != nil {
		return Observation{}, nil, err
	}
	for i, h := range hosts {
		hl, err := reads[i].hl, reads[i].err
		if err != nil {
			if len(hosts) == 1 || ctx.Err() != nil {
				return Observation{}, nil, err
			}
			tflog.Warn(ctx, "host cannot be reached: its members are UNKNOWN", map[string]any{"group": s.Group.Name, "host": h, "error": err.Error()})
			if o.Down == nil {
				o.Down = map[string]error{}
			}
			o.Down[h] = err
			continue
		}
		if hl.volumes != nil {
			if o.Volumes == nil {
				o.Volumes = map[string]bool{}
			}
			for _, n := range hl.volumes {
				o.Volumes[n] = true
			}
			o.HostVolumes[h] = hl.volumes
		}
		migrating = append(migrating, hl.migrating...)
		for _, d := range hl.doms {
			if _, seen := o.All[d.Name]; !seen {
				o.All[d.Name] = d
			}
			listing = append(listing, listedOf(d, h))
			listed = append(listed, hostDomain{d: d, present: hl.present, transient: hl.transient[d.Name], poolDir: hl.poolDir})
		}
	}
	var runningCopies []hostName
	for i, c := range s.Classify(listing) {
		d, h := listed[i].d, listing[i].Host
		var obs engine.Observed
		switch c.Membership {
		case engine.MembershipManaged:
			obs = engine.Observed{Name: d.Name, Index: c.Index, Status: d.Status, Instance: d.Record.Instance, UUID: d.UUID, RecordLost: d.RecordUndefined,
				Attached: Shape(d, s.Pool).Disks, VCPU: d.VCPU, MemoryMiB: d.MemoryMiB, Missing: missingVolumes(d, s.Pool, listed[i].present), StateReason: d.Reason}
		case engine.MembershipAdopted:
			shape := Shape(d, s.Pool)
			shape.Disks = Spelled(shape.Disks, listed[i].poolDir, s.Config(d.Name))
			obs = engine.Observed{Name: d.Name, Index: c.Index, Status: d.Status, Unmanaged: true, Attached: shape.Disks, UUID: d.UUID,
				Instance: engine.ManagedInstance{Current: shape, Template: engine.AdoptedTemplate(shape)}}
		case engine.MembershipRecordLost:
			obs = engine.Observed{Name: d.Name, Index: c.Index, Status: d.Status, Instance: s.LostRecord(d.Name), RecordLost: true, UUID: d.UUID,
				Attached: Shape(d, s.Pool).Disks, VCPU: d.VCPU, MemoryMiB: d.MemoryMiB, Missing: missingVolumes(d, s.Pool, listed[i].present), StateReason: d.Reason}
		case engine.MembershipOtherGroup:
			o.take(d.Name, otherOwner(d, h))
			continue
		case engine.MembershipDuplicate:
			// A second domain for a member: left alone. One running on the source of its
			// member's move is noted below: which copy is the member is then the user's to say.
			if d.Record != nil && d.Record.Group == s.Group.Name && d.Status == engine.StatusRunning {
				runningCopies = append(runningCopies, hostName{h, d.Name})
			}
			continue
		default:
			// Not the group's: left alone.
			continue
		}
		obs.Host = h
		obs.Transient = listed[i].transient
		obs.MACs = d.MACs
		obs.GraphicsPort = d.GraphicsPort
		obs.Description = &d.Description
		if present := listed[i].present; obs.Instance.Current.CloudInit != nil && present != nil && !present[engine.SeedVolumeName(d.Name)] {
			obs.SeedMissing = true
		}
		o.Observed = append(o.Observed, obs)
		o.Domains[d.Name] = d
	}
	for _, c := range runningCopies {
		for i := range o.Observed {
			if mv := o.Observed[i].Instance.Move; mv != nil && o.Observed[i].Name == c.name && engine.HostOf(mv.From) == c.host {
				o.Observed[i].SourceRuns = true
			}
		}
	}
	o.Read = hosts
	if seen != nil && len(hosts) > 1 {
		// A UUID the refresh did not read (a host added to the group since, or every host's when
		// the group was on one host) is read now.
		o.HostUUIDs = seen.uuidsOf(hosts, o.Down)
		for h, id := range r.readUUIDs(ctx, seen.uuidsUnread(hosts), o.Down) {
			if o.HostUUIDs == nil {
				o.HostUUIDs = map[string]string{}
			}
			o.HostUUIDs[h] = id
		}
	} else {
		o.HostUUIDs = r.hostUUIDs(ctx, hosts, o.Down)
	}
	o.Images = r.hostImages(ctx, s, hosts, o.Down)
	if err := r.otherGroupsClaims(ctx, s, hosts, &o); err != nil {
		return Observation{}, nil, err
	}
	r.reservations(ctx, s, &o)
	// What the group placed on a host that did not answer is there, as far as anyone knows
	// (engine's Unreachable says which are).
	o.Observed = append(o.Observed, s.Unreachable(func(h string) bool { _, down := o.Down[h]; return down },
		func(name string) bool { _, seen := o.Domains[name]; return seen })...)
	sort.Slice(o.Observed, func(i, j int) bool {
		a, b := o.Observed[i], o.Observed[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.Name < b.Name
	})
	return o, migrating, nil
}

// hostListingsAtOnce bounds how many hosts observeOnce lists at once. Each listing is a few calls
// to its own daemon (and readConcurrency definition reads at a time), so the hosts' answers overlap
// rather than add up; the bound keeps a group over very many hosts from opening a connection to
// every one of them at the same moment.
const hostListingsAtOnce = 16

// hostRead is one host's listing for observeOnce, or why the host could not be listed.
type hostRead struct {
	hl  hostListing
	err error
}

// listHosts lists the group's hosts for observeOnce, hostListingsAtOnce at a time, each under its
// own bound (readHost), and returns what each gave in the order of hosts: a group over N hosts
// waits for about its slowest host, not for the sum of N, and hosts that do not answer cost a plan
// one bound together, not one each. A host seen down by the refresh the plan is made from is not
// read (SeenDownError). Only a host the provider does not have fails it.
func (r *Reconciler) listHosts(ctx context.Context, s engine.GroupState, hosts []string, seen *HostsSeen, prefix string, names []string) ([]hostRead, error) {
	backends := make([]backend.Backend, len(hosts))
	for i, h := range hosts {
		b, err := r.host(h)
		if err != nil {
			return nil, err
		}
		backends[i] = b
	}
	reads := make([]hostRead, len(hosts))
	sem := make(chan struct{}, hostListingsAtOnce)
	var wg sync.WaitGroup
	for i, h := range hosts {
		if why, down := seen.down(h); down && len(hosts) > 1 && seen.covers(h) {
			reads[i].err = &SeenDownError{Host: h, Why: why}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			// readHost may abandon the reading: the closure writes only its own hl, which is
			// kept once readHost returned nil.
			var hl hostListing
			err := readHost(ctx, h, func(ctx context.Context) error {
				var err error
				hl, err = r.listHost(ctx, backends[i], s, h, prefix, names)
				return err
			})
			if err == nil {
				reads[i].hl = hl
			}
			reads[i].err = err
		}()
	}
	wg.Wait()
	return reads, nil
}

// hostListing is what one host's reading in observeOnce found.
type hostListing struct {
	doms []backend.Domain
	// volumes are the names of the volumes in the group's pool, and present the same as a set;
	// both nil when the pool could not be listed.
	volumes   []string
	present   map[string]bool
	migrating []string
	transient map[string]bool
	poolDir   string
}

// hostReader is what listHost reads of a host.
type hostReader interface {
	backend.Domains
	backend.Volumes
	backend.Pools
	backend.Migrator
}

// listHost reads host h for observeOnce: its domains that could be members, the group's pool's
// volumes, and what else the members' reading needs of the host. Only the listing of domains
// failing fails it (the host is then down); the rest tells nothing when it cannot be read. It
// writes nothing but its result: a host that does not answer in time is abandoned to it
// (readHost).
func (r *Reconciler) listHost(ctx context.Context, b hostReader, s engine.GroupState, h, prefix string, names []string) (hostListing, error) {
	var hl hostListing
	doms, err := b.ListDomains(ctx, prefix, names...)
	if err != nil {
		return hl, err
	}
	hl.doms = doms
	// The pool's volumes tell which volumes the members need are gone; a pool that cannot
	// be listed tells nothing.
	if vols, err := b.ListVolumeNames(ctx, s.Pool, ""); err == nil {
		if vols == nil {
			// An empty pool was listed: it is known to hold nothing, which a nil listing
			// (a pool that could not be listed) does not say. The inventory judges a volume
			// on a host whose pool is unknown as not the group's to write over.
			vols = []string{}
		}
		hl.volumes = vols
		hl.present = make(map[string]bool, len(vols))
		for _, n := range vols {
			hl.present[n] = true
		}
	}
	hl.migrating = r.migrating(ctx, b, s, h, doms)
	hl.transient = r.transient(ctx, b, s, h, doms)
	hl.poolDir = unrecordedPoolDir(ctx, b, s.Pool, doms)
	if err := ctx.Err(); err != nil {
		// The host's time ran out after its domains were listed: what it told is incomplete
		// (a pool read as empty would show every member's volumes gone), so it is a host that
		// did not answer.
		return hostListing{}, err
	}
	return hl, nil
}

// hostName is a domain's name on one host.
type hostName struct{ host, name string }

// hostDomain is a listed domain with what its host's listing told of it besides.
type hostDomain struct {
	d backend.Domain
	// present are the volumes of the group's pool on the domain's host; nil when the pool
	// could not be listed.
	present   map[string]bool
	transient bool
	// poolDir is the directory of the group's pool on the domain's host, read only when the
	// host lists a domain no provider created (see Spelled); "" otherwise.
	poolDir string
}

// unrecordedPoolDir is the directory of the group's pool on a host, when the host lists a
// domain no provider created (one a config may adopt) and the pool is a directory; "" otherwise,
// which costs a host with no such domain no call.
func unrecordedPoolDir(ctx context.Context, b backend.Pools, pool string, doms []backend.Domain) string {
	for _, d := range doms {
		if d.Record == nil {
			if info, err := b.LookupPool(ctx, pool); err == nil {
				return info.Path
			}
			return ""
		}
	}
	return ""
}

// Spelled writes the disk sources of a domain no provider created as its config does, so that
// adopting it changes nothing and importing it writes a config users would write: a disk given
// by the path of a file in the group's pool directory (poolDir) is that pool's volume, named as
// the volume (a config's sources name the group's pool's volumes by name), unless the config
// names the same device with that path, which then stays the source. Any other path stays.
func Spelled(disks []engine.DesiredDisk, poolDir string, config engine.InstanceConfig) []engine.DesiredDisk {
	if poolDir == "" {
		return disks
	}
	dir := filepath.Clean(poolDir)
	out := slices.Clone(disks)
	for i, d := range out {
		if !filepath.IsAbs(d.Source) || filepath.Dir(filepath.Clean(d.Source)) != dir {
			continue
		}
		if slices.ContainsFunc(config.Disks, func(c engine.ConfigDisk) bool { return c.DeviceName == d.DeviceName && c.Source == d.Source }) {
			continue
		}
		out[i].Source = filepath.Base(d.Source)
	}
	return out
}

// DownHosts are the hosts that did not answer, by name.
func (o Observation) DownHosts() []string {
	out := make([]string, 0, len(o.Down))
	for h := range o.Down {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// missingVolumes lists the volumes of the pool that the domain's disks name and the pool lacks.
func missingVolumes(d backend.Domain, pool string, present map[string]bool) []string {
	if present == nil {
		return nil
	}
	var out []string
	for _, x := range d.Disks {
		if x.Volume != "" && (x.Pool == pool || x.Pool == "") && !present[x.Volume] {
			out = append(out, x.Volume)
		}
	}
	return out
}

// Shape is a domain as the engine sees it, for a domain no provider created: its disks name
// their volume in the group's pool, or their path.
func Shape(d backend.Domain, pool string) engine.DesiredInstance {
	di := engine.DesiredInstance{Name: d.Name, Shape: engine.Shape{DomainType: d.Type, VCPU: d.VCPU, MemoryMiB: d.MemoryMiB, Description: d.Description}}
	for _, x := range d.Disks {
		di.Disks = append(di.Disks, engine.DesiredDisk{DeviceName: x.DeviceName, Source: SourceOf(x, pool), ReadOnly: x.ReadOnly})
	}
	return di
}

// SourceOf names a disk's source as configs write it: a volume name in the group's pool, else a
// path.
func SourceOf(d backend.Disk, pool string) string {
	if d.Volume != "" && (d.Pool == pool || d.Path == "") {
		return d.Volume
	}
	return d.Path
}

// ObserveProbed is Observe with the members' probe outcomes given rather than probed: those a
// refresh of this Terraform run found (by member name; a member not in probed has none). The
// apply of a plan judges members as the plan the user approved did: probing again could find a
// guest that recovered or failed in between, and plan another action than the one approved.
// The apply's waits for ready probe for real.
func (r *Reconciler) ObserveProbed(ctx context.Context, s engine.GroupState, probed map[string]*engine.ProbeOutcome) (Observation, error) {
	o, err := r.observe(ctx, s)
	if err != nil {
		return o, err
	}
	for i := range o.Observed {
		if p := probed[o.Observed[i].Name]; p != nil && !o.Observed[i].Unknown {
			o.Observed[i].Probe = p
		}
	}
	o.At = r.now()
	return o, nil
}

// withInventory is s with the inventory its record holds, as o read it: the inventory of a copy
// of the group made before the last run (a caller's) misses what that run made.
func (o Observation) withInventory(s engine.GroupState) engine.GroupState {
	if o.Inventory != nil {
		s.Inventory = *o.Inventory
	}
	return s
}
