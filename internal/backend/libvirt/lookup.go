package libvirt

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// poolRunning is libvirt's VIR_STORAGE_POOL_RUNNING.
const poolRunning = 2

// volumeKinds are libvirt's virStorageVolType values by number.
var volumeKinds = []string{backend.VolumeFile, backend.VolumeBlock, backend.VolumeDir, "network", "netdir", "ploop"}

func (c conn) poolInfo(p golibvirt.StoragePool) (backend.Pool, error) {
	out := backend.Pool{Name: p.Name}
	state, _, _, _, err := c.l.StoragePoolGetInfo(p)
	if err != nil {
		return out, wrap("read storage pool", p.Name, err)
	}
	out.Active = state == poolRunning
	doc, err := c.l.StoragePoolGetXMLDesc(p, 0)
	if err != nil {
		return out, wrap("read storage pool", p.Name, err)
	}
	var x libvirtxml.StoragePool
	if err := x.Unmarshal(doc); err != nil {
		return out, fmt.Errorf("read storage pool %s: %w", p.Name, err)
	}
	if x.Type == "dir" && x.Target != nil {
		out.Path = x.Target.Path
	}
	return out, nil
}

func (b *Backend) LookupPool(ctx context.Context, name string) (backend.Pool, error) {
	var out backend.Pool
	err := b.do(ctx, "look up storage pool", name, func(c conn) error {
		p, err := c.pool(name)
		if err != nil {
			return err
		}
		out, err = c.poolInfo(p)
		return err
	})
	return out, err
}

func (b *Backend) LookupNetwork(ctx context.Context, name string) (bool, error) {
	var active bool
	err := b.do(ctx, "look up network", name, func(c conn) error {
		n, err := c.l.NetworkLookupByName(name)
		if err != nil {
			if isCode(err, golibvirt.ErrNoNetwork) {
				return fmt.Errorf("look up network %s on %s: %w", name, c.uri, backend.ErrNotFound)
			}
			return wrap("look up network", name, err)
		}
		a, err := c.l.NetworkIsActive(n)
		active = a == 1
		return wrap("read network", name, err)
	})
	return active, err
}

// LookupVolume finds a volume by name in pool, or by absolute path in whichever pool holds it.
// A volume libvirt does not list may be a file copied into the pool's directory since its last
// refresh, so the pool is refreshed and asked again before the answer is "not found". libvirt
// refuses a refresh while a volume job (an upload, a copy) runs in the pool; a lookup that then
// said "not found" would be false (a deletion would skip a file that is there, a check would
// refuse a source that exists), so the lookup is tried again while the refusal lasts, and when
// ctx (or the backend's default bound) ends first the refusal is the error.
func (b *Backend) LookupVolume(ctx context.Context, pool, nameOrPath string) (backend.VolumeInfo, error) {
	ctx, cancel := bounded(ctx)
	defer cancel()
	var out backend.VolumeInfo
	err := whileRefreshRefused(ctx, func() error {
		return b.do(ctx, "look up volume", nameOrPath, func(c conn) error {
			var v golibvirt.StorageVol
			var err error
			if strings.HasPrefix(nameOrPath, "/") {
				v, err = c.volumeByPath(nameOrPath)
			} else {
				var p golibvirt.StoragePool
				if p, err = c.pool(pool); err != nil {
					return err
				}
				v, err = volumeInPool(c.l, p, nameOrPath)
			}
			if err != nil {
				if errors.Is(err, errRefreshRefused) {
					return fmt.Errorf("look up volume %s on %s: %w", nameOrPath, c.uri, err)
				}
				if isNotFoundLibvirt(err) {
					return fmt.Errorf("look up volume %s on %s: %w", nameOrPath, c.uri, backend.ErrNotFound)
				}
				return wrap("look up volume", nameOrPath, err)
			}
			kind, capacity, _, err := c.l.StorageVolGetInfo(v)
			if err != nil {
				return wrap("read volume", nameOrPath, err)
			}
			out = backend.VolumeInfo{Pool: v.Pool, Name: v.Name, Path: v.Key, Kind: fmt.Sprint(kind), CapacityBytes: capacity}
			if int(kind) >= 0 && int(kind) < len(volumeKinds) {
				out.Kind = volumeKinds[kind]
			}
			if path, err := c.l.StorageVolGetPath(v); err == nil {
				out.Path = path
			}
			return nil
		})
	})
	return out, err
}

// errRefreshRefused marks a lookup that could not tell whether a volume is there: libvirt
// refused the refresh of its pool while a volume job ran in it.
var errRefreshRefused = errors.New("libvirt refused to refresh the storage pool while a volume job runs in it, so whether the volume is there is not known")

// refreshRefused reports whether err is libvirt's refusal to refresh a pool while a volume of it
// is being built, uploaded or copied ("has asynchronous jobs running"): a refusal that ends
// when the job does.
func refreshRefused(err error) bool {
	return err != nil && strings.Contains(err.Error(), "asynchronous jobs running")
}

// poolVolumes are the go-libvirt calls a lookup by name in a pool makes.
type poolVolumes interface {
	StorageVolLookupByName(p golibvirt.StoragePool, name string) (golibvirt.StorageVol, error)
	StoragePoolRefresh(p golibvirt.StoragePool, flags uint32) error
}

// volumeInPool looks name up in pool p, refreshing the pool first when libvirt does not list it
// (a file copied into the pool's directory since its last refresh). A refused refresh is
// errRefreshRefused, with libvirt's message, never "not found"; another failed refresh is its
// error.
func volumeInPool(l poolVolumes, p golibvirt.StoragePool, name string) (golibvirt.StorageVol, error) {
	v, err := l.StorageVolLookupByName(p, name)
	if err == nil || !isNotFoundLibvirt(err) {
		return v, err
	}
	if rerr := l.StoragePoolRefresh(p, 0); rerr != nil {
		return v, refreshFailed(p.Name, rerr)
	}
	return l.StorageVolLookupByName(p, name)
}

// refreshFailed is the error of a refresh of pool that libvirt refused or failed.
func refreshFailed(pool string, err error) error {
	if refreshRefused(err) {
		return fmt.Errorf("%w (refresh storage pool %s: %v)", errRefreshRefused, pool, err)
	}
	return wrap("refresh storage pool", pool, err)
}

// whileRefreshRefused runs try, and again with a growing wait while it fails with
// errRefreshRefused, until it does not or ctx ends; then the refusal is the error, with why ctx
// ended.
func whileRefreshRefused(ctx context.Context, try func() error) error {
	wait := 20 * time.Millisecond
	for {
		err := try()
		if !errors.Is(err, errRefreshRefused) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w; gave up: %v", err, context.Cause(ctx))
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w; gave up: %v", err, context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// volumeByPath looks a volume up by path, refreshing first the pool whose directory holds the
// path when libvirt does not know it yet. A refused refresh is errRefreshRefused, as in
// volumeInPool.
func (c conn) volumeByPath(path string) (golibvirt.StorageVol, error) {
	v, err := c.l.StorageVolLookupByPath(path)
	if err == nil || !isNotFoundLibvirt(err) {
		return v, err
	}
	pools, _, lerr := c.l.ConnectListAllStoragePools(1, golibvirt.ConnectListStoragePoolsActive)
	if lerr != nil {
		return v, err
	}
	for _, p := range pools {
		info, ierr := c.poolInfo(p)
		if ierr == nil && info.Path != "" && filepath.Dir(path) == filepath.Clean(info.Path) {
			if rerr := c.l.StoragePoolRefresh(p, 0); rerr != nil {
				return v, refreshFailed(p.Name, rerr)
			}
			return c.l.StorageVolLookupByPath(path)
		}
	}
	return v, err
}

func (b *Backend) Limits(ctx context.Context, domainType string) (backend.Limits, error) {
	var out backend.Limits
	err := b.do(ctx, "read host limits", domainType, func(c conn) error {
		_, memKiB, cpus, _, _, _, _, _, err := c.l.NodeGetInfo()
		if err != nil {
			return wrap("read node info", c.uri, err)
		}
		out.MemoryMiB = int64(memKiB / 1024)
		out.MaxVCPU = int64(cpus)
		return nil
	})
	if err != nil {
		return out, err
	}
	caps, err := b.DomainCaps(ctx, domainType, "")
	if err != nil {
		return out, err
	}
	if caps.MaxVCPU > 0 {
		out.MaxVCPU = caps.MaxVCPU
	}
	return out, nil
}

// RefreshPool makes libvirt read a pool's directory again. libvirt refuses while a volume of the
// pool is being built ("has asynchronous jobs running"), which another apply or test creating
// members can be doing at any moment: the refresh is asked again until the builds are done or ctx
// ends.
func (b *Backend) RefreshPool(ctx context.Context, name string) error {
	wait := 20 * time.Millisecond
	for {
		err := b.do(ctx, "refresh storage pool", name, func(c conn) error {
			p, err := c.pool(name)
			if err != nil {
				return err
			}
			return wrap("refresh storage pool", name, c.l.StoragePoolRefresh(p, 0))
		})
		if err == nil || !refreshRefused(err) {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}
