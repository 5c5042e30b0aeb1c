// This file holds the fake's volume calls: disks attached, grown and detached, volumes and seeds made, listed and deleted.

package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

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
	b.Volumes[key] = &Volume{SizeMiB: spec.SizeMiB, Backing: spec.BackingPath, BackingVolume: spec.BackingVolume}
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

// ReadSeed returns the volume's Data.
func (b *Backend) ReadSeed(_ context.Context, pool, name string) ([]byte, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("read-seed", name); err != nil {
		return nil, err
	}
	v, ok := b.Volumes[pool+"/"+name]
	if !ok {
		return nil, fmt.Errorf("volume %s/%s: %w", pool, name, backend.ErrNotFound)
	}
	return []byte(v.Data), nil
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

// RefreshPool is a no-op: the fake's lists show every volume at once.
func (b *Backend) RefreshPool(context.Context, string) error { return nil }

func (b *Backend) ListVolumeNames(ctx context.Context, pool, prefix string) ([]string, error) {
	vols, err := b.ListVolumes(ctx, pool, prefix)
	// An empty pool lists as nil, as go-libvirt gives it: a caller must not read nil as a pool
	// it could not list.
	var names []string
	for _, v := range vols {
		names = append(names, v.Name)
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
