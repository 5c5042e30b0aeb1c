// This file holds the fake's backend.Snapshots: a volume's snapshots are copies of its Data,
// by tag.

package fake

import (
	"context"
	"fmt"
	"sort"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// SetPoolAvailable sets what VolumeSpace reports the pool has free, by pool name; a pool not in it
// has 1 TiB.
func (b *Backend) SetPoolAvailable(pool string, bytes uint64) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.poolAvailable == nil {
		b.poolAvailable = map[string]uint64{}
	}
	b.poolAvailable[pool] = bytes
}

// snapshotVolume finds the qcow2 volume a snapshot call is about; the error says what libvirt's
// would.
func (b *Backend) snapshotVolume(op, pool, volume string) (*Volume, error) {
	v, ok := b.Volumes[pool+"/"+volume]
	if !ok {
		return nil, fmt.Errorf("%s %s/%s: %w", op, pool, volume, backend.ErrNotFound)
	}
	if f := v.format(); f != engine.VolumeFormat {
		return nil, fmt.Errorf("%s %s/%s: the volume is %s: only qcow2 volumes hold snapshots", op, pool, volume, f)
	}
	return v, nil
}

// runningUser is the running domain that has the volume as a disk, "" when none: QEMU holds its
// file then, which qemu-img cannot open.
func (b *Backend) runningUser(pool, volume string) string {
	for name, d := range b.Domains {
		if d.ID <= 0 {
			continue
		}
		for _, disk := range d.Spec.Disks {
			if disk.Pool == pool && disk.Volume == volume {
				return name
			}
		}
	}
	return ""
}

func (b *Backend) SnapshotVolume(_ context.Context, pool, volume, tag string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("snapshot-volume", pool+"/"+volume+"@"+tag); err != nil {
		return err
	}
	v, err := b.snapshotVolume("snapshot volume", pool, volume)
	if err != nil {
		return err
	}
	if d := b.runningUser(pool, volume); d != "" {
		return fmt.Errorf("snapshot volume %s/%s: running domain %s uses it", pool, volume, d)
	}
	key := pool + "/" + volume
	if b.snapshots == nil {
		b.snapshots = map[string]map[string]string{}
	}
	if b.snapshots[key] == nil {
		b.snapshots[key] = map[string]string{}
	}
	b.snapshots[key][tag] = v.Data
	return nil
}

func (b *Backend) RevertVolume(_ context.Context, pool, volume, tag string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("revert-volume", pool+"/"+volume+"@"+tag); err != nil {
		return err
	}
	v, err := b.snapshotVolume("revert volume", pool, volume)
	if err != nil {
		return err
	}
	if d := b.runningUser(pool, volume); d != "" {
		return fmt.Errorf("revert volume %s/%s: running domain %s uses it", pool, volume, d)
	}
	data, ok := b.snapshots[pool+"/"+volume][tag]
	if !ok {
		return fmt.Errorf("revert volume %s/%s to snapshot %s: %w", pool, volume, tag, backend.ErrNotFound)
	}
	v.Data = data
	return nil
}

func (b *Backend) DeleteVolumeSnapshot(_ context.Context, pool, volume, tag, runningDomain string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("delete-volume-snapshot", pool+"/"+volume+"@"+tag); err != nil {
		return err
	}
	if _, ok := b.Volumes[pool+"/"+volume]; !ok {
		return nil
	}
	if d := b.runningUser(pool, volume); d != "" && d != runningDomain {
		return fmt.Errorf("delete snapshot %s of volume %s/%s: running domain %s uses it, not %q", tag, pool, volume, d, runningDomain)
	}
	delete(b.snapshots[pool+"/"+volume], tag)
	return nil
}

func (b *Backend) VolumeSpace(_ context.Context, pool, volume string) (backend.VolumeSpace, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("volume-space", pool+"/"+volume); err != nil {
		return backend.VolumeSpace{}, err
	}
	if b.MissingPools[pool] {
		return backend.VolumeSpace{}, fmt.Errorf("look up storage pool %s: %w", pool, backend.ErrNotFound)
	}
	v, ok := b.Volumes[pool+"/"+volume]
	if !ok {
		return backend.VolumeSpace{}, fmt.Errorf("read volume %s/%s: %w", pool, volume, backend.ErrNotFound)
	}
	avail, ok := b.poolAvailable[pool]
	if !ok {
		avail = 1 << 40
	}
	// The fake's allocation is its Data and that of its snapshots, which share nothing here.
	alloc := uint64(len(v.Data))
	for _, s := range b.snapshots[pool+"/"+volume] {
		alloc += uint64(len(s))
	}
	return backend.VolumeSpace{PoolAvailableBytes: avail, AllocationBytes: alloc, CapacityBytes: v.capacity()}, nil
}

// VolumeSnapshots is backend.Snapshots's: the volume's snapshot tags.
func (b *Backend) VolumeSnapshots(_ context.Context, pool, volume string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("volume-snapshots", pool+"/"+volume); err != nil {
		return nil, err
	}
	if _, err := b.snapshotVolume("read the snapshots of", pool, volume); err != nil {
		return nil, err
	}
	var out []string
	for t := range b.snapshots[pool+"/"+volume] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out, nil
}

// SnapshotTags returns the tags of the volume's snapshots, for tests.
func (b *Backend) SnapshotTags(pool, volume string) []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []string
	for t := range b.snapshots[pool+"/"+volume] {
		out = append(out, t)
	}
	sort.Strings(out)
	return out
}

// SnapshotData returns the bytes the volume's snapshot tag holds, for tests.
func (b *Backend) SnapshotData(pool, volume, tag string) (string, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	d, ok := b.snapshots[pool+"/"+volume][tag]
	return d, ok
}

// GuestWrites sets the volume's Data as the member's guest writing to its disk would, for tests
// whose probes stand for a guest: under the fake's lock, so that it races with no call.
func (b *Backend) GuestWrites(pool, volume, data string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if v, ok := b.Volumes[pool+"/"+volume]; ok {
		v.Data = data
	}
}

// DropSnapshotHelper: the fake's snapshot calls leave no helper.
func (b *Backend) DropSnapshotHelper(_ context.Context, pool, volume string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.call("drop-snapshot-helper", pool+"/"+volume)
}
