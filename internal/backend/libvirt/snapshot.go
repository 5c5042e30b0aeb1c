package libvirt

import (
	"context"
	"errors"
	"fmt"
	"strings"
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
		if err := b.deleteThroughHelper(ctx, op, pool, volume, tag, n-1); err != nil {
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
			if err := b.deleteThroughHelper(ctx, op, pool, volume, tag, n); err != nil {
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

// deleteThroughHelper deletes n snapshots of tag from the volume, which no running domain uses,
// through its helper domain.
func (b *Backend) deleteThroughHelper(ctx context.Context, op, pool, volume, tag string, n int) error {
	return b.do(ctx, op, pool+"/"+volume, func(c conn) error {
		return c.withHelper(pool, volume, func(h helper) error {
			for range n {
				if err := c.deleteHelperSnapshot(h, tag); err != nil {
					return err
				}
			}
			return nil
		})
	})
}
