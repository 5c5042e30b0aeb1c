package engine

import (
	"fmt"
	"net/netip"
	"strings"
)

// DHCPHost is a host entry of a network's DHCP.
type DHCPHost struct {
	MAC  string
	IP   string
	Name string
}

// DHCPNetwork is what a libvirt network's IPv4 DHCP offers: its own address and prefix, its
// dynamic range, and its host entries.
type DHCPNetwork struct {
	Name string
	// Address is the network's own IPv4 address (the guests' gateway); "" when it has none.
	Address string
	Prefix  int
	// RangeStart and RangeEnd are the dynamic DHCP range; both "" when the network has no DHCP.
	RangeStart, RangeEnd string
	Hosts                []DHCPHost
}

// HasDHCP reports whether the network serves DHCP on IPv4.
func (n DHCPNetwork) HasDHCP() bool { return n.Address != "" && n.RangeStart != "" && n.RangeEnd != "" }

// Subnet is the network's IPv4 subnet.
func (n DHCPNetwork) Subnet() (netip.Prefix, bool) {
	a, err := netip.ParseAddr(n.Address)
	if err != nil {
		return netip.Prefix{}, false
	}
	p, err := a.Prefix(n.Prefix)
	return p, err == nil
}

// Allowed says in words which addresses a pin may take on the network.
func (n DHCPNetwork) Allowed() string {
	p, _ := n.Subnet()
	return fmt.Sprintf("an address of %s other than its own %s and the subnet's first and last (the network %s's DHCP range is %s-%s)", p, n.Address, n.Name, n.RangeStart, n.RangeEnd)
}

// CheckPin tells why ip cannot be pinned on the network, or "" when it can: it must be an IPv4
// address of the network's subnet, neither the network's own address nor the subnet's first
// or last. It need not lie in the dynamic range: dnsmasq gives a host entry's address anywhere
// in the subnet, and one outside the range is never leased to another guest meanwhile.
func (n DHCPNetwork) CheckPin(ip string) string {
	if !n.HasDHCP() {
		return fmt.Sprintf("network %s has no IPv4 DHCP", n.Name)
	}
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is4() {
		return "not an IPv4 address"
	}
	p, ok := n.Subnet()
	switch {
	case !ok || !p.Contains(a):
		return "outside the network's subnet " + p.String()
	case ip == n.Address:
		return "the network's own address"
	case a == p.Masked().Addr() || a == lastOf(p):
		return "the subnet's network or broadcast address"
	}
	return ""
}

// Holder is the MAC of the host entry at ip, or "".
func (n DHCPNetwork) Holder(ip string) string {
	for _, h := range n.Hosts {
		if h.IP == ip {
			return strings.ToLower(h.MAC)
		}
	}
	return ""
}

// HostOf is mac's host entry.
func (n DHCPNetwork) HostOf(mac string) (DHCPHost, bool) {
	for _, h := range n.Hosts {
		if strings.EqualFold(h.MAC, mac) {
			return h, true
		}
	}
	return DHCPHost{}, false
}

func lastOf(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := uint32(1)<<(32-p.Bits()) - 1
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3]) | host
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}

// HostCommand is what a reservation does to the network's host entries.
type HostCommand int

const (
	// HostKeep leaves the entry as it is: the member holds the address already.
	HostKeep HostCommand = iota
	// HostAdd adds an entry for the member's MAC.
	HostAdd
	// HostModify moves the member's own entry to another address.
	HostModify
)

func (c HostCommand) String() string { return [...]string{"keep", "add", "modify"}[c] }

// HostChange is a reservation's change to the network.
type HostChange struct {
	Command HostCommand
	Host    DHCPHost
}

// PlanReservation decides the host entry that gives r its address on n, with the network's
// current leases (MAC -> addresses): a pin is taken as given (the member's own entry at another
// address is moved; another MAC's entry at it is a conflict); a reservation keeps the member's
// entry whatever its address, else takes the address the member holds now (its lease), else the
// lowest address of the DHCP range that no entry and no lease holds. It is the only place that
// decides which address a reservation takes, and never touches another MAC's entry.
func PlanReservation(n DHCPNetwork, r Reservation, leases map[string][]string) (HostChange, error) {
	mac := strings.ToLower(r.MAC)
	own, has := n.HostOf(mac)
	if r.Address != "" {
		if why := n.CheckPin(r.Address); why != "" {
			return HostChange{}, fmt.Errorf("address %s for %s on network %s: %s", r.Address, InterfaceName(r.NIC), n.Name, why)
		}
		if holder := n.Holder(r.Address); holder != "" && holder != mac {
			return HostChange{}, fmt.Errorf("address %s on network %s is reserved for MAC %s, not this member's %s: remove that host entry or pin another address", r.Address, n.Name, holder, mac)
		}
		switch {
		case has && own.IP == r.Address:
			return HostChange{Command: HostKeep, Host: own}, nil
		case has:
			// libvirt finds the entry to modify by its MAC as written in the network.
			return HostChange{Command: HostModify, Host: DHCPHost{MAC: own.MAC, IP: r.Address}}, nil
		}
		return HostChange{Command: HostAdd, Host: DHCPHost{MAC: mac, IP: r.Address}}, nil
	}
	if has {
		return HostChange{Command: HostKeep, Host: own}, nil
	}
	if !n.HasDHCP() {
		return HostChange{}, fmt.Errorf("network %s has no IPv4 DHCP to reserve an address in", n.Name)
	}
	for _, ip := range leases[mac] {
		if n.CheckPin(ip) == "" && n.Holder(ip) == "" {
			return HostChange{Command: HostAdd, Host: DHCPHost{MAC: mac, IP: ip}}, nil
		}
	}
	taken := map[string]bool{n.Address: true}
	for _, h := range n.Hosts {
		taken[h.IP] = true
	}
	for _, ips := range leases {
		for _, ip := range ips {
			taken[ip] = true
		}
	}
	start, err1 := netip.ParseAddr(n.RangeStart)
	end, err2 := netip.ParseAddr(n.RangeEnd)
	if err1 != nil || err2 != nil {
		return HostChange{}, fmt.Errorf("network %s: DHCP range %s-%s cannot be read", n.Name, n.RangeStart, n.RangeEnd)
	}
	for a := start; a.IsValid() && a.Compare(end) <= 0; a = a.Next() {
		if !taken[a.String()] {
			return HostChange{Command: HostAdd, Host: DHCPHost{MAC: mac, IP: a.String()}}, nil
		}
	}
	return HostChange{}, fmt.Errorf("network %s: no free address left in its DHCP range %s-%s", n.Name, n.RangeStart, n.RangeEnd)
}
