// This file holds the fake's backend.Seeds: seed volumes written, read and put in a domain's seed
// drive.

package fake

import (
	"context"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

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
