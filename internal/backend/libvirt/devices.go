// This file holds the domain's devices beyond disks and interfaces: the graphical console, the
// entropy device, the TPM and virtiofs shares, as defined and as read back.

package libvirt

import (
	"context"
	"strconv"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// graphicsXML is the console: on a port libvirt picks when the domain starts (autoport), on the
// given address only. The address is given as a listen element too, which is how libvirt writes
// it back, so that an update of the device matches the one defined.
func graphicsXML(g backend.Graphics) libvirtxml.DomainGraphic {
	listeners := []libvirtxml.DomainGraphicListener{{Address: &libvirtxml.DomainGraphicListenerAddress{Address: g.Listen}}}
	if g.Type == engine.GraphicsSpice {
		return libvirtxml.DomainGraphic{Spice: &libvirtxml.DomainGraphicSpice{AutoPort: "yes", Listen: g.Listen, Passwd: g.Password, Listeners: listeners}}
	}
	return libvirtxml.DomainGraphic{VNC: &libvirtxml.DomainGraphicVNC{AutoPort: "yes", Listen: g.Listen, Passwd: g.Password, Listeners: listeners}}
}

// rngDevice is virtio-rng fed from the host's non-blocking /dev/urandom, so that a guest never
// waits on the host's entropy.
func rngDevice() libvirtxml.DomainRNG {
	return libvirtxml.DomainRNG{Model: "virtio", Backend: &libvirtxml.DomainRNGBackend{Random: &libvirtxml.DomainRNGBackendRandom{Device: "/dev/urandom"}}}
}

// tpmXML is an emulated TPM: libvirt starts swtpm (Debian's swtpm and swtpm-tools packages) for
// the domain and keeps its state under /var/lib/libvirt/swtpm/<uuid>.
func tpmXML(t engine.TPM) libvirtxml.DomainTPM {
	return libvirtxml.DomainTPM{Model: t.Model, Backend: &libvirtxml.DomainTPMBackend{Emulator: &libvirtxml.DomainTPMBackendEmulator{Version: t.Version}}}
}

// filesystemXML is one virtiofs share. libvirt finds virtiofsd through QEMU's vhost-user
// descriptions (/usr/share/qemu/vhost-user/*.json; Debian's qemu-system-common ships one for
// /usr/lib/qemu/virtiofsd), so no binary path is given.
func filesystemXML(f engine.Filesystem) libvirtxml.DomainFilesystem {
	fs := libvirtxml.DomainFilesystem{
		AccessMode: "passthrough",
		Driver:     &libvirtxml.DomainFilesystemDriver{Type: "virtiofs"},
		Source:     &libvirtxml.DomainFilesystemSource{Mount: &libvirtxml.DomainFilesystemSourceMount{Dir: f.Source}},
		Target:     &libvirtxml.DomainFilesystemTarget{Dir: f.Target},
	}
	if f.ReadOnly {
		// libvirt 9.0 refuses it for virtiofs; the provider refuses it at plan, and a newer
		// libvirt that accepts it gets it as asked.
		fs.ReadOnly = &libvirtxml.DomainFilesystemReadOnly{}
	}
	return fs
}

// addDevices adds the spec's console, entropy device and shares to dom. virtiofsd maps the
// guest's memory, so a domain with a share has its memory shared, from memfd (which needs no
// hugepages or file path on the host).
func addDevices(dom *libvirtxml.Domain, s backend.DomainSpec) {
	if s.Graphics != nil {
		dom.Devices.Graphics = append(dom.Devices.Graphics, graphicsXML(*s.Graphics))
	}
	if s.RNG {
		dom.Devices.RNGs = append(dom.Devices.RNGs, rngDevice())
	}
	for _, f := range s.Filesystems {
		dom.Devices.Filesystems = append(dom.Devices.Filesystems, filesystemXML(f))
	}
	if s.TPM != nil {
		dom.Devices.TPMs = append(dom.Devices.TPMs, tpmXML(*s.TPM))
	}
	if len(s.Filesystems) > 0 {
		dom.MemoryBacking = &libvirtxml.DomainMemoryBacking{
			MemorySource: &libvirtxml.DomainMemorySource{Type: "memfd"},
			MemoryAccess: &libvirtxml.DomainMemoryAccess{Mode: "shared"},
		}
	}
}

// graphicsPortOf is the port of the first VNC or SPICE console of a parsed domain, 0 when it has
// none or no port yet (libvirt writes -1 until the domain runs).
func graphicsPortOf(gs []libvirtxml.DomainGraphic) int {
	for _, g := range gs {
		switch {
		case g.VNC != nil:
			return max(g.VNC.Port, 0)
		case g.Spice != nil:
			return max(g.Spice.Port, 0)
		}
	}
	return 0
}

// graphics reads a graphics element for the listing: its type and port (see graphicsPortOf).
func (d *domScan) graphics(devs *xmlDevices) error {
	typ, err := d.attr("type")
	if err != nil {
		return err
	}
	port, err := d.attr("port")
	if err != nil {
		return err
	}
	if (typ == engine.GraphicsVNC || typ == engine.GraphicsSpice) && !devs.graphicsSeen {
		devs.graphicsSeen = true
		// A port that is not a number makes the full parser fail; here it is no port.
		if n, err := strconv.Atoi(strings.TrimSpace(port)); err == nil {
			devs.GraphicsPort = max(n, 0)
		}
	}
	return d.skip()
}

// SetGraphicsPassword updates the console device with its new password, in the definition and
// live when the domain runs: QEMU changes a VNC or SPICE password without a restart. The
// password is never logged.
func (b *Backend) SetGraphicsPassword(ctx context.Context, name string, g backend.Graphics) error {
	dev := graphicsXML(g)
	doc, err := dev.Marshal()
	if err != nil {
		return err
	}
	live := false
	err = b.do(ctx, "set the graphics password of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		live = d.ID > 0
		return wrap("set the graphics password of domain", name, c.l.DomainUpdateDeviceFlags(d, doc, golibvirt.DomainDeviceModifyFlags(impact(d))))
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "set graphics password", map[string]any{"domain": name, "live": live, "type": g.Type})
	return nil
}

// GraphicsPassword reads the console's password from the domain's definition, which only a
// secure read shows.
func (b *Backend) GraphicsPassword(ctx context.Context, name string) (string, error) {
	var pw string
	err := b.do(ctx, "read the graphics password of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		p, err := c.parsed(d, golibvirt.DomainXMLInactive|golibvirt.DomainXMLSecure)
		if err != nil {
			return err
		}
		pw = ""
		if p.dom.Devices != nil {
			for _, g := range p.dom.Devices.Graphics {
				switch {
				case g.VNC != nil:
					pw = g.VNC.Passwd
				case g.Spice != nil:
					pw = g.Spice.Passwd
				default:
					continue
				}
				return nil
			}
		}
		return nil
	})
	return pw, err
}
