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
