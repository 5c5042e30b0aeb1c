package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// What the group made, it owns; nothing else. A name of the group's scheme is never proof that a
// volume is the group's: a user may make "g-2-boot.qcow2" by hand. The group record keeps an
// inventory of every object the group made (Inventory), and every deletion, sweep and overwrite a
// plan's tasks do asks it (guardTasks). An object is written into the inventory as an intent
// before it is made, in the record write that precedes the run (GroupPlan.Inventory), and
// confirmed after the run (GroupPlan.FinalInventory); a run killed in between leaves intents,
// which the next plan settles from what the hosts show (recovered): an intent whose object exists
// is confirmed, one whose object is absent is dropped, and so is a confirmed entry whose object is
// gone (deleted by a run that was cut off before its record write, or by hand).
//
// An intent is only ever written for an object the plan saw absent on its host: what is there
// before the group makes it is not the group's, so a volume a creation refused to touch, or one
// reused under a member's name (identity reuse), never enters the inventory.

// MadeKind is the kind of an object the group made.
type MadeKind int

const (
	// MadeDomain is a member's domain, by host, name and UUID.
	MadeDomain MadeKind = iota
	// MadeVolume is a volume of the group's pool: a disk, a staged boot volume, a move's copy.
	MadeVolume
	// MadeNVRAM is an EFI member's NVRAM volume, which libvirt writes at the member's first
	// start.
	MadeNVRAM
	// MadeSeed is a member's NoCloud seed volume.
	MadeSeed
	// MadeReservation is a DHCP host entry (Name is "<network>/<mac>"): kept by the format, not
	// written yet (reservations are owned by the member's MAC, which only the group derives).
	MadeReservation
	// MadeSnapshot is a snapshot inside a volume the group made (Name is the volume, Tag the
	// snapshot's name in it): it goes with its volume.
	MadeSnapshot
)

var madeKindNames = [...]string{"domain", "volume", "nvram", "seed", "reservation", "snapshot"}

func (k MadeKind) String() string {
	if k < 0 || int(k) >= len(madeKindNames) {
		return fmt.Sprintf("made kind %d", int(k))
	}
	return madeKindNames[k]
}

// Made is one object of the inventory.
type Made struct {
	Kind MadeKind
	// Host is the host the object is on, as HostOf writes it.
	Host string
	// Name is the volume's name in the group's pool, or the domain's name.
	Name string
	// UUID is a domain's libvirt UUID, once known (a definition's UUID is chosen when it is
	// made: the intent has none, the confirmation has it).
	UUID string
	// Confirmed is false for an intent: the object was about to be made.
	Confirmed bool
	// Reclaimed marks a volume the group took over from the kept record of an earlier group of
	// its name (see kept.go): no destroy, scale-in or sweep deletes it, and a move copies it
	// (the copy keeps the mark) and then deletes its verified source.
	Reclaimed bool
	// Tag, Revision and TakenAt are a snapshot's name in its volume, the template revision its
	// member had and when it was taken (Unix milliseconds); ReadyAt is when the apply that took it
	// ended with its members ready (0: it did not succeed), from when the retention counts
	// (0: not yet known, until the apply that took it has succeeded).
	Tag      string
	Revision string
	TakenAt  int64
	ReadyAt  int64
}

func (m Made) key() string {
	if m.Kind == MadeSnapshot {
		return "snapshot:" + HostOf(m.Host) + "/" + m.Name + "@" + m.Tag
	}
	return objectKey(m.Kind == MadeDomain, m.Host, m.Name)
}

func objectKey(domain bool, host, name string) string {
	if domain {
		return "domain:" + HostOf(host) + "/" + name
	}
	return "volume:" + HostOf(host) + "/" + name
}

// Inventory is every object the group made, as its record keeps it.
type Inventory struct {
	// Kept is true once the record keeps an inventory (written by store version 7 or later):
	// a record of an earlier release has none, and gains one once (adopted).
	Kept  bool
	Items []Made
}

// is reports whether m is the object objectKey(domain, host, name) names, field by field: a
// domain, or a volume of any kind but a snapshot. The lookups below run once per object of a plan
// over every object, so a key string built per comparison made a 5,000-member destroy's plan spend
// 4 s on them (issue 47).
func (m Made) is(domain bool, host, name string) bool {
	return m.Kind != MadeSnapshot && (m.Kind == MadeDomain) == domain && m.Name == name && HostOf(m.Host) == host
}

// Has reports whether the inventory holds the volume on host (an intent or a confirmed entry).
func (inv Inventory) Has(host, volume string) bool {
	host = HostOf(host)
	return slices.ContainsFunc(inv.Items, func(m Made) bool { return m.is(false, host, volume) })
}

// Domain is the inventory's entry of the domain named name on host.
func (inv Inventory) Domain(host, name string) (Made, bool) {
	host = HostOf(host)
	for _, m := range inv.Items {
		if m.is(true, host, name) {
			return m, true
		}
	}
	return Made{}, false
}

// HasUUID reports whether a domain of the inventory has the UUID: whatever its metadata says,
// such a domain is the group's member.
func (inv Inventory) HasUUID(uuid string) bool {
	return uuid != "" && slices.ContainsFunc(inv.Items, func(m Made) bool { return m.Kind == MadeDomain && strings.EqualFold(m.UUID, uuid) })
}

// sorted is the inventory with its items in a stable order, each once.
func (inv Inventory) sorted() Inventory {
	seen := map[string]int{}
	var out []Made
	for _, m := range inv.Items {
		m.Host = HostOf(m.Host)
		if i, ok := seen[m.key()]; ok {
			// The later word on an object wins: a confirmation over its intent.
			out[i] = m
			continue
		}
		seen[m.key()] = len(out)
		out = append(out, m)
	}
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		if out[i].Name != out[j].Name {
			return out[i].Name < out[j].Name
		}
		return out[i].Kind < out[j].Kind
	})
	return Inventory{Kept: inv.Kept, Items: out}
}

// Equal reports whether two inventories hold the same objects in the same states.
func (inv Inventory) Equal(o Inventory) bool {
	a, b := inv.sorted(), o.sorted()
	return a.Kept == b.Kept && slices.Equal(a.Items, b.Items)
}

// Listing is what the hosts' pools showed when the plan was made, by host: a host whose pool was
// not listed has none. It is not part of the record.
type Listing map[string]map[string]bool

// listingOf reads the pools' volumes host by host; with no per-host listing, the union of every
// host's (Env.Volumes) stands for each host's.
func listingOf(hostVolumes map[string][]string, union map[string]bool, hosts []string) Listing {
	l := Listing{}
	for h, names := range hostVolumes {
		set := make(map[string]bool, len(names))
		for _, n := range names {
			set[n] = true
		}
		l[HostOf(h)] = set
	}
	if len(hostVolumes) == 0 && union != nil {
		l[DefaultHost] = union
		for _, h := range hosts {
			l[HostOf(h)] = union
		}
	}
	return l
}

func (l Listing) present(host, volume string) (present, known bool) {
	set, ok := l[HostOf(host)]
	if !ok {
		return false, false
	}
	return set[volume], true
}

// Inventoried is s with the inventory its plans ask: the record's, or, for a record of an
// earlier release, the one adopted from what it proves (adopted), settled against what the hosts
// show (recovered). Every plan that deletes or writes over anything starts from it.
func (s GroupState) Inventoried(observed []Observed, env Env) GroupState {
	return s.inventoriedFrom(observed, listingOf(env.HostVolumes, env.Volumes, env.Hosts), env.SnapshotTags)
}

func (s GroupState) inventoriedFrom(observed []Observed, l Listing, tags map[string]map[string][]string) GroupState {
	inv := s.Inventory
	if !inv.Kept {
		inv = s.adopted(observed)
	}
	s.Inventory = s.clearReclaimed(inv.recovered(observed, l, tags))
	s.Listed = l
	return s
}

// adopted is the inventory a record from before version 7 gains, once: only what the record
// proves the group made. A domain is the group's when it carries the group's member record and
// its name is one the record placed (or any name, for a record from before groups kept their
// placement: such a record could not tell, and its members' records are what it had); with it go
// the volumes its definition or its record uses under its own deterministic names that the group
// made from its template (createdByGroup), its NVRAM when its record names it, and its seed when
// it has cloud-init. A volume no member holds is not adopted: nothing in the record proves that
// the group made it, so it is left, and plans name it. An adopted domain's disks (a domain no
// provider created, which the group took over) are its own and are not adopted either.
func (s GroupState) adopted(observed []Observed) Inventory {
	inv := Inventory{Kept: true}
	for _, o := range observed {
		if o.Unmanaged || o.Unknown || s.Group.Abandoned(o.Name) {
			continue
		}
		if _, placed := s.Placement[o.Name]; !placed && (s.Placed || len(s.Placement) > 0) {
			continue
		}
		host := HostOf(o.Host)
		inv.Items = append(inv.Items, Made{Kind: MadeDomain, Host: host, Name: o.Name, UUID: o.UUID, Confirmed: true})
		if o.Instance.Template.Adopted {
			continue
		}
		mi := o.Instance
		for _, d := range knownVolumes(o) {
			if createdByGroup(o.Name, d.DeviceName, d.Source, mi.Current, deref(mi.InFlight)) {
				inv.Items = append(inv.Items, Made{Kind: MadeVolume, Host: host, Name: d.Source, Confirmed: true})
			}
		}
		if ownNVRAM(o) {
			inv.Items = append(inv.Items, Made{Kind: MadeNVRAM, Host: host, Name: NVRAMVolumeName(o.Name), Confirmed: true})
		}
		if mi.Current.CloudInit != nil {
			inv.Items = append(inv.Items, Made{Kind: MadeSeed, Host: host, Name: SeedVolumeName(o.Name), Confirmed: true})
		}
	}
	return inv.sorted()
}

// recovered is the inventory settled against what the hosts show: an object that exists is
// confirmed (a domain with the UUID it has now), one that is gone is dropped. A host that did not
// answer, or whose pool was not listed, keeps its entries as they are. A snapshot is settled
// against its volume's tags where they were read (tags: see Env.SnapshotTags).
func (inv Inventory) recovered(observed []Observed, l Listing, tags map[string]map[string][]string) Inventory {
	domains := map[string]Observed{}
	answered := map[string]bool{}
	for _, o := range observed {
		if o.Unknown {
			continue
		}
		answered[HostOf(o.Host)] = true
		if !o.Unmanaged {
			domains[objectKey(true, o.Host, o.Name)] = o
		}
	}
	for h := range l {
		answered[h] = true
	}
	out := Inventory{Kept: inv.Kept}
	for _, m := range inv.Items {
		if m.Kind == MadeDomain {
			o, ok := domains[m.key()]
			switch {
			case ok && (m.UUID == "" || strings.EqualFold(m.UUID, o.UUID)):
				m.UUID, m.Confirmed = o.UUID, true
			case ok:
				// Another domain under the member's name: the one the group made is gone.
				continue
			case answered[HostOf(m.Host)]:
				continue
			}
			out.Items = append(out.Items, m)
			continue
		}
		if m.Kind == MadeReservation {
			out.Items = append(out.Items, m)
			continue
		}
		present, known := l.present(m.Host, m.Name)
		if m.Kind == MadeSnapshot {
			if m, ok := m.inVolume(known && !present, tags); ok {
				out.Items = append(out.Items, m)
			}
			continue
		}
		switch {
		case known && present:
			m.Confirmed = true
		case known && m.Kind == MadeNVRAM:
			// libvirt writes an NVRAM file when the member first starts, behind its pool's
			// back: a listing made before the pool was refreshed does not show it. It stays
			// until a deletion of the group takes it out.
		case known:
			continue
		}
		out.Items = append(out.Items, m)
	}
	return out.sorted()
}

// LeftVolumes lists, once each in order, the volumes the plan leaves because the group did not
// make them.
func (p GroupPlan) LeftVolumes() []Left {
	seen := map[Left]bool{}
	var out []Left
	add := func(l Left) {
		if !seen[l] {
			seen[l] = true
			out = append(out, l)
		}
	}
	for _, l := range p.Left {
		add(l)
	}
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, l := range op.Left {
				add(l)
			}
		}
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Host != out[j].Host {
			return out[i].Host < out[j].Host
		}
		return out[i].Volume < out[j].Volume
	})
	return out
}

// volumeOf reports whether the volume is one of the member's own by its name: a disk's, its staged
// boot volume, its NVRAM or its seed.
func volumeOf(member, volume string) bool {
	if volume == SeedVolumeName(member) || volume == NVRAMVolumeName(member) || volume == StagingVolumeName(member) {
		return true
	}
	stem, ok := strings.CutSuffix(volume, "."+VolumeFormat)
	if !ok {
		return false
	}
	device, ok := strings.CutPrefix(stem, member+"-")
	return ok && (ValidDeviceName(device) || device == BootDeviceName)
}
