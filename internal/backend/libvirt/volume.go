package libvirt

import (
	"context"
	"errors"
	"fmt"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func isNotFound(err error) bool { return errors.Is(err, backend.ErrNotFound) }

func isNotFoundLibvirt(err error) bool {
	return isCode(err, golibvirt.ErrNoDomain) || isCode(err, golibvirt.ErrNoStorageVol) || isCode(err, golibvirt.ErrNoStoragePool)
}

func (c conn) pool(name string) (golibvirt.StoragePool, error) {
	p, err := c.l.StoragePoolLookupByName(name)
	return p, wrap("look up storage pool", name, err)
}

// backingFormat is the format of the image a boot overlay is backed by. libvirt knows it when the
// image is a volume of some pool; otherwise the file name's extension decides, because libvirt
// refuses to probe formats.
func (c conn) backingFormat(path string) string {
	if v, err := c.l.StorageVolLookupByPath(path); err == nil {
		if f := c.volumeFormat(v); f != "" {
			return f
		}
	}
	if strings.HasSuffix(path, ".qcow2") {
		return "qcow2"
	}
	return "raw"
}

// volumeFormat is the volume's format as libvirt records it; empty when it cannot tell. A
// directory pool records "raw" for a file whose format it did not recognise.
func (c conn) volumeFormat(v golibvirt.StorageVol) string {
	doc, err := c.l.StorageVolGetXMLDesc(v, 0)
	if err != nil {
		return ""
	}
	var x libvirtxml.StorageVolume
	if x.Unmarshal(doc) != nil || x.Target == nil || x.Target.Format == nil {
		return ""
	}
	return x.Target.Format.Type
}

// EnsureVolume creates a volume unless one of the same name exists, which is reused untouched.
//
// created must stay true across a lost connection: when the first attempt sent the create and
// lost the answer, the second finds the volume there, and that volume is the one this call made
// (it was not there when the first attempt looked), not one to reuse. Callers delete what they
// created when a later step fails, so calling it reused would leak it.
func (b *Backend) EnsureVolume(ctx context.Context, spec backend.VolumeSpec) (bool, error) {
	sentCreate, created := false, false
	ensure := func(c conn, p golibvirt.StoragePool) error {
		if !spec.Fresh || sentCreate {
			if _, err := c.l.StorageVolLookupByName(p, spec.Name); err == nil {
				created = sentCreate
				return nil
			} else if !isCode(err, golibvirt.ErrNoStorageVol) {
				return wrap("look up volume", spec.Pool+"/"+spec.Name, err)
			}
		}
		vol := libvirtxml.StorageVolume{
			Name:       spec.Name,
			Capacity:   &libvirtxml.StorageVolumeSize{Unit: "MiB", Value: uint64(spec.SizeMiB)},
			Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
			Target:     &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: engine.VolumeFormat}},
		}
		backing := spec.BackingPath
		if spec.BackingVolume != "" {
			// The image volume the group made in its pool: its path is libvirt's to say.
			bv, err := c.l.StorageVolLookupByName(p, spec.BackingVolume)
			if err != nil {
				return wrap("look up image volume", spec.Pool+"/"+spec.BackingVolume, err)
			}
			if backing, err = c.l.StorageVolGetPath(bv); err != nil {
				return wrap("read the path of image volume", spec.Pool+"/"+spec.BackingVolume, err)
			}
		}
		if backing != "" {
			if err := c.checkBacking(spec, backing); err != nil {
				return err
			}
			vol.BackingStore = &libvirtxml.StorageVolumeBackingStore{
				Path:   backing,
				Format: &libvirtxml.StorageVolumeTargetFormat{Type: c.backingFormat(backing)},
			}
		}
		doc, err := vol.Marshal()
		if err != nil {
			return fmt.Errorf("build volume XML for %s/%s: %w", spec.Pool, spec.Name, err)
		}
		sentCreate = true
		if _, err := c.l.StorageVolCreateXML(p, doc, 0); err != nil {
			if isCode(err, golibvirt.ErrStorageVolExist) {
				// Another writer created it between the lookup and the create (or, for a
				// fresh volume, before): reuse it.
				created = false
				return nil
			}
			return wrap("create volume", spec.Pool+"/"+spec.Name, err)
		}
		created = true
		return nil
	}
	err := b.do(ctx, "create volume", spec.Pool+"/"+spec.Name, func(c conn) error {
		for attempt := 1; ; attempt++ {
			p, err := b.poolHandle(c, spec.Pool)
			if err != nil {
				return err
			}
			err = ensure(c, p)
			if attempt == 1 && isCode(err, golibvirt.ErrNoStoragePool) {
				// The pool's kept handle is stale (the pool was defined again since): once more
				// with the pool looked up now.
				b.pools.forget(spec.Pool)
				continue
			}
			return err
		}
	})
	if err != nil {
		return false, err
	}
	if created {
		tflog.SubsystemDebug(ctx, Subsystem, "created volume", map[string]any{"pool": spec.Pool, "volume": spec.Name, "size_mib": spec.SizeMiB, "backing": spec.BackingPath, "backing_volume": spec.BackingVolume})
	} else {
		tflog.SubsystemDebug(ctx, Subsystem, "reused volume", map[string]any{"pool": spec.Pool, "volume": spec.Name})
	}
	return created, nil
}

// DeleteVolume deletes a volume if it exists, so a second attempt after a lost connection is
// safe. It is one call: libvirt's storage driver finds a volume by its pool's name and its own,
// which the handle carries, so neither needs a lookup first.
func (b *Backend) DeleteVolume(ctx context.Context, pool, name string) error {
	deleted := false
	err := b.do(ctx, "delete volume", pool+"/"+name, func(c conn) error {
		err := c.l.StorageVolDelete(golibvirt.StorageVol{Pool: pool, Name: name}, 0)
		if isNotFoundLibvirt(err) {
			// No pool, no volume: what was to be deleted is gone.
			return nil
		}
		if err != nil {
			return wrap("delete volume", pool+"/"+name, err)
		}
		deleted = true
		return nil
	})
	if err != nil {
		return err
	}
	if deleted {
		tflog.SubsystemDebug(ctx, Subsystem, "deleted volume", map[string]any{"pool": pool, "volume": name})
	}
	return nil
}

// ListVolumes lists a pool's volumes in one call and reads the sizes of those that match.
func (b *Backend) ListVolumes(ctx context.Context, pool, prefix string) ([]backend.Volume, error) {
	var out []backend.Volume
	err := b.do(ctx, "list volumes of pool", pool, func(c conn) error {
		p, err := c.pool(pool)
		if err != nil {
			return err
		}
		vols, _, err := c.l.StoragePoolListAllVolumes(p, 1, 0)
		if err != nil {
			return wrap("list volumes of pool", pool, err)
		}
		out = nil
		for _, v := range vols {
			if !strings.HasPrefix(v.Name, prefix) {
				continue
			}
			_, capacity, _, err := c.l.StorageVolGetInfo(v)
			if isNotFoundLibvirt(err) {
				continue
			}
			if err != nil {
				return wrap("read volume", pool+"/"+v.Name, err)
			}
			out = append(out, backend.Volume{Name: v.Name, Path: v.Key, CapacityBytes: capacity})
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListVolumeNames lists the pool's volume names in one call. It only reads, so running it again after
// a reconnect is safe.
func (b *Backend) ListVolumeNames(ctx context.Context, pool, prefix string) ([]string, error) {
	var out []string
	err := b.do(ctx, "list volumes of pool", pool, func(c conn) error {
		p, err := c.pool(pool)
		if err != nil {
			return err
		}
		vols, _, err := c.l.StoragePoolListAllVolumes(p, 1, 0)
		if err != nil {
			return wrap("list volumes of pool", pool, err)
		}
		out = out[:0]
		for _, v := range vols {
			if strings.HasPrefix(v.Name, prefix) {
				out = append(out, v.Name)
			}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

func (c conn) resizeVolume(pool, name string, bytes uint64) error {
	p, err := c.pool(pool)
	if err != nil {
		return err
	}
	v, err := c.l.StorageVolLookupByName(p, name)
	if err != nil {
		return wrap("look up volume", pool+"/"+name, err)
	}
	return wrap("resize volume", pool+"/"+name, c.l.StorageVolResize(v, bytes, 0))
}
