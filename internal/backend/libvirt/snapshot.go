package libvirt

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/xml"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// A volume's snapshots are qcow2 internal snapshots, in the volume's own file: taking one copies
// the image's cluster table, not its data, so it takes the same time whatever the volume's size.
//
// libvirt's storage API has no volume snapshot, and libvirt 9.0 refuses an internal snapshot of
// an inactive domain that leaves out any of its qcow2 disks ("disk 'sda' must use snapshot mode
// 'internal'"), so a member's own definition cannot be used for a snapshot of one of its disks.
// Each call therefore defines a helper domain whose only disk is the volume, never starts it,
// and undefines it at the end. For an inactive domain libvirt's snapshot calls run qemu-img on
// the disk's file: a snapshot is `qemu-img snapshot -c`, a revert `-a`, a deletion `-d`. The
// snapshot's metadata (libvirt's record of it) is removed at once, so that only the qcow2
// snapshot stays: a revert or a deletion redefines the metadata first (REDEFINE, with the
// helper's own definition, whose UUID libvirt requires to be the helper's).
//
// libvirt ignores qemu-img's failure to delete a snapshot (it deletes with "try all disks" and
// only logs a failure), and qemu-img allows two snapshots of one tag, so what a call did is read
// back from the qcow2 file's snapshot table (volumeTags), through a download of its header and
// table: the file is on the host, and only libvirt reaches it.
//
// A running domain's QEMU holds a write lock on its disks' files, so qemu-img cannot touch them
// ("Failed to get \"write\" lock"): a snapshot or a revert needs the domain stopped. A deletion
// does not: the snapshot's metadata is redefined on the running domain itself, and libvirt
// deletes a running domain's internal snapshot through QEMU's monitor (delvm), the domain
// running on. delvm deletes the tag from every disk of the domain that holds it.

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

// qcow2Volume checks that pool/volume is a qcow2 volume: only qcow2 holds internal snapshots.
func (b *Backend) qcow2Volume(ctx context.Context, op, pool, volume string) error {
	st, err := b.StatVolume(ctx, pool, volume)
	if err != nil {
		return err
	}
	if st.Format != engine.VolumeFormat {
		return fmt.Errorf("%s %s/%s: the volume's format is %s: only qcow2 volumes hold snapshots", op, pool, volume, st.Format)
	}
	return nil
}

// countTag is how many snapshots of tag the volume holds.
func (b *Backend) countTag(ctx context.Context, pool, volume, tag string) (int, error) {
	tags, err := b.volumeTags(ctx, pool, volume)
	n := 0
	for _, t := range tags {
		if t == tag {
			n++
		}
	}
	return n, err
}

// SnapshotVolume deletes the snapshots of tag the volume holds (as many as its table lists),
// takes the snapshot, and reads the table again: a rerun of the helper's calls after a lost
// connection may have taken two, and the older ones are then deleted.
func (b *Backend) SnapshotVolume(ctx context.Context, pool, volume, tag string) error {
	const op = "snapshot volume"
	object := pool + "/" + volume
	unlock, err := b.snapshotting.lock(ctx, op, object)
	if err != nil {
		return err
	}
	defer unlock()
	if tag == "" {
		return fmt.Errorf("%s %s: the snapshot's tag is empty", op, object)
	}
	if err := b.qcow2Volume(ctx, op, pool, volume); err != nil {
		return err
	}
	start := time.Now()
	before, err := b.countTag(ctx, pool, volume, tag)
	if err != nil {
		return err
	}
	err = b.do(ctx, op, object, func(c conn) error {
		return c.withHelper(pool, volume, func(h helper) error {
			for range before {
				if err := c.deleteHelperSnapshot(h, tag); err != nil {
					return err
				}
			}
			sx, err := snapshotXML(tag, helperDisk, 0, "")
			if err != nil {
				return fmt.Errorf("build the snapshot %s of volume %s: %w", tag, object, err)
			}
			s, err := c.l.DomainSnapshotCreateXML(h.d, sx, 0)
			if err != nil {
				return wrap("take snapshot "+tag+" of volume", object, err)
			}
			return c.dropMetadata(s)
		})
	})
	if err != nil {
		return err
	}
	n, err := b.countTag(ctx, pool, volume, tag)
	if err != nil {
		return err
	}
	if n > 1 {
		err = b.do(ctx, op, object, func(c conn) error {
			return c.withHelper(pool, volume, func(h helper) error {
				for range n - 1 {
					if err := c.deleteHelperSnapshot(h, tag); err != nil {
						return err
					}
				}
				return nil
			})
		})
		if err != nil {
			return err
		}
		if n, err = b.countTag(ctx, pool, volume, tag); err != nil {
			return err
		}
	}
	if n != 1 {
		return fmt.Errorf("%s %s: after taking snapshot %s the volume holds %d snapshots of that tag, not 1 (libvirt does not report qemu-img's failures to delete one)", op, object, tag, n)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "took volume snapshot", map[string]any{"pool": pool, "volume": volume, "tag": tag, "replaced": before, "seconds": time.Since(start).Seconds()})
	return nil
}

// missingSnapshot reports whether err is qemu-img's answer to a revert to a snapshot the file
// does not hold: libvirt 9.0 says "internal error: Child process (/usr/bin/qemu-img snapshot -a
// TAG FILE) unexpected exit status 1: qemu-img: Could not apply snapshot 'TAG': Failed to load
// snapshot: No such file or directory".
func missingSnapshot(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Could not apply snapshot") && strings.Contains(err.Error(), "No such file or directory")
}

// RevertVolume checks the table for the tag first, so that a missing snapshot is ErrNotFound
// without a helper; qemu-img's own answer for one is mapped too.
func (b *Backend) RevertVolume(ctx context.Context, pool, volume, tag string) error {
	const op = "revert volume"
	object := pool + "/" + volume
	unlock, err := b.snapshotting.lock(ctx, op, object)
	if err != nil {
		return err
	}
	defer unlock()
	if err := b.qcow2Volume(ctx, op, pool, volume); err != nil {
		return err
	}
	n, err := b.countTag(ctx, pool, volume, tag)
	if err != nil {
		return err
	}
	if n == 0 {
		return fmt.Errorf("%s %s to snapshot %s: the volume holds no snapshot of that tag: %w", op, object, tag, backend.ErrNotFound)
	}
	err = b.do(ctx, op, object, func(c conn) error {
		return c.withHelper(pool, volume, func(h helper) error {
			s, err := c.redefine(h.d, h.doc, tag, helperDisk)
			if err != nil {
				return err
			}
			rerr := c.l.DomainRevertToSnapshot(s, 0)
			if missingSnapshot(rerr) {
				rerr = fmt.Errorf("%w: %w", wrap("revert volume", object+" to snapshot "+tag, rerr), backend.ErrNotFound)
			} else {
				rerr = wrap("revert volume", object+" to snapshot "+tag, rerr)
			}
			return errors.Join(rerr, c.dropMetadata(s))
		})
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "reverted volume to snapshot", map[string]any{"pool": pool, "volume": volume, "tag": tag})
	return nil
}

// DeleteVolumeSnapshot deletes every snapshot of tag the table lists and reads the table again:
// libvirt does not report a deletion qemu-img failed. A running domain's snapshot is deleted by
// its QEMU (libvirt's deletion of a running domain's internal snapshot is the monitor's delvm):
// the snapshot's metadata is redefined on that domain, with its own definition and the volume's
// disk internal. The domain's other disks are not named: libvirt 9.0 refuses the redefinition of
// an internal snapshot that names any other disk with snapshot "no" ("disk 'vda' must use
// snapshot mode 'internal'"), and aligns the disks left out itself (its read-only ones "no").
// delvm deletes the tag from each disk that holds it, and only this volume does: a tag names its
// device (engine's snapshotTag).
func (b *Backend) DeleteVolumeSnapshot(ctx context.Context, pool, volume, tag, runningDomain string) error {
	const op = "delete snapshot"
	object := pool + "/" + volume
	unlock, err := b.snapshotting.lock(ctx, op, object)
	if err != nil {
		return err
	}
	defer unlock()
	n, err := b.countTag(ctx, pool, volume, tag)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if n == 0 {
		return nil
	}
	for range 2 {
		if runningDomain != "" {
			err = b.do(ctx, op, object, func(c conn) error { return c.deleteLive(runningDomain, pool, volume, tag, n) })
			if errors.Is(err, errNotRunning) {
				// It stopped since the caller looked: its QEMU holds the file no more, and
				// qemu-img can delete the snapshot.
				tflog.SubsystemDebug(ctx, Subsystem, "the domain of a live snapshot deletion is not running; deleting through a helper", map[string]any{"domain": runningDomain, "pool": pool, "volume": volume, "tag": tag})
				runningDomain = ""
			} else if err != nil {
				return err
			}
		}
		if runningDomain == "" {
			err = b.do(ctx, op, object, func(c conn) error {
				return c.withHelper(pool, volume, func(h helper) error {
					for range n {
						if err := c.deleteHelperSnapshot(h, tag); err != nil {
							return err
						}
					}
					return nil
				})
			})
			if err != nil {
				return err
			}
		}
		if n, err = b.countTag(ctx, pool, volume, tag); err != nil {
			return err
		}
		if n == 0 {
			tflog.SubsystemDebug(ctx, Subsystem, "deleted volume snapshot", map[string]any{"pool": pool, "volume": volume, "tag": tag, "domain": runningDomain})
			return nil
		}
	}
	return fmt.Errorf("%s %s of volume %s: the volume still holds %d snapshots of that tag after their deletion (libvirt does not report qemu-img's or QEMU's failure to delete one; qemu-img cannot open the file of a running domain's disk, whose deletion must name the domain)", op, tag, object, n)
}

// errNotRunning is deleteLive's error for a domain that is shut off.
var errNotRunning = errors.New("the domain is shut off")

// deleteLive deletes n snapshots of tag through the running domain that has pool/volume as a
// disk.
func (c conn) deleteLive(name, pool, volume, tag string, n int) error {
	object := pool + "/" + volume
	d, err := c.l.DomainLookupByName(name)
	if err != nil {
		return wrap("look up domain", name, err)
	}
	state, _, err := c.l.DomainGetState(d, 0)
	if err != nil {
		return wrap("read state of domain", name, err)
	}
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainRunning:
	case golibvirt.DomainShutoff:
		return fmt.Errorf("delete snapshot %s of volume %s through domain %s: %w", tag, object, name, errNotRunning)
	default:
		// Paused or crashed: its QEMU may still hold the file, and may not answer.
		return fmt.Errorf("delete snapshot %s of volume %s through domain %s: the domain is neither running nor shut off (state %d)", tag, object, name, state)
	}
	live, err := c.l.DomainGetXMLDesc(d, 0)
	if err != nil {
		return wrap("read domain", name, err)
	}
	path := ""
	if v, err := c.volume(pool, volume); err == nil {
		path, _ = c.l.StorageVolGetPath(v)
	}
	disk, err := diskOfVolume(live, pool, volume, path)
	if err != nil {
		return fmt.Errorf("delete snapshot %s of volume %s through domain %s: %w", tag, object, name, err)
	}
	doc, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
	if err != nil {
		return wrap("read domain", name, err)
	}
	for range n {
		s, err := c.redefine(d, doc, tag, disk)
		if err != nil {
			return err
		}
		if err := c.l.DomainSnapshotDelete(s, 0); err != nil {
			return errors.Join(wrap("delete snapshot "+tag+" of volume "+object+" live, through domain", name, err), c.dropMetadata(s))
		}
	}
	return nil
}

// diskOfVolume finds, in a domain's definition, the target of the disk whose source is
// pool/volume (by pool and volume, or by its file path).
func diskOfVolume(doc, pool, volume, path string) (string, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		return "", err
	}
	if dom.Devices != nil {
		for _, d := range dom.Devices.Disks {
			src := d.Source
			if d.Target == nil || src == nil {
				continue
			}
			if (src.Volume != nil && src.Volume.Pool == pool && src.Volume.Volume == volume) ||
				(src.File != nil && path != "" && src.File.File == path) {
				return d.Target.Dev, nil
			}
		}
	}
	return "", fmt.Errorf("the domain has no disk of volume %s/%s", pool, volume)
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

// VolumeSpace refreshes the pool first, so that its free space is the file system's now (libvirt
// reads it at a refresh, and at its own volume calls); a pool refusing the refresh while a
// volume job runs in it answers with what it read last.
func (b *Backend) VolumeSpace(ctx context.Context, pool, volume string) (backend.VolumeSpace, error) {
	var out backend.VolumeSpace
	err := b.do(ctx, "read the space of volume", pool+"/"+volume, func(c conn) error {
		p, err := c.pool(pool)
		if err != nil {
			return err
		}
		if err := c.l.StoragePoolRefresh(p, 0); err != nil && !refreshRefused(err) {
			return wrap("refresh storage pool", pool, err)
		}
		_, _, _, available, err := c.l.StoragePoolGetInfo(p)
		if err != nil {
			return wrap("read storage pool", pool, err)
		}
		v, err := c.l.StorageVolLookupByName(p, volume)
		if err != nil {
			return wrap("look up volume", pool+"/"+volume, err)
		}
		_, capacity, allocation, err := c.l.StorageVolGetInfo(v)
		if err != nil {
			return wrap("read volume", pool+"/"+volume, err)
		}
		out = backend.VolumeSpace{PoolAvailableBytes: available, AllocationBytes: allocation, CapacityBytes: capacity}
		return nil
	})
	return out, err
}

// qcow2's header: its magic, and where it says how many snapshots the file holds and where
// their table starts (big-endian, as all of qcow2).
const (
	qcow2Magic           = "QFI\xfb"
	qcow2HeaderBytes     = 72
	qcow2NbSnapshots     = 60
	qcow2SnapshotsOffset = 64
	// qcow2MaxSnapshotTable is QEMU's bound on a snapshot table (QCOW_MAX_SNAPSHOTS_SIZE).
	qcow2MaxSnapshotTable = 64 << 20
)

// volumeTags reads the tags of the volume's qcow2 snapshots from its file's snapshot table, in
// table order (a tag twice when the file holds two snapshots of it). A file that is not qcow2 is
// an error; a missing volume wraps ErrNotFound.
//
// A download can end short of the bytes the file holds (go-libvirt ends a download at the first
// empty packet: make chaos's snapshot scenario saw a header of a member's qcow2 data volume read
// back short, and the deletion of a snapshot fail with "its file is not a qcow2 image"), so a
// header or a table read short is read again, up to readAttempts times, before it is taken for
// what the file holds.
func (b *Backend) volumeTags(ctx context.Context, pool, volume string) ([]string, error) {
	var tags []string
	var err error
	for attempt := 1; attempt <= readAttempts; attempt++ {
		var short bool
		tags, short, err = b.readTags(ctx, pool, volume)
		if !short {
			return tags, err
		}
		tflog.SubsystemWarn(ctx, Subsystem, "a volume's qcow2 header or snapshot table was read short; reading it again", map[string]any{"pool": pool, "volume": volume, "attempt": attempt, "error": err.Error()})
	}
	return nil, err
}

// readTags is one reading of volumeTags; short is set (with an error) when a download gave fewer
// bytes than the qcow2 header, or than the table its header announces.
func (b *Backend) readTags(ctx context.Context, pool, volume string) (tags []string, short bool, err error) {
	object := pool + "/" + volume
	head, err := b.readVolume(ctx, pool, volume, 0, qcow2HeaderBytes)
	if err != nil {
		return nil, false, err
	}
	if len(head) < qcow2HeaderBytes {
		return nil, true, fmt.Errorf("read the snapshots of volume %s: its header was read as %d bytes, not %d", object, len(head), qcow2HeaderBytes)
	}
	if string(head[:4]) != qcow2Magic {
		return nil, false, fmt.Errorf("read the snapshots of volume %s: its file is not a qcow2 image", object)
	}
	nb := binary.BigEndian.Uint32(head[qcow2NbSnapshots:])
	if nb == 0 {
		return nil, false, nil
	}
	offset := binary.BigEndian.Uint64(head[qcow2SnapshotsOffset:])
	for size := uint64(64 << 10); ; size *= 4 {
		size = min(size, qcow2MaxSnapshotTable)
		table, err := b.readVolume(ctx, pool, volume, offset, size)
		if err != nil {
			return nil, false, err
		}
		tags, complete, err := parseSnapshotTable(table, nb)
		if err != nil {
			return nil, false, fmt.Errorf("read the snapshots of volume %s: %w", object, err)
		}
		if complete {
			return tags, false, nil
		}
		if uint64(len(table)) < size {
			return nil, true, fmt.Errorf("read the snapshots of volume %s: its table of %d snapshots at offset %d is cut short at %d bytes", object, nb, offset, len(table))
		}
		if size == qcow2MaxSnapshotTable {
			return nil, false, fmt.Errorf("read the snapshots of volume %s: its table of %d snapshots at offset %d is longer than qcow2 allows", object, nb, offset)
		}
	}
}

// parseSnapshotTable reads the names of nb snapshots from a qcow2 snapshot table; complete is
// false when table ends before the nb-th entry does. An entry is a 40-byte header (its sizes of
// extra data, ID and name at 36, 12 and 14), its extra data, ID and name, padded to 8 bytes.
func parseSnapshotTable(table []byte, nb uint32) (tags []string, complete bool, err error) {
	pos := 0
	for i := range nb {
		if len(table)-pos < 40 {
			return nil, false, nil
		}
		e := table[pos:]
		idSize := int(binary.BigEndian.Uint16(e[12:]))
		nameSize := int(binary.BigEndian.Uint16(e[14:]))
		extra := int(binary.BigEndian.Uint32(e[36:]))
		if extra > 1<<20 {
			return nil, false, fmt.Errorf("snapshot %d of the table has %d bytes of extra data, which qcow2 does not allow", i, extra)
		}
		end := 40 + extra + idSize + nameSize
		if len(e) < end {
			return nil, false, nil
		}
		tags = append(tags, string(e[40+extra+idSize:end]))
		pos += (end + 7) &^ 7
	}
	return tags, true, nil
}

// readVolume reads length bytes of the volume's file from offset (fewer at its end), through a
// download: the file is on the libvirt host.
//
// go-libvirt can hang at the end of a download: its call returns at the stream's end while the
// connection's reader goroutine, holding the lock the call's deregistration needs, waits to hand
// the call one more packet (seen by make chaos's snapshot scenario: an apply waited in the
// download of a snapshot table, its stack in requestStream's deferred deregister and the reader's
// callback, until its 30-minute timeout). A download here reads a header or a snapshot table, at
// most 64 MiB and most often 64 KiB, so each gets a bound of its own (readBound) instead of the
// apply's, and one cut off at its bound is read again on a new connection (stream abandons the
// stuck one), up to readAttempts times.
func (b *Backend) readVolume(ctx context.Context, pool, volume string, offset, length uint64) ([]byte, error) {
	const op = "read volume"
	object := pool + "/" + volume
	var v golibvirt.StorageVol
	err := b.do(ctx, op, object, func(c conn) error {
		var err error
		v, err = c.volume(pool, volume)
		return err
	})
	if err != nil {
		return nil, err
	}
	var out []byte
	err = retryStuck(ctx, readAttempts, readBound(length), errReadBound, func(ctx context.Context) error {
		var buf bytes.Buffer
		err := b.stream(ctx, op, object, false, func(c conn, cut func()) error {
			buf.Reset()
			s := &sink{w: &buf, cut: cut, gate: c.gate}
			err := c.l.StorageVolDownload(v, s, offset, length, 0)
			if s.err != nil {
				return fmt.Errorf("%s %s: %w", op, object, s.err)
			}
			if err != nil {
				return failedStream(c, op, object, s.n.Load(), err)
			}
			return nil
		})
		if err != nil {
			tflog.SubsystemWarn(ctx, Subsystem, "download of a volume's header or snapshot table failed", map[string]any{"pool": pool, "volume": volume, "offset": offset, "length": length, "error": err.Error()})
			return err
		}
		out = buf.Bytes()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// readAttempts is how many times readVolume downloads before it gives up.
const readAttempts = 3

// readBound is how long one download of length bytes by readVolume may take: 30 s, and a second
// more per MiB (a snapshot table is read 64 KiB first, then larger when it is longer).
func readBound(length uint64) time.Duration {
	return 30*time.Second + time.Duration(length>>20)*time.Second
}

// errReadBound is the cause of a download cut off at its readBound.
var errReadBound = errors.New("the download outlived its own bound (go-libvirt can hang at the end of a download)")

// retryStuck runs fn up to attempts times, each within bound (cause: why the bound ended it): a
// run cut off by its own bound, the caller's context still live, is run again; success, any
// other error, or the caller's context ending, ends it.
func retryStuck(ctx context.Context, attempts int, bound time.Duration, cause error, fn func(context.Context) error) error {
	var err error
	for range attempts {
		actx, cancel := context.WithTimeoutCause(ctx, bound, cause)
		err = fn(actx)
		stuck := actx.Err() != nil && ctx.Err() == nil
		cancel()
		if err == nil || !stuck {
			return err
		}
	}
	return err
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
