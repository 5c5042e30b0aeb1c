package libvirt

import (
	"context"
	"fmt"
	"net/netip"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// A network's DHCP host entries are read from its XML and changed with virNetworkUpdate, live and
// in its persistent definition, which libvirt applies by rewriting dnsmasq's hosts file and
// signalling it: the network is not restarted and no guest loses its link.

// network looks the network up, with ErrNotFound for a missing one.
func (c conn) network(name string) (golibvirt.Network, error) {
	n, err := c.l.NetworkLookupByName(name)
	if err != nil {
		if isCode(err, golibvirt.ErrNoNetwork) {
			return n, fmt.Errorf("look up network %s on %s: %w", name, c.uri, backend.ErrNotFound)
		}
		return n, wrap("look up network", name, err)
	}
	return n, nil
}

// DHCPNetwork reads the network's first IPv4 address with its DHCP range and host entries.
func (b *Backend) DHCPNetwork(ctx context.Context, name string) (engine.DHCPNetwork, error) {
	var out engine.DHCPNetwork
	err := b.do(ctx, "read network", name, func(c conn) error {
		n, err := c.network(name)
		if err != nil {
			return err
		}
		doc, err := c.l.NetworkGetXMLDesc(n, 0)
		if err != nil {
			return wrap("read network", name, err)
		}
		out, err = dhcpNetworkOf(name, doc)
		return err
	})
	return out, err
}

// dhcpNetworkOf reads a network's XML: the first IPv4 <ip> element with a DHCP range, else the
// first IPv4 one (a network without DHCP).
func dhcpNetworkOf(name, doc string) (engine.DHCPNetwork, error) {
	var x libvirtxml.Network
	if err := x.Unmarshal(doc); err != nil {
		return engine.DHCPNetwork{}, fmt.Errorf("read network %s: %w", name, err)
	}
	out := engine.DHCPNetwork{Name: name}
	var chosen *libvirtxml.NetworkIP
	for i := range x.IPs {
		ip := &x.IPs[i]
		if ip.Family != "" && ip.Family != "ipv4" {
			continue
		}
		if chosen == nil || (chosen.DHCP == nil && ip.DHCP != nil && len(ip.DHCP.Ranges) > 0) {
			chosen = ip
		}
	}
	if chosen == nil {
		return out, nil
	}
	out.Address, out.Prefix = chosen.Address, int(chosen.Prefix)
	if chosen.Prefix == 0 && chosen.Netmask != "" {
		out.Prefix = prefixOf(chosen.Netmask)
	}
	if chosen.Prefix == 0 && chosen.Netmask == "" {
		out.Prefix = 24 // libvirt's default for a class C address, as "default" has
	}
	if chosen.DHCP != nil {
		if len(chosen.DHCP.Ranges) > 0 {
			out.RangeStart, out.RangeEnd = chosen.DHCP.Ranges[0].Start, chosen.DHCP.Ranges[0].End
		}
		for _, h := range chosen.DHCP.Hosts {
			out.Hosts = append(out.Hosts, engine.DHCPHost{MAC: h.MAC, IP: h.IP, Name: h.Name})
		}
	}
	return out, nil
}

// prefixOf is the prefix length of a dotted netmask; 0 when it is not one.
func prefixOf(mask string) int {
	a, err := netip.ParseAddr(mask)
	if err != nil || !a.Is4() {
		return 0
	}
	b := a.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	n := 0
	for v&0x80000000 != 0 {
		n++
		v <<= 1
	}
	if v != 0 {
		return 0
	}
	return n
}

// hostXML is the <host> element of an entry.
func hostXML(h engine.DHCPHost) (string, error) {
	return (&libvirtxml.NetworkDHCPHost{MAC: h.MAC, IP: h.IP, Name: h.Name}).Marshal()
}

// SetDHCPHost adds the entry, or moves its MAC's entry to its address.
func (b *Backend) SetDHCPHost(ctx context.Context, name string, host engine.DHCPHost, modify bool) error {
	cmd, what := golibvirt.NetworkUpdateCommandAddLast, "add DHCP host entry to network"
	if modify {
		cmd, what = golibvirt.NetworkUpdateCommandModify, "modify DHCP host entry of network"
	}
	if err := b.updateHost(ctx, name, cmd, what, host); err != nil {
		return err
	}
	tflog.SubsystemInfo(ctx, Subsystem, "DHCP host entry set", map[string]any{"network": name, "mac": host.MAC, "ip": host.IP, "modify": modify})
	return nil
}

// DeleteDHCPHost deletes the entry; libvirt matches every attribute given, so the entry is
// passed as it was read.
func (b *Backend) DeleteDHCPHost(ctx context.Context, name string, host engine.DHCPHost) error {
	if err := b.updateHost(ctx, name, golibvirt.NetworkUpdateCommandDelete, "delete DHCP host entry from network", host); err != nil {
		return err
	}
	tflog.SubsystemInfo(ctx, Subsystem, "DHCP host entry deleted", map[string]any{"network": name, "mac": host.MAC, "ip": host.IP})
	return nil
}

// updateHost runs one virNetworkUpdate of the ip-dhcp-host section: on the running network when
// it is active, and on its persistent definition. NetworkUpdateCompat passes the command and the
// section in the order the daemon expects: libvirt's wire protocol had them swapped for years
// (libvirt 9.0 among them), and a daemon that does not announce the fixed order gets them
// swapped back.
func (b *Backend) updateHost(ctx context.Context, name string, cmd golibvirt.NetworkUpdateCommand, what string, host engine.DHCPHost) error {
	doc, err := hostXML(host)
	if err != nil {
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	object := fmt.Sprintf("%s (host mac=%s ip=%s)", name, host.MAC, host.IP)
	return b.do(ctx, what, object, func(c conn) error {
		n, err := c.network(name)
		if err != nil {
			return err
		}
		active, err := c.l.NetworkIsActive(n)
		if err != nil {
			return wrap("read network", name, err)
		}
		flags := golibvirt.NetworkUpdateAffectConfig
		if active == 1 {
			flags |= golibvirt.NetworkUpdateAffectLive
		}
		return wrap(what, object, c.l.NetworkUpdateCompat(n, cmd, golibvirt.NetworkSectionIPDhcpHost, -1, doc, flags))
	})
}
