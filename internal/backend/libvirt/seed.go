package libvirt

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// seedAlias names the NoCloud seed drive in a member's definition. User aliases survive in the
// persistent definition, so the drive is found by it even while it is empty; upper case keeps it
// apart from every disk's alias, which is "ua-" and a lower-case device name.
const seedAlias = "ua-NOCLOUD"

// agentChannel is the virtio-serial channel the QEMU guest agent talks on.
const agentChannel = "org.qemu.guest_agent.0"

// seedXML is the seed drive: a read-only SCSI CD-ROM holding the volume, or empty when seed has
// no volume (an ejected drive).
func seedXML(seed backend.Disk, dev string) libvirtxml.DomainDisk {
	d := libvirtxml.DomainDisk{
		Device:   "cdrom",
		Driver:   &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "raw"},
		Target:   &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "scsi"},
		ReadOnly: &libvirtxml.DomainDiskReadOnly{},
		Alias:    &libvirtxml.DomainAlias{Name: seedAlias},
	}
	if seed.Volume != "" {
		d.Source = &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: seed.Pool, Volume: seed.Volume}}
	}
	return d
}

// WriteSeed replaces the volume with a raw one holding exactly data. The seed is small, and
// deleting and creating it again is what makes a shorter seed leave no bytes of a longer one
// behind; writing it again after a lost connection is safe.
func (b *Backend) WriteSeed(ctx context.Context, pool, name string, data []byte) error {
	err := b.do(ctx, "write cloud-init seed volume", pool+"/"+name, func(c conn) error {
		return c.writeSeed(pool, name, data)
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "wrote seed volume", map[string]any{"pool": pool, "volume": name, "bytes": len(data)})
	return nil
}

func (c conn) writeSeed(pool, name string, data []byte) error {
	p, err := c.pool(pool)
	if err != nil {
		return err
	}
	if v, err := c.l.StorageVolLookupByName(p, name); err == nil {
		if err := c.l.StorageVolDelete(v, 0); err != nil && !isNotFoundLibvirt(err) {
			return wrap("delete volume", pool+"/"+name, err)
		}
	} else if !isNotFoundLibvirt(err) {
		return wrap("look up volume", pool+"/"+name, err)
	}
	doc, err := (&libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(len(data))},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}).Marshal()
	if err != nil {
		return fmt.Errorf("build volume XML for %s/%s: %w", pool, name, err)
	}
	v, err := c.l.StorageVolCreateXML(p, doc, 0)
	if err != nil {
		return wrap("create volume", pool+"/"+name, err)
	}
	return wrap("upload volume", pool+"/"+name, c.l.StorageVolUpload(v, bytes.NewReader(data), 0, uint64(len(data)), 0))
}

// maxSeedRead bounds what ReadSeed downloads: a seed is a few KiB of text, and a volume of that
// name far larger is not one the provider wrote.
const maxSeedRead = 64 << 20

// ReadSeed downloads the seed volume.
func (b *Backend) ReadSeed(ctx context.Context, pool, name string) ([]byte, error) {
	var out bytes.Buffer
	err := b.do(ctx, "read cloud-init seed volume", pool+"/"+name, func(c conn) error {
		out.Reset()
		p, err := c.pool(pool)
		if err != nil {
			return err
		}
		v, err := c.l.StorageVolLookupByName(p, name)
		if err != nil {
			return wrap("look up volume", pool+"/"+name, err)
		}
		_, capacity, _, err := c.l.StorageVolGetInfo(v)
		if err != nil {
			return wrap("read volume info", pool+"/"+name, err)
		}
		if capacity > maxSeedRead {
			return fmt.Errorf("volume %s/%s is %d bytes, more than a cloud-init seed the provider writes (at most %d read)", pool, name, capacity, maxSeedRead)
		}
		return wrap("download volume", pool+"/"+name, c.l.StorageVolDownload(v, &out, 0, capacity, 0))
	})
	if err != nil {
		return nil, err
	}
	// The bytes are the member's user data, which may hold secrets: only their count is logged.
	tflog.SubsystemDebug(ctx, Subsystem, "read seed volume", map[string]any{"pool": pool, "volume": name, "bytes": out.Len()})
	return out.Bytes(), nil
}

// ReplaceSeed swaps the seed: eject (forced: a guest may have locked the tray), write, insert.
// An interruption leaves the drive empty or the old media in; doing it all again finishes it.
func (b *Backend) ReplaceSeed(ctx context.Context, name string, seed backend.Disk, data []byte) error {
	live := false
	err := b.do(ctx, "replace cloud-init seed of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		live = d.ID > 0
		p, err := c.parsed(d, golibvirt.DomainXMLInactive)
		if err != nil {
			return err
		}
		if p.seedDev == "" {
			return fmt.Errorf("replace cloud-init seed of domain %s: the domain has no seed drive (%s)", name, seedAlias)
		}
		flags := golibvirt.DomainDeviceModifyConfig
		if live {
			flags |= golibvirt.DomainDeviceModifyLive
			eject := seedXML(backend.Disk{}, p.seedDev)
			doc, err := eject.Marshal()
			if err != nil {
				return err
			}
			if err := c.l.DomainUpdateDeviceFlags(d, doc, flags|golibvirt.DomainDeviceModifyForce); err != nil {
				return wrap("eject the cloud-init seed of domain", name, err)
			}
		}
		if err := c.writeSeed(seed.Pool, seed.Volume, data); err != nil {
			return err
		}
		if !live && p.seed == seed.Volume {
			return nil
		}
		insert := seedXML(seed, p.seedDev)
		doc, err := insert.Marshal()
		if err != nil {
			return err
		}
		return wrap("insert the cloud-init seed into domain", name, c.l.DomainUpdateDeviceFlags(d, doc, flags))
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "replaced seed", map[string]any{"domain": name, "volume": seed.Volume, "live": live})
	return nil
}

// Leases reads the network's DHCP leases in one call.
func (b *Backend) Leases(ctx context.Context, network string) (map[string][]string, error) {
	out := map[string][]string{}
	err := b.do(ctx, "read DHCP leases of network", network, func(c conn) error {
		n, err := c.l.NetworkLookupByName(network)
		if err != nil {
			if isCode(err, golibvirt.ErrNoNetwork) {
				return fmt.Errorf("network %s: %w", network, backend.ErrNotFound)
			}
			return wrap("look up network", network, err)
		}
		leases, _, err := c.l.NetworkGetDhcpLeases(n, nil, 1, 0)
		if err != nil {
			return wrap("read DHCP leases of network", network, err)
		}
		clear(out)
		for _, l := range leases {
			if len(l.Mac) == 0 {
				continue
			}
			mac := strings.ToLower(l.Mac[0])
			out[mac] = append(out[mac], l.Ipaddr)
		}
		return nil
	})
	return out, err
}

// GuestAddresses asks the guest agent for the guest's addresses, leaving out loopback and
// link-local ones, which tell nobody outside the guest anything.
func (b *Backend) GuestAddresses(ctx context.Context, name string) ([]string, error) {
	var out []string
	err := b.do(ctx, "read guest agent addresses of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		ifaces, err := c.l.DomainInterfaceAddresses(d, uint32(golibvirt.DomainInterfaceAddressesSrcAgent), 0)
		if err != nil {
			return wrap("read guest agent addresses of domain", name, err)
		}
		out = guestAddresses(ifaces)
		return nil
	})
	return out, err
}

func guestAddresses(ifaces []golibvirt.DomainInterface) []string {
	var out []string
	for _, i := range ifaces {
		for _, a := range i.Addrs {
			ip := net.ParseIP(a.Addr)
			if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() {
				continue
			}
			out = append(out, a.Addr)
		}
	}
	return out
}
