// This file holds the fake's group records: read, written, listed and deleted.

package fake

import (
	"context"
	"fmt"
	"sort"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

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
		if len(rec.generations) > 0 && !engine.IsKeptRecordName(g) {
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
