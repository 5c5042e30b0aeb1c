// This file holds the fake's backend.Volumes: volumes made, listed, looked up and deleted (their
// streams are in move.go).

package fake

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

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

func (b *Backend) DeleteVolume(_ context.Context, pool, name string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("delete-volume", name); err != nil {
		return err
	}
	delete(b.Volumes, pool+"/"+name)
	delete(b.snapshots, pool+"/"+name) // they were in its file
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
