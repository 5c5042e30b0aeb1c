package libvirt

import (
	"context"
	"errors"
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

func (b *Backend) pool(name string) (golibvirt.StoragePool, error) {
	p, err := b.l.StoragePoolLookupByName(name)
	return p, wrap("look up storage pool", name, err)
}

// backingFormat is the format of the image a boot overlay is backed by. libvirt knows it when the
// image is a volume of some pool; otherwise the file name's extension decides, because libvirt
// refuses to probe formats.
func (b *Backend) backingFormat(path string) string {
	if v, err := b.l.StorageVolLookupByPath(path); err == nil {
		if doc, err := b.l.StorageVolGetXMLDesc(v, 0); err == nil {
			var x libvirtxml.StorageVolume
			if x.Unmarshal(doc) == nil && x.Target != nil && x.Target.Format != nil && x.Target.Format.Type != "" {
				return x.Target.Format.Type
			}
		}
	}
	if strings.HasSuffix(path, ".qcow2") {
		return "qcow2"
	}
	return "raw"
}

// EnsureVolume creates a volume unless one of the same name exists, which is reused untouched.
func (b *Backend) EnsureVolume(ctx context.Context, spec backend.VolumeSpec) (bool, error) {
	p, err := b.pool(spec.Pool)
	if err != nil {
		return false, err
	}
	if _, err := b.l.StorageVolLookupByName(p, spec.Name); err == nil {
		tflog.SubsystemDebug(ctx, Subsystem, "reused volume", map[string]any{"pool": spec.Pool, "volume": spec.Name})
		return false, nil
	} else if !isNotFoundLibvirt(err) {
		return false, wrap("look up volume", spec.Pool+"/"+spec.Name, err)
	}
	vol := libvirtxml.StorageVolume{
		Name:       spec.Name,
		Capacity:   &libvirtxml.StorageVolumeSize{Unit: "MiB", Value: uint64(spec.SizeMiB)},
		Allocation: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
		Target:     &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: engine.VolumeFormat}},
	}
	if spec.BackingPath != "" {
		vol.BackingStore = &libvirtxml.StorageVolumeBackingStore{
			Path:   spec.BackingPath,
			Format: &libvirtxml.StorageVolumeTargetFormat{Type: b.backingFormat(spec.BackingPath)},
		}
	}
	doc, err := vol.Marshal()
	if err != nil {
		return false, err
	}
	if _, err := b.l.StorageVolCreateXML(p, doc, 0); err != nil {
		if isCode(err, golibvirt.ErrStorageVolExist) {
			// Another writer created it between the lookup and the create: reuse it.
			return false, nil
		}
		return false, wrap("create volume", spec.Pool+"/"+spec.Name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "created volume", map[string]any{"pool": spec.Pool, "volume": spec.Name, "size_mib": spec.SizeMiB, "backing": spec.BackingPath})
	return true, nil
}

// DeleteVolume deletes a volume if it exists.
func (b *Backend) DeleteVolume(ctx context.Context, pool, name string) error {
	p, err := b.pool(pool)
	if err != nil {
		return err
	}
	v, err := b.l.StorageVolLookupByName(p, name)
	if isNotFoundLibvirt(err) {
		return nil
	}
	if err != nil {
		return wrap("look up volume", pool+"/"+name, err)
	}
	if err := b.l.StorageVolDelete(v, 0); err != nil && !isNotFoundLibvirt(err) {
		return wrap("delete volume", pool+"/"+name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "deleted volume", map[string]any{"pool": pool, "volume": name})
	return nil
}

// ListVolumes lists a pool's volumes in one call and reads the sizes of those that match.
func (b *Backend) ListVolumes(ctx context.Context, pool, prefix string) ([]backend.Volume, error) {
	p, err := b.pool(pool)
	if err != nil {
		return nil, err
	}
	vols, _, err := b.l.StoragePoolListAllVolumes(p, 1, 0)
	if err != nil {
		return nil, wrap("list volumes of pool", pool, err)
	}
	var out []backend.Volume
	for _, v := range vols {
		if !strings.HasPrefix(v.Name, prefix) {
			continue
		}
		_, capacity, _, err := b.l.StorageVolGetInfo(v)
		if isNotFoundLibvirt(err) {
			continue
		}
		if err != nil {
			return nil, wrap("read volume", pool+"/"+v.Name, err)
		}
		out = append(out, backend.Volume{Name: v.Name, Path: v.Key, CapacityBytes: capacity})
	}
	return out, nil
}

func (b *Backend) resizeVolume(pool, name string, bytes uint64) error {
	p, err := b.pool(pool)
	if err != nil {
		return err
	}
	v, err := b.l.StorageVolLookupByName(p, name)
	if err != nil {
		return wrap("look up volume", pool+"/"+name, err)
	}
	return wrap("resize volume", pool+"/"+name, b.l.StorageVolResize(v, bytes, 0))
}
