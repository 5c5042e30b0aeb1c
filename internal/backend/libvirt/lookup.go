package libvirt

import (
	"context"
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

func (b *Backend) LookupVolume(ctx context.Context, pool, nameOrPath string) (backend.VolumeInfo, error) {
	var out backend.VolumeInfo
	err := b.do(ctx, "look up volume", nameOrPath, func(c conn) error {
		var v golibvirt.StorageVol
		var err error
		if strings.HasPrefix(nameOrPath, "/") {
			v, err = c.volumeByPath(nameOrPath)
		} else {
			var p golibvirt.StoragePool
			if p, err = c.pool(pool); err != nil {
				return err
			}
			if v, err = c.l.StorageVolLookupByName(p, nameOrPath); err != nil && isNotFoundLibvirt(err) {
				// A file copied into the pool's directory since its last refresh.
				if rerr := c.l.StoragePoolRefresh(p, 0); rerr == nil {
					v, err = c.l.StorageVolLookupByName(p, nameOrPath)
				}
			}
		}
		if err != nil {
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
	return out, err
}

// volumeByPath looks a volume up by path, refreshing first the pool whose directory holds the
// path when libvirt does not know it yet.
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
			if c.l.StoragePoolRefresh(p, 0) == nil {
				return c.l.StorageVolLookupByPath(path)
			}
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
		if err == nil || !strings.Contains(err.Error(), "asynchronous jobs running") {
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
