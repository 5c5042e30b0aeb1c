package provider

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// Plan-time checks of stable addresses against the hosts' networks: a reservation needs a
// network with IPv4 DHCP, a pin an address that network can give and nobody else holds. The
// rules are the engine's (DHCPNetwork.CheckPin, PinConflicts); these read the networks and say
// what is wrong on which attribute.

// checkReservable refuses address = "reserved" on the nic-th interface when its network on host
// has no IPv4 DHCP. A network that is missing is checkNetwork's to say.
func checkReservable(ctx context.Context, diags *diag.Diagnostics, b backend.Networks, host string, p path.Path, nic int, network string) {
	n, err := b.DHCPNetwork(ctx, network)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return
	case err != nil:
		diags.AddAttributeError(p, "Cannot check the network", onHost(host)+": "+err.Error())
	case !n.HasDHCP():
		diags.AddAttributeError(p, "Network without DHCP", fmt.Sprintf("network_interface[%d].address = %q, but network %q on %s has no IPv4 DHCP range to reserve addresses in. Allowed: address on an interface whose network has <dhcp><range .../></dhcp> in its <ip> (`virsh net-dumpxml %s`), or leave address unset.", nic, engine.AddressReserved, network, onHost(host), network))
	}
}

// checkPins refuses the config's pinned addresses that the group's template and the networks on
// the member's hosts cannot give to the instance name of group s.
func (r *perInstanceConfigResource) checkPins(ctx context.Context, diags *diag.Diagnostics, s engine.GroupState, name string, pins []engine.NetworkIP, hosts []string) {
	if len(pins) == 0 {
		return
	}
	p := path.Root("preserved_state").AtName("network_ip")
	nics := s.Group.Template.NICs
	var check []engine.NetworkIP
	for _, pin := range pins {
		i, _ := engine.ParseInterfaceName(pin.Interface)
		switch {
		case i >= len(nics):
			diags.AddAttributeError(pinPath(p, pin, "interface"), "No such interface", fmt.Sprintf("network_ip interface = %q, but the group's template has %d network_interface blocks. Allowed: %s.", pin.Interface, len(nics), interfaceNames(len(nics))))
		case nics[i].Type == "user" || nics[i].Network == "":
			diags.AddAttributeError(pinPath(p, pin, "interface"), "Address on a user-mode interface", fmt.Sprintf("network_ip interface = %q is the template's type = \"user\" interface, which has no libvirt network whose DHCP could pin %s. Allowed: an interface with type = \"network\".", pin.Interface, pin.Address))
		default:
			check = append(check, pin)
		}
	}
	for _, c := range engine.PinnedElsewhere(s, name, check) {
		diags.AddAttributeError(pinPath(p, c.Pin, "address"), "Address pinned twice", fmt.Sprintf("network_ip %s address = %q is pinned already for instance %q of group %q on the same network. Allowed: an address no other instance pins.", c.Pin.Interface, c.Pin.Address, c.Other, s.Group.Name))
	}
	for _, h := range hosts {
		b, err := r.data.host(h)
		if err != nil {
			continue
		}
		ctx, cancel := reconcile.HostContext(ctx) // one reading of the host
		defer cancel()                            //nolint:gocritic // one bound per host, a few hosts, all ended when the check returns
		read := map[string]engine.DHCPNetwork{}
		for _, pin := range check {
			i, _ := engine.ParseInterfaceName(pin.Interface)
			network := nics[i].Network
			n, ok := read[network]
			if !ok {
				if n, err = b.DHCPNetwork(ctx, network); err != nil {
					diags.AddAttributeError(p, "Cannot check the network", fmt.Sprintf("network %q on %s: %s", network, onHost(h), err))
					continue
				}
				read[network] = n
			}
			mac := engine.MACAddress(s.Group.Name, name, i)
			if why := n.CheckPin(pin.Address); why != "" {
				diags.AddAttributeError(pinPath(p, pin, "address"), "Address outside the network", fmt.Sprintf("network_ip %s address = %q: %s on %s. Allowed: %s.", pin.Interface, pin.Address, why, onHost(h), n.Allowed()))
			} else if holder := n.Holder(pin.Address); holder != "" && holder != mac {
				diags.AddAttributeError(pinPath(p, pin, "address"), "Address taken", fmt.Sprintf("network_ip %s address = %q is reserved in network %q on %s for MAC %s, not this instance's %s. Allowed: an address no host entry holds (`virsh net-dumpxml %s` lists them), or remove that entry.", pin.Interface, pin.Address, network, onHost(h), holder, mac, network))
			}
		}
	}
}

// checkPlannedPins checks the config's pinned addresses for instance name of g, a group this
// plan creates (so, not on the host yet), as checkPins does once it exists: against its planned
// template, the other configs planned for it so far, and the networks of every host of the group
// (where the member will be is not known before the group's apply places it).
func (r *perInstanceConfigResource) checkPlannedPins(ctx context.Context, diags *diag.Diagnostics, g plannedGroup, name string, plan perInstanceConfigModel) {
	if g.group == nil || g.pins == nil {
		return // a template not known at plan: the apply checks each pin as it reserves it (engine.PlanReservation)
	}
	entry, d := plan.entry(ctx)
	if diags.Append(d...); d.HasError() {
		return
	}
	pins := entry.Config.NetworkIPs
	s := engine.GroupState{Group: *g.group, Configs: g.pins.others(name, pins)}
	var hosts []string
	for _, h := range g.group.HostList() {
		hosts = append(hosts, engine.HostOf(h))
	}
	r.checkPins(ctx, diags, s, name, pins, hosts)
}

// interfaceNames lists the interface names of n interfaces, as allowed values.
func interfaceNames(n int) string {
	if n == 0 {
		return "none (the template has no network_interface)"
	}
	return fmt.Sprintf("nic0 to %s", engine.InterfaceName(n-1))
}

// pinPath is the path of attribute name of pin's network_ip block, in the set at set.
func pinPath(set path.Path, pin engine.NetworkIP, name string) path.Path {
	return setBlockPath(set, map[string]attr.Value{"interface": types.StringValue(pin.Interface), "address": types.StringValue(pin.Address)}).AtName(name)
}
