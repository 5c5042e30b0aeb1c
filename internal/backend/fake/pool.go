package fake

import (
	"context"
	"fmt"
	"sort"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// Pools defined on the fake host, as CreatePool and AddPool make them. LookupPool finds these as
// they are; a name no pool here has is still found, as LookupPool always did (every pool
// exists unless MissingPools names it), but ListPools and PoolByUUID know only these.

// Pool is a storage pool defined on the fake host.
type Pool struct {
	UUID      string
	Path      string
	Active    bool
	Autostart bool
}

func (p *Pool) info(name string) backend.Pool {
	return backend.Pool{Name: name, Path: p.Path, Target: p.Path, Active: p.Active, UUID: p.UUID, Autostart: p.Autostart}
}

// AddPool defines a running directory pool, as if someone had made it by hand.
func (b *Backend) AddPool(name, path string) *Pool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.addPool(name, path)
}

func (b *Backend) addPool(name, path string) *Pool {
	if b.pools == nil {
		b.pools = map[string]*Pool{}
	}
	b.nextUID++
	p := &Pool{UUID: fmt.Sprintf("pool-uuid-%d", b.nextUID), Path: path, Active: true, Autostart: true}
	b.pools[name] = p
	return p
}

// DefinedPool is the pool defined under that name, or nil.
func (b *Backend) DefinedPool(name string) *Pool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.pools[name]
}

func (b *Backend) ListPools(context.Context) ([]backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("list-pools", ""); err != nil {
		return nil, err
	}
	out := make([]backend.Pool, 0, len(b.pools))
	for name, p := range b.pools {
		out = append(out, p.info(name))
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}

func (b *Backend) CreatePool(_ context.Context, name, path string) (backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("create-pool", name); err != nil {
		return backend.Pool{}, err
	}
	if _, ok := b.pools[name]; ok {
		return backend.Pool{}, fmt.Errorf("define storage pool %s: pool already exists", name)
	}
	return b.addPool(name, path).info(name), nil
}

func (b *Backend) PoolByUUID(_ context.Context, uuid string) (backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-pool-uuid", uuid); err != nil {
		return backend.Pool{}, err
	}
	for name, p := range b.pools {
		if p.UUID == uuid {
			return p.info(name), nil
		}
	}
	return backend.Pool{}, fmt.Errorf("look up storage pool %s: %w", uuid, backend.ErrNotFound)
}

// DeletePool undefines the pool; its volumes stay in Volumes, as a directory pool's files stay
// in its directory.
func (b *Backend) DeletePool(_ context.Context, uuid string) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("delete-pool", uuid); err != nil {
		return err
	}
	for name, p := range b.pools {
		if p.UUID == uuid {
			delete(b.pools, name)
		}
	}
	return nil
}

// LookupPool finds a pool AddPool or CreatePool defined as it is, and every other pool active,
// with its directory at /fake/<pool>, unless MissingPools names it.
func (b *Backend) LookupPool(_ context.Context, name string) (backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-pool", name); err != nil {
		return backend.Pool{}, err
	}
	if p, ok := b.pools[name]; ok {
		return p.info(name), nil
	}
	if b.MissingPools[name] {
		return backend.Pool{}, fmt.Errorf("look up storage pool %s: %w", name, backend.ErrNotFound)
	}
	return backend.Pool{Name: name, Path: "/fake/" + name, Active: true}, nil
}
