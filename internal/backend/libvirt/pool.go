package libvirt

import (
	"context"
	"encoding/hex"
	"fmt"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// Storage pools of the virt_pool resource. The provider only ever defines directory pools, and
// takes a pool away by stopping and undefining it: pool-delete would remove the directory, and
// with it any volume a group preserved there.

// poolDetail is poolInfo with what a pool resource needs besides: UUID, target of any type and
// autostart.
func (c conn) poolDetail(p golibvirt.StoragePool) (backend.Pool, error) {
	out, err := c.poolInfo(p)
	if err != nil {
		return out, err
	}
	out.UUID = formatUUID(p.UUID)
	doc, err := c.l.StoragePoolGetXMLDesc(p, 0)
	if err != nil {
		return out, wrap("read storage pool", p.Name, err)
	}
	var x libvirtxml.StoragePool
	if err := x.Unmarshal(doc); err != nil {
		return out, fmt.Errorf("read storage pool %s: %w", p.Name, err)
	}
	if x.Target != nil {
		out.Target = x.Target.Path
	}
	auto, err := c.l.StoragePoolGetAutostart(p)
	if err != nil {
		return out, wrap("read autostart of storage pool", p.Name, err)
	}
	out.Autostart = auto != 0
	return out, nil
}

func (b *Backend) ListPools(ctx context.Context) ([]backend.Pool, error) {
	var out []backend.Pool
	err := b.do(ctx, "list storage pools", b.uri, func(c conn) error {
		out = nil
		pools, _, err := c.l.ConnectListAllStoragePools(1, 0)
		if err != nil {
			return wrap("list storage pools", c.uri, err)
		}
		for _, p := range pools {
			info, err := c.poolDetail(p)
			if isNotFound(err) {
				continue // undefined since the listing
			}
			if err != nil {
				return err
			}
			out = append(out, info)
		}
		return nil
	})
	return out, err
}

func (b *Backend) CreatePool(ctx context.Context, name, path string) (backend.Pool, error) {
	var out backend.Pool
	x := libvirtxml.StoragePool{Type: "dir", Name: name, Target: &libvirtxml.StoragePoolTarget{Path: path}}
	doc, err := x.Marshal()
	if err != nil {
		return out, fmt.Errorf("define storage pool %s: %w", name, err)
	}
	err = b.do(ctx, "define storage pool", name, func(c conn) error {
		p, err := c.l.StoragePoolDefineXML(doc, 0)
		if err != nil {
			return wrap("define storage pool", name, err)
		}
		// A directory pool's build makes the directory (and its parents); one that is there is
		// kept with its files.
		step, err := "build", c.l.StoragePoolBuild(p, golibvirt.StoragePoolBuildNew)
		if err == nil {
			step, err = "start", c.l.StoragePoolCreate(p, golibvirt.StoragePoolCreateNormal)
		}
		if err == nil {
			step, err = "set autostart of", c.l.StoragePoolSetAutostart(p, 1)
		}
		if err != nil {
			// Nothing of the pool may stay behind a failed create: the next apply would find
			// the name taken by a pool it did not make. Only the definition goes; a directory
			// the build made stays, as a pool's directory always does.
			if state, _, _, _, ierr := c.l.StoragePoolGetInfo(p); ierr == nil && state == poolRunning {
				_ = c.l.StoragePoolDestroy(p)
			}
			_ = c.l.StoragePoolUndefine(p)
			return wrap(step+" storage pool", name, err)
		}
		out, err = c.poolDetail(p)
		return err
	})
	return out, err
}

// parseUUID reads a UUID as formatUUID writes it.
func parseUUID(s string) (golibvirt.UUID, error) {
	var u golibvirt.UUID
	raw, err := hex.DecodeString(strings.ReplaceAll(s, "-", ""))
	if err != nil || len(raw) != len(u) {
		return u, fmt.Errorf("%q is not a UUID", s)
	}
	copy(u[:], raw)
	return u, nil
}

func (b *Backend) PoolByUUID(ctx context.Context, uuid string) (backend.Pool, error) {
	var out backend.Pool
	u, err := parseUUID(uuid)
	if err != nil {
		return out, err
	}
	err = b.do(ctx, "look up storage pool", uuid, func(c conn) error {
		p, err := c.l.StoragePoolLookupByUUID(u)
		if err != nil {
			return wrap("look up storage pool", uuid, err)
		}
		out, err = c.poolDetail(p)
		return err
	})
	return out, err
}

func (b *Backend) DeletePool(ctx context.Context, uuid string) error {
	u, err := parseUUID(uuid)
	if err != nil {
		return err
	}
	return b.do(ctx, "delete storage pool", uuid, func(c conn) error {
		p, err := c.l.StoragePoolLookupByUUID(u)
		if isNotFoundLibvirt(err) {
			return nil
		}
		if err != nil {
			return wrap("look up storage pool", uuid, err)
		}
		state, _, _, _, err := c.l.StoragePoolGetInfo(p)
		if err != nil && !isNotFoundLibvirt(err) {
			return wrap("read storage pool", p.Name, err)
		}
		if err == nil && state == poolRunning {
			if err := c.l.StoragePoolDestroy(p); err != nil && !isNotFoundLibvirt(err) {
				return wrap("stop storage pool", p.Name, err)
			}
		}
		if err := c.l.StoragePoolUndefine(p); err != nil && !isNotFoundLibvirt(err) {
			return wrap("undefine storage pool", p.Name, err)
		}
		return nil
	})
}
