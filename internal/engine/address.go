package engine

import (
	"fmt"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
)

// Stable addresses: a member's interface can hold its address in its libvirt network's DHCP, as
// a host entry by the member's MAC address, which is derived from the group and the member's
// name (MACAddress) and so is the same for every definition of the member. The template reserves
// "an address" (NIC.Address = AddressReserved: the one the member holds, or a free one of the
// DHCP range); a per-instance config pins one (InstanceConfig.NetworkIPs). In a DesiredInstance,
// NIC.Address is "" (dynamic), AddressReserved, or the pinned address.

// AddressReserved is the template's network_interface address that reserves each member's
// address in the network's DHCP.
const AddressReserved = "reserved"

// NetworkIP is a per-instance config's pinned address of one interface, named as GCP names
// them: "nic<N>" for the template's N-th network interface.
type NetworkIP struct {
	Interface string
	Address   string
}

// InterfaceName is the name of the template's nic-th network interface.
func InterfaceName(nic int) string { return "nic" + strconv.Itoa(nic) }

// ParseInterfaceName reads "nic<N>", written as InterfaceName writes it.
func ParseInterfaceName(s string) (int, bool) {
	num, ok := strings.CutPrefix(s, "nic")
	if !ok {
		return 0, false
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 0 || strconv.Itoa(n) != num {
		return 0, false
	}
	return n, true
}

// Reservation is one address a member's interface holds in its network's DHCP.
type Reservation struct {
	NIC     int
	Network string
	MAC     string
	// Address is the pinned address; "" reserves the address the member holds now, or a free one.
	Address string
}

// Reserves reports whether the desired interface holds its address: a reservation or a pin.
func (n NIC) Reserves() bool { return n.Address != "" }

// Pinned is the address a desired interface is pinned at, or "".
func (n NIC) Pinned() string {
	if n.Address == AddressReserved {
		return ""
	}
	return n.Address
}

// Reservations are the reservations of desired, a member of group: one per interface that holds
// its address, in interface order.
func Reservations(group string, desired DesiredInstance) []Reservation {
	var out []Reservation
	for i, n := range desired.NICs {
		if n.Reserves() {
			out = append(out, Reservation{NIC: i, Network: n.Network, MAC: MACAddress(group, desired.Name, i), Address: n.Pinned()})
		}
	}
	return out
}

// Releases are the reservations a member of group holds in any of held (its recorded state, the
// target of an interrupted change) and no longer holds in desired: an interface whose address
// became dynamic, whose network changed, or which is gone. The MAC of each is the member's own,
// so nothing but the member's own host entries is ever released. A nil desired releases all.
func Releases(group, name string, desired *DesiredInstance, held ...DesiredInstance) []Reservation {
	var out []Reservation
	for _, h := range held {
		for i, n := range h.NICs {
			if !n.Reserves() {
				continue
			}
			if desired != nil && i < len(desired.NICs) && desired.NICs[i].Reserves() && desired.NICs[i].Network == n.Network {
				continue
			}
			r := Reservation{NIC: i, Network: n.Network, MAC: MACAddress(group, name, i)}
			if !slices.Contains(out, r) {
				out = append(out, r)
			}
		}
	}
	return out
}

// withPins returns nics with the pins of config laid over them: a pin on an interface the
// template lacks or on a user-mode one is refused at plan time, and left out here.
func withPins(nics []NIC, pins map[string]string) []NIC {
	if len(pins) == 0 {
		return nics
	}
	out := slices.Clone(nics)
	for i := range out {
		if ip, ok := pins[InterfaceName(i)]; ok && out[i].Type != "user" && out[i].Network != "" {
			out[i].Address = ip
		}
	}
	return out
}

// sameNICs compares interfaces without their addresses, which have their own change classes.
func sameNICs(a, b []NIC) bool {
	return slices.EqualFunc(a, b, func(x, y NIC) bool { return x.Network == y.Network && x.Type == y.Type })
}

// addressReasons are the reasons of address changes from current to desired, interface by
// interface (an interface added or removed is the "network interfaces" RESTART's).
//
// Classes: a reservation added to a member takes the address it holds now (REFRESH: the guest
// keeps its lease, which the DHCP server renews at the same address); a reservation removed
// releases the host entry (REFRESH: the guest keeps its address until its lease expires); a pin
// removed where the template still reserves keeps the entry as it is (a record write). A new pin differing
// from the address the member holds restarts it (RESTART: the guest asks again at boot and gets
// the pinned address); a pin equal to the address it holds changes nothing on the host (NONE).
// In current, an observation (Drift) writes the address the network really has for the member's
// MAC, or "" when it has none, in place of the recorded AddressReserved or pin.
func addressReasons(current, desired []NIC, add func(Action, string, ...any)) {
	for i := range min(len(current), len(desired)) {
		c, d := current[i].Address, desired[i].Address
		if c == d || current[i].Network != desired[i].Network || current[i].Type != desired[i].Type {
			continue
		}
		nic := InterfaceName(i)
		switch {
		case d == "":
			add(ActionRefresh, "network_interface[%d].address reservation released", i)
		case d == AddressReserved && c == "":
			add(ActionRefresh, "network_interface[%d].address reserved", i)
		case d == AddressReserved:
			// Held already, at whatever address (a pin removed where the template reserves
			// keeps its entry): nothing to do but write the record.
		default:
			// One text whatever the member held, so that the record's view and the observed
			// one give the same reason and the plan does not call a configured pin drift.
			add(ActionRestart, "preserved_state.network_ip %s pinned at %s", nic, d)
		}
	}
}

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

// heldStates are the states in which a member may hold reservations: its record, what the
// networks show of it (Drift), and the target of an interrupted change.
func heldStates(o Observed) []DesiredInstance {
	drifted, _ := Drift(o)
	out := []DesiredInstance{o.Instance.Current, drifted.Current}
	if o.Instance.InFlight != nil {
		out = append(out, *o.Instance.InFlight)
	}
	return out
}

// deletionReleases are the reservations a member deleted for good lets go: every one it may hold.
func deletionReleases(s GroupState, o Observed) []Reservation {
	if o.Unmanaged {
		return nil
	}
	return Releases(s.Group.Name, o.Name, nil, heldStates(o)...)
}

// liveReservations are what a live change of the member reserves and releases: the reservations
// desired has that the member does not hold as observed (or recorded, when the networks were not
// read), and those it holds that desired lets go. A reservation held stays as it is.
func liveReservations(group string, o Observed, desired DesiredInstance) (reserve, release []Reservation) {
	held := heldStates(o)
	view := held[1]
	for _, r := range Reservations(group, desired) {
		if r.NIC < len(view.NICs) && view.NICs[r.NIC].Network == r.Network && satisfied(view.NICs[r.NIC].Address, desired.NICs[r.NIC].Address) && o.Instance.InFlight == nil {
			continue
		}
		reserve = append(reserve, r)
	}
	return reserve, Releases(group, o.Name, &desired, held...)
}

// satisfied reports whether an interface holding current needs no change to hold desired.
func satisfied(current, desired string) bool {
	return current == desired || (desired == AddressReserved && current != "")
}

// HoldsAddresses reports whether the group's template or one of its configs holds addresses:
// then its members' host entries must be read from their networks.
func (s GroupState) HoldsAddresses() bool {
	if holdsAddresses(s.Group.Template.NICs) {
		return true
	}
	for _, c := range s.Configs {
		if len(c.Config.NetworkIPs) > 0 {
			return true
		}
	}
	return false
}

// HoldsAddresses reports whether the member's record says it holds addresses, as built or as
// the target of an interrupted change.
func (mi ManagedInstance) HoldsAddresses() bool {
	return holdsAddresses(mi.Current.NICs) || (mi.InFlight != nil && holdsAddresses(mi.InFlight.NICs))
}

func holdsAddresses(nics []NIC) bool { return slices.ContainsFunc(nics, NIC.Reserves) }

// CheckInterfaceName refuses an interface name that is not "nic<N>".
func CheckInterfaceName(s string) error {
	if _, ok := ParseInterfaceName(s); !ok {
		return fmt.Errorf("not an interface name")
	}
	return nil
}

// CheckIPv4 refuses what is not an IPv4 address in dotted form.
func CheckIPv4(s string) error {
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is4() || a.String() != s {
		return fmt.Errorf("not an IPv4 address in dotted form")
	}
	return nil
}

// PinConflict is a pin that another member of the group pins too.
type PinConflict struct {
	Pin   NetworkIP
	Other string
}

// PinnedElsewhere are the pins of name that the configs of the group's other members pin on the
// same network.
func PinnedElsewhere(s GroupState, name string, pins []NetworkIP) []PinConflict {
	nics := s.Group.Template.NICs
	network := func(iface string) string {
		if i, ok := ParseInterfaceName(iface); ok && i < len(nics) {
			return nics[i].Network
		}
		return ""
	}
	var out []PinConflict
	for _, pin := range pins {
		for _, other := range slices.Sorted(maps.Keys(s.Configs)) {
			if other == name {
				continue
			}
			for _, o := range s.Configs[other].Config.NetworkIPs {
				if o.Address == pin.Address && network(o.Interface) == network(pin.Interface) {
					out = append(out, PinConflict{Pin: pin, Other: other})
				}
			}
		}
	}
	return out
}
