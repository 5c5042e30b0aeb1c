package libvirt

import (
	"bytes"
	"context"
	"errors"
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
// behind; writing it again after a lost connection is safe, and WriteSeed does so once when the
// upload's connection is lost. The upload is a stream, on a connection of its own (stream.go).
func (b *Backend) WriteSeed(ctx context.Context, pool, name string, data []byte) error {
	const op = "write cloud-init seed volume"
	object := pool + "/" + name
	var err error
	for try := 0; try < 2; try++ {
		var v golibvirt.StorageVol
		err = b.do(ctx, op, object, func(c conn) error {
			var err error
			v, err = c.makeSeed(pool, name, len(data))
			return err
		})
		if err != nil {
			return err
		}
		src := &source{ctx: ctx, r: bytes.NewReader(data), want: uint64(len(data))}
		err = b.stream(ctx, "upload volume", object, true, func(c conn, _ func()) error {
			err := c.l.StorageVolUpload(v, src, 0, uint64(len(data)), 0)
			if src.err != nil {
				return fmt.Errorf("upload volume %s: %w", object, src.err)
			}
			if err != nil {
				return failedStream(c, "upload volume", object, src.n, err)
			}
			return nil
		})
		var lost *streamLostError
		if err == nil || !errors.As(err, &lost) || ctx.Err() != nil {
			break
		}
	}
	if err != nil {
		return fmt.Errorf("%s %s on %s: %w", op, object, b.uri, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "wrote seed volume", map[string]any{"pool": pool, "volume": name, "bytes": len(data)})
	return nil
}

// makeSeed deletes the seed volume if it is there and makes it again, empty, of size bytes.
func (c conn) makeSeed(pool, name string, size int) (golibvirt.StorageVol, error) {
	p, err := c.pool(pool)
	if err != nil {
		return golibvirt.StorageVol{}, err
	}
	if v, err := c.l.StorageVolLookupByName(p, name); err == nil {
		if err := c.l.StorageVolDelete(v, 0); err != nil && !isNotFoundLibvirt(err) {
			return golibvirt.StorageVol{}, wrap("delete volume", pool+"/"+name, err)
		}
	} else if !isNotFoundLibvirt(err) {
		return golibvirt.StorageVol{}, wrap("look up volume", pool+"/"+name, err)
	}
	doc, err := (&libvirtxml.StorageVolume{
		Name:     name,
		Capacity: &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: uint64(size)},
		Target:   &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "raw"}},
	}).Marshal()
	if err != nil {
		return golibvirt.StorageVol{}, fmt.Errorf("build volume XML for %s/%s: %w", pool, name, err)
	}
	v, err := c.l.StorageVolCreateXML(p, doc, 0)
	return v, wrap("create volume", pool+"/"+name, err)
}

// maxSeedRead bounds what ReadSeed downloads: a seed is a few KiB of text, and a volume of that
// name far larger is not one the provider wrote.
const maxSeedRead = 64 << 20

// ReadSeed downloads the seed volume, on a connection of its own (stream.go).
func (b *Backend) ReadSeed(ctx context.Context, pool, name string) ([]byte, error) {
	const op = "read cloud-init seed volume"
	object := pool + "/" + name
	var v golibvirt.StorageVol
	var capacity uint64
	err := b.do(ctx, op, object, func(c conn) error {
		p, err := c.pool(pool)
		if err != nil {
			return err
		}
		v, err = c.l.StorageVolLookupByName(p, name)
		if err != nil {
			return wrap("look up volume", object, err)
		}
		_, capacity, _, err = c.l.StorageVolGetInfo(v)
		if err != nil {
			return wrap("read volume info", object, err)
		}
		if capacity > maxSeedRead {
			return fmt.Errorf("volume %s is %d bytes, more than a cloud-init seed the provider writes (at most %d read)", object, capacity, maxSeedRead)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	err = b.stream(ctx, "download volume", object, false, func(c conn, cut func()) error {
		s := &sink{w: &out, cut: cut, gate: c.gate}
		err := c.l.StorageVolDownload(v, s, 0, capacity, 0)
		if s.err != nil {
			return fmt.Errorf("download volume %s: writing its content failed after %d bytes: %w", object, s.n.Load(), s.err)
		}
		if err != nil {
			return failedStream(c, "download volume", object, s.n.Load(), err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s %s on %s: %w", op, object, b.uri, err)
	}
	// The bytes are the member's user data, which may hold secrets: only their count is logged.
	tflog.SubsystemDebug(ctx, Subsystem, "read seed volume", map[string]any{"pool": pool, "volume": name, "bytes": out.Len()})
	return out.Bytes(), nil
}

// ReplaceSeed swaps the seed: eject (forced: a guest may have locked the tray), write, insert.
// An interruption leaves the drive empty or the old media in; doing it all again finishes it.
// The write is WriteSeed's, whose upload runs on a connection of its own (stream.go).
func (b *Backend) ReplaceSeed(ctx context.Context, name string, seed backend.Disk, data []byte) error {
	const op = "replace cloud-init seed of domain"
	live := false
	var dev, had string
	err := b.do(ctx, op, name, func(c conn) error {
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
		dev, had = p.seedDev, p.seed
		if !live {
			return nil
		}
		eject := seedXML(backend.Disk{}, p.seedDev)
		doc, err := eject.Marshal()
		if err != nil {
			return err
		}
		flags := golibvirt.DomainDeviceModifyConfig | golibvirt.DomainDeviceModifyLive | golibvirt.DomainDeviceModifyForce
		return wrap("eject the cloud-init seed of domain", name, c.l.DomainUpdateDeviceFlags(d, doc, flags))
	})
	if err != nil {
		return err
	}
	if err := b.WriteSeed(ctx, seed.Pool, seed.Volume, data); err != nil {
		return fmt.Errorf("%s %s: %w", op, name, err)
	}
	if live || had != seed.Volume {
		err = b.do(ctx, op, name, func(c conn) error {
			d, err := c.lookup(name)
			if err != nil {
				return err
			}
			flags := golibvirt.DomainDeviceModifyConfig
			if live {
				flags |= golibvirt.DomainDeviceModifyLive
			}
			insert := seedXML(seed, dev)
			doc, err := insert.Marshal()
			if err != nil {
				return err
			}
			return wrap("insert the cloud-init seed into domain", name, c.l.DomainUpdateDeviceFlags(d, doc, flags))
		})
		if err != nil {
			return err
		}
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
