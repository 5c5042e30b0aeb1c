package providerdata

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"sync"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// A group that names a virt_pool of the same configuration (pool = virt_pool.x.name) is planned
// while that pool does not exist yet: Terraform plans the pool first (the group depends on it),
// in the same provider process, and creates it first. The pool's plan notes here, per host, the
// pools it will create, and the group's plan-time pool check accepts them without reading the
// host (CheckPool). The note lives as long as the process: a plan and its apply each run in a
// process of their own, and each plans the pool again before the group.

// poolPlans are the storage pools virt_pool plans in this process create or replace.
type poolPlans struct {
	mu sync.Mutex
	// creating are the pools a plan creates, by host and name, with their directory.
	creating map[poolKey]string
	// replacing are the UUIDs of the pools a plan replaces, by host and name: the create half of
	// a replacement (planned with no prior state) must not be refused for the name or the
	// directory of the pool it replaces, which is gone by then.
	replacing map[poolKey]string
}

type poolKey struct{ host, name string }

// PlanPoolCreate notes that a plan in this process creates pool name on host, on directory dir.
func (d *ProviderData) PlanPoolCreate(host, name, dir string) {
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	if d.pools.creating == nil {
		d.pools.creating = map[poolKey]string{}
	}
	d.pools.creating[poolKey{host, name}] = dir
}

// PoolPlanned tells whether a plan in this process creates pool name on host.
func (d *ProviderData) PoolPlanned(host, name string) bool {
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	_, ok := d.pools.creating[poolKey{host, name}]
	return ok
}

// PlanPoolReplace notes that a plan in this process replaces the pool with that UUID, named
// name on host.
func (d *ProviderData) PlanPoolReplace(host, name, uuid string) {
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	if d.pools.replacing == nil {
		d.pools.replacing = map[poolKey]string{}
	}
	d.pools.replacing[poolKey{host, name}] = uuid
}

// ReplacedPools are the UUIDs of the pools on host that plans in this process replace.
func (d *ProviderData) ReplacedPools(host string) map[string]bool {
	d.pools.mu.Lock()
	defer d.pools.mu.Unlock()
	out := map[string]bool{}
	for k, uuid := range d.pools.replacing {
		if k.host == host {
			out[uuid] = true
		}
	}
	return out
}

// PoolConflict is what keeps a new pool name on directory dir from being created among the
// host's pools, those whose UUID is in replaced left out: the pool that has the name (taken),
// else a pool whose target is the same directory once resolve has followed links in both
// (shared). resolve is the host's view of a path (resolveLocalPath on this machine, the cleaned
// text elsewhere).
func PoolConflict(pools []backend.Pool, replaced map[string]bool, name, dir string, resolve func(string) string) (taken, shared *backend.Pool) {
	want := resolve(dir)
	for i, p := range pools {
		if replaced[p.UUID] {
			continue
		}
		if p.Name == name {
			return &pools[i], nil
		}
	}
	for i, p := range pools {
		if replaced[p.UUID] || p.Target == "" {
			continue
		}
		if resolve(p.Target) == want {
			return nil, &pools[i]
		}
	}
	return nil, nil
}

// ResolveLocalPath is p, cleaned, with the links of its longest existing ancestor followed: a
// pool's directory may not exist yet (the create makes it), and a link above it still decides
// where it will be.
func ResolveLocalPath(p string) string {
	p = filepath.Clean(p)
	rest := ""
	for dir := p; ; dir = filepath.Dir(dir) {
		resolved, err := filepath.EvalSymlinks(dir)
		if err == nil {
			return filepath.Join(resolved, rest)
		}
		if !errors.Is(err, fs.ErrNotExist) && !errors.Is(err, os.ErrPermission) {
			return p
		}
		if dir == filepath.Dir(dir) {
			return p
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// PathResolver is how the pool check sees paths on the host behind b: resolved on this machine,
// as text elsewhere.
func PathResolver(b any) func(string) string {
	if HostFactsOf(b).Local {
		return ResolveLocalPath
	}
	return filepath.Clean
}
