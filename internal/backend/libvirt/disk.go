package libvirt

import (
	"context"
	"fmt"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// AttachDisk attaches a disk on the first free SCSI target. A disk already attached under that
// device name is left as it is, which also makes a second attempt after a lost connection safe.
func (b *Backend) AttachDisk(ctx context.Context, name string, disk backend.Disk) error {
	var dev string
	live, attached := false, false
	err := b.do(ctx, "attach disk "+disk.DeviceName+" to domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		live = d.ID > 0
		// The target must be free in the persistent definition and in the live domain.
		used := map[string]bool{}
		for _, f := range []golibvirt.DomainXMLFlags{0, golibvirt.DomainXMLInactive} {
			p, err := c.parsed(d, f)
			if err != nil {
				return err
			}
			if _, ok := p.targets[disk.DeviceName]; ok && f == 0 {
				attached = true
				return nil
			}
			for t := range p.used {
				used[t] = true
			}
		}
		dev = ""
		for i := 0; dev == ""; i++ {
			if !used[target(i)] {
				dev = target(i)
			}
		}
		resolved := c.resolveDisks([]backend.Disk{disk})[0]
		if err := c.checkDisks(name, []backend.Disk{resolved}, nil); err != nil {
			return err
		}
		doc, err := diskDeviceXML(resolved, dev)
		if err != nil {
			return fmt.Errorf("build disk XML for %s: %w", name, err)
		}
		if err := c.l.DomainAttachDeviceFlags(d, doc, uint32(impact(d))); err != nil {
			return wrap("attach disk "+disk.DeviceName+" to domain", name, err)
		}
		return nil
	})
	if err != nil || attached {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "attached disk", map[string]any{"domain": name, "device": disk.DeviceName, "target": dev, "live": live})
	return nil
}

// resolveDisks marks the disks given by a path that no storage pool holds, and gives each disk
// the format QEMU must open it with: a volume's own, as libvirt records it (a user's raw volume
// must not be opened as qcow2, nor a qcow2 image as raw, which would hand the guest the image's
// metadata). A volume whose name ends in .qcow2, as every volume the provider makes does, is
// taken at its word without a call; other names and paths are looked up.
func (c conn) resolveDisks(disks []backend.Disk) []backend.Disk {
	out := make([]backend.Disk, len(disks))
	for i, d := range disks {
		switch {
		case d.Volume != "" && !strings.HasSuffix(d.Volume, "."+engine.VolumeFormat):
			if p, err := c.l.StoragePoolLookupByName(d.Pool); err == nil {
				if v, err := c.l.StorageVolLookupByName(p, d.Volume); err == nil {
					d.Format = c.volumeFormat(v)
				}
			}
		case d.Path != "" && d.Volume == "":
			v, err := c.l.StorageVolLookupByPath(d.Path)
			d.HostFile = err != nil && isNotFoundLibvirt(err)
			if err == nil {
				d.Format = c.volumeFormat(v)
			}
		}
		out[i] = d
	}
	return out
}

// DetachDisk detaches a disk by device name; a disk that is not attached is not an error, which
// also makes a second attempt after a lost connection safe.
func (b *Backend) DetachDisk(ctx context.Context, name, deviceName string) error {
	return b.do(ctx, "detach disk "+deviceName+" from domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		for _, f := range []golibvirt.DomainXMLFlags{0, golibvirt.DomainXMLInactive} {
			p, err := c.parsed(d, f)
			if err != nil {
				return err
			}
			dev, ok := p.targets[deviceName]
			if !ok {
				continue
			}
			var disk backend.Disk
			for _, x := range p.disks {
				if x.DeviceName == deviceName {
					disk = x
				}
			}
			resolved := c.resolveDisks([]backend.Disk{disk})[0]
			if err := c.checkDisks(name, []backend.Disk{resolved}, nil); err != nil {
				return err
			}
			doc, err := diskDeviceXML(resolved, dev)
			if err != nil {
				return fmt.Errorf("build disk XML for %s: %w", name, err)
			}
			flags := golibvirt.DomainAffectConfig
			if f == 0 {
				flags = impact(d)
			}
			if err := c.l.DomainDetachDeviceFlags(d, doc, uint32(flags)); err != nil {
				return wrap("detach disk "+deviceName+" from domain", name, err)
			}
			tflog.SubsystemDebug(ctx, Subsystem, "detached disk", map[string]any{"domain": name, "device": deviceName, "live": f == 0 && d.ID > 0})
			return nil
		}
		return nil
	})
}

// GrowDisk grows a disk: through QEMU when the domain runs, on the volume when it does not. The
// size is absolute, so growing again to it after a lost connection is safe.
func (b *Backend) GrowDisk(ctx context.Context, name, deviceName string, disk backend.Disk, sizeMiB int64) error {
	bytes := uint64(sizeMiB) << 20
	live := false
	err := b.do(ctx, "grow disk "+deviceName+" of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		live = d.ID > 0
		if !live {
			return c.resizeVolume(disk.Pool, disk.Volume, bytes)
		}
		p, err := c.parsed(d, 0)
		if err != nil {
			return err
		}
		dev, ok := p.targets[deviceName]
		if !ok {
			return fmt.Errorf("grow disk %s of domain %s: the disk is not attached", deviceName, name)
		}
		return wrap("grow disk "+deviceName+" of domain", name, c.l.DomainBlockResize(d, dev, bytes, golibvirt.DomainBlockResizeBytes))
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "grew disk", map[string]any{"domain": name, "device": deviceName, "size_mib": sizeMiB, "live": live})
	return nil
}
