package libvirt

import (
	"bytes"
	"context"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The helper domain a snapshot call works through (see snapshot.go), and the lock that keeps two
// calls on one volume from sharing it.

// helperName is the name of the helper domain of a volume. A group's member names never hold a
// '.', so ListDomains' member prefix "<base>-" never matches a helper.
func helperName(volume string) string {
	return "snapshot." + strings.TrimSuffix(volume, "."+engine.VolumeFormat)
}

// helperMarker is the element a helper domain carries in the provider's metadata namespace: it
// says which volume the helper is for, so that a helper left by a run cut off mid-way is told
// apart from a domain someone else named so. The member record's parser looks for its own
// local name ("instance") and ignores this one.
type helperMarker struct {
	XMLName xml.Name `xml:"https://virtfleet.dev/xmlns/virt/1 snapshot-helper"`
	Pool    string   `xml:"pool"`
	Volume  string   `xml:"volume"`
}

// helperDisk is the helper's one disk's target.
const helperDisk = "vda"

// helperXML is the definition of the helper domain of pool/volume: type qemu, 16 MiB, the volume
// as its only disk (by pool and volume, as members have theirs), no balloon, the marker.
func helperXML(pool, volume, uuid string) (string, error) {
	var marker bytes.Buffer
	fmt.Fprintf(&marker, `<%s:snapshot-helper xmlns:%s="%s"><%s:pool>`, metadataKey, metadataKey, Namespace, metadataKey)
	if err := xml.EscapeText(&marker, []byte(pool)); err != nil {
		return "", err
	}
	fmt.Fprintf(&marker, `</%s:pool><%s:volume>`, metadataKey, metadataKey)
	if err := xml.EscapeText(&marker, []byte(volume)); err != nil {
		return "", err
	}
	fmt.Fprintf(&marker, `</%s:volume></%s:snapshot-helper>`, metadataKey, metadataKey)
	dom := libvirtxml.Domain{
		Type:        "qemu",
		Name:        helperName(volume),
		UUID:        uuid,
		Description: fmt.Sprintf("terraform-provider-virt: takes, reverts or deletes a snapshot of volume %s/%s; never started, undefined when done", pool, volume),
		Metadata:    &libvirtxml.DomainMetadata{XML: marker.String()},
		Memory:      &libvirtxml.DomainMemory{Value: 16, Unit: "MiB"},
		OS:          &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{
			Disks: []libvirtxml.DomainDisk{{
				Device: "disk",
				Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: engine.VolumeFormat},
				Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: pool, Volume: volume}},
				Target: &libvirtxml.DomainDiskTarget{Dev: helperDisk, Bus: "virtio"},
			}},
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		},
	}
	return dom.Marshal()
}

// markerOf reads the helper marker from a domain's definition; nil when it has none.
func markerOf(doc string) (*helperMarker, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		return nil, err
	}
	if dom.Metadata == nil {
		return nil, nil
	}
	dec := xml.NewDecoder(strings.NewReader(dom.Metadata.XML))
	for {
		tok, err := dec.Token()
		if err != nil {
			return nil, nil //nolint:nilerr // the end of the metadata without a marker
		}
		start, ok := tok.(xml.StartElement)
		if !ok || start.Name.Space != Namespace || start.Name.Local != "snapshot-helper" {
			continue
		}
		var m helperMarker
		if err := dec.DecodeElement(&m, &start); err != nil {
			return nil, err
		}
		return &m, nil
	}
}

// snapshotXML is the internal snapshot of the disk named disk (its target); the memory is not
// saved. With domainXML, it is the definition REDEFINE takes: the snapshot, shut off, at
// creationTime, of that domain (REDEFINE refuses a domain whose UUID is not the domain's it is
// redefined on, and a revert needs it).
//
// A domain's other disks are not listed: libvirt 9.0 refuses, on REDEFINE too, a snapshot that
// leaves out a qcow2 disk (snapshot="no": "disk 'sda' must use snapshot mode 'internal'"), and
// fills in those not listed itself. It is only metadata: what a deletion deletes is the tag, on
// every disk that holds it.
func snapshotXML(tag, disk string, creationTime int64, domainXML string) (string, error) {
	s := libvirtxml.DomainSnapshot{
		Name:   tag,
		Memory: &libvirtxml.DomainSnapshotMemory{Snapshot: "no"},
		Disks:  &libvirtxml.DomainSnapshotDisks{Disks: []libvirtxml.DomainSnapshotDisk{{Name: disk, Snapshot: "internal"}}},
	}
	if domainXML != "" {
		s.State = "shutoff"
		s.CreationTime = fmt.Sprint(creationTime)
	}
	doc, err := s.Marshal()
	if err != nil || domainXML == "" {
		return doc, err
	}
	// The domain's definition goes in as libvirt wrote it, rather than through libvirtxml,
	// which could drop what it does not know.
	end := "</domainsnapshot>"
	if !strings.HasSuffix(doc, end) {
		return "", fmt.Errorf("snapshot XML %q does not end with %s", doc, end)
	}
	return strings.TrimSuffix(doc, end) + domainXML + end, nil
}

// helper is the helper domain one call defined.
type helper struct {
	d   golibvirt.Domain
	doc string // its inactive definition, as libvirt gives it
}

// defineHelper defines the helper domain of pool/volume, after undefining one a cut-off run
// left: only a domain of the helper's name that carries the marker for this same volume and is
// not running; any other domain of the name is left as it is, and the call fails naming it.
func (c conn) defineHelper(pool, volume string) (helper, error) {
	name := helperName(volume)
	object := pool + "/" + volume
	if d, err := c.l.DomainLookupByName(name); err == nil {
		if err := c.dropLeftover(d, pool, volume); err != nil {
			return helper{}, err
		}
	} else if !isCode(err, golibvirt.ErrNoDomain) {
		return helper{}, wrap("look up snapshot helper domain", name, err)
	}
	doc, err := helperXML(pool, volume, randomUUID())
	if err != nil {
		return helper{}, fmt.Errorf("build the snapshot helper domain of volume %s: %w", object, err)
	}
	d, err := c.l.DomainDefineXMLFlags(doc, 0)
	if err != nil {
		return helper{}, wrap("define snapshot helper domain", name+" for volume "+object, err)
	}
	h := helper{d: d}
	if h.doc, err = c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive); err != nil {
		return h, wrap("read snapshot helper domain", name, err)
	}
	return h, nil
}

// dropLeftover undefines d, a domain of the helper's name found before the helper was defined,
// when it is a helper of pool/volume that does not run.
func (c conn) dropLeftover(d golibvirt.Domain, pool, volume string) error {
	doc, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
	if err != nil {
		return wrap("read domain", d.Name, err)
	}
	m, err := markerOf(doc)
	if err != nil {
		return fmt.Errorf("read domain %s: %w", d.Name, err)
	}
	if m == nil || m.Pool != pool || m.Volume != volume {
		return fmt.Errorf("snapshot of volume %s/%s: a domain named %s exists and is not this volume's snapshot helper (it has no marker for it); it is left untouched: rename or undefine it", pool, volume, d.Name)
	}
	state, _, err := c.l.DomainGetState(d, 0)
	if err != nil {
		return wrap("read state of domain", d.Name, err)
	}
	if golibvirt.DomainState(state) != golibvirt.DomainShutoff {
		return fmt.Errorf("snapshot of volume %s/%s: the snapshot helper domain %s left by an earlier run is not shut off (state %d), which no run of the provider does; it is left as it is", pool, volume, d.Name, state)
	}
	return c.undefineHelper(d)
}

// undefineHelper undefines the helper, with any snapshot metadata it still has: the metadata
// alone, so that no qcow2 snapshot is lost. A helper already gone is not an error.
func (c conn) undefineHelper(d golibvirt.Domain) error {
	err := c.l.DomainUndefineFlags(d, golibvirt.DomainUndefineSnapshotsMetadata)
	if isCode(err, golibvirt.ErrNoDomain) {
		return nil
	}
	return wrap("undefine snapshot helper domain", d.Name, err)
}

// withHelper runs fn with the helper of pool/volume defined, and undefines it after, whatever fn
// did. It is run through do, so it may run twice: the second run finds the first's helper by its
// marker and undefines it first.
func (c conn) withHelper(pool, volume string, fn func(h helper) error) error {
	h, err := c.defineHelper(pool, volume)
	if err != nil {
		if h.d.Name != "" {
			err = errors.Join(err, c.undefineHelper(h.d))
		}
		return err
	}
	err = fn(h)
	if uerr := c.undefineHelper(h.d); uerr != nil {
		err = errors.Join(err, uerr)
	}
	return err
}

// redefine puts back the metadata of snapshot tag on d, a domain whose definition is doc and
// whose disk named disk holds the qcow2 snapshot, so that libvirt's revert or deletion can act
// on it.
func (c conn) redefine(d golibvirt.Domain, doc, tag, disk string) (golibvirt.DomainSnapshot, error) {
	sx, err := snapshotXML(tag, disk, time.Now().Unix(), doc)
	if err != nil {
		return golibvirt.DomainSnapshot{}, fmt.Errorf("build the snapshot %s of domain %s: %w", tag, d.Name, err)
	}
	s, err := c.l.DomainSnapshotCreateXML(d, sx, uint32(golibvirt.DomainSnapshotCreateRedefine))
	return s, wrap("redefine snapshot "+tag+" of domain", d.Name, err)
}

// dropMetadata removes libvirt's metadata of the snapshot, and leaves the qcow2 snapshot.
func (c conn) dropMetadata(s golibvirt.DomainSnapshot) error {
	err := c.l.DomainSnapshotDelete(s, golibvirt.DomainSnapshotDeleteMetadataOnly)
	if isCode(err, golibvirt.ErrNoDomainSnapshot) {
		return nil
	}
	return wrap("remove the metadata of snapshot "+s.Name+" of domain", s.Dom.Name, err)
}

// deleteHelperSnapshot deletes one qcow2 snapshot of tag from the helper's volume (the first of
// the tag, when there are more).
func (c conn) deleteHelperSnapshot(h helper, tag string) error {
	s, err := c.redefine(h.d, h.doc, tag, helperDisk)
	if err != nil {
		return err
	}
	if err := c.l.DomainSnapshotDelete(s, 0); err != nil {
		return errors.Join(wrap("delete snapshot "+tag+" of domain", h.d.Name, err), c.dropMetadata(s))
	}
	return nil
}

// volumeLocks are the volumes snapshot calls of one Backend work on, one call per volume at a
// time: two calls on one volume would share its helper domain's name, and each would take the
// other's helper for a leftover and undefine it under it.
type volumeLocks struct {
	mu   sync.Mutex
	held map[string]chan struct{}
}

// lock waits until no other call holds the volume, or ctx ends, and returns the unlock.
func (l *volumeLocks) lock(ctx context.Context, op, object string) (func(), error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	for {
		l.mu.Lock()
		if l.held == nil {
			l.held = map[string]chan struct{}{}
		}
		busy, ok := l.held[object]
		if !ok {
			done := make(chan struct{})
			l.held[object] = done
			l.mu.Unlock()
			return func() {
				l.mu.Lock()
				delete(l.held, object)
				l.mu.Unlock()
				close(done)
			}, nil
		}
		l.mu.Unlock()
		select {
		case <-busy:
		case <-ctx.Done():
			return nil, fmt.Errorf("%s %s: another snapshot call on the volume did not end in time: %w", op, object, context.Cause(ctx))
		}
	}
}

// DropSnapshotHelper undefines the helper of pool/volume a cut-off snapshot call left, if any.
func (b *Backend) DropSnapshotHelper(ctx context.Context, pool, volume string) error {
	const op = "drop the snapshot helper of volume"
	object := pool + "/" + volume
	unlock, err := b.snapshotting.lock(ctx, op, object)
	if err != nil {
		return err
	}
	defer unlock()
	return b.do(ctx, op, object, func(c conn) error {
		d, err := c.l.DomainLookupByName(helperName(volume))
		if isCode(err, golibvirt.ErrNoDomain) {
			return nil
		}
		if err != nil {
			return wrap("look up domain", helperName(volume), err)
		}
		if err := c.dropLeftover(d, pool, volume); err != nil {
			// Not this volume's helper, or one that runs: not ours to touch; the volume's
			// deletion goes on.
			tflog.SubsystemWarn(ctx, Subsystem, "a domain of the snapshot helper's name is left as it is", map[string]any{"domain": d.Name, "volume": object, "why": err.Error()})
		}
		return nil
	})
}
