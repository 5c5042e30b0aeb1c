package providerdata

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Plan-time checks of stable addresses against the hosts' networks: a reservation needs a
// network with IPv4 DHCP, a pin an address that network can give and nobody else holds. The
// rules are the engine's (DHCPNetwork.CheckPin, PinConflicts); these read the networks and say
// what is wrong on which attribute.

// CheckReservable refuses address = "reserved" on the nic-th interface when its network on host
// has no IPv4 DHCP. A network that is missing is CheckNetwork's to say.
func CheckReservable(ctx context.Context, diags *diag.Diagnostics, b backend.Networks, host string, p path.Path, nic int, network string) {
	n, err := b.DHCPNetwork(ctx, network)
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return
	case err != nil:
		diags.Append(diagnostics.NetworkUnchecked(p, network, OnHost(host), err))
	case !n.HasDHCP():
		diags.AddAttributeError(p, "Network without DHCP", fmt.Sprintf("network_interface[%d].address = %q, but network %q on %s has no IPv4 DHCP range to reserve addresses in. Allowed: address on an interface whose network has <dhcp><range .../></dhcp> in its <ip> (`virsh net-dumpxml %s`), or leave address unset.", nic, engine.AddressReserved, network, OnHost(host), network))
	}
}

// InterfaceNames lists the interface names of n interfaces, as allowed values.
func InterfaceNames(n int) string {
	if n == 0 {
		return "none (the template has no network_interface)"
	}
	return fmt.Sprintf("nic0 to %s", engine.InterfaceName(n-1))
}

// PinPath is the path of attribute name of pin's network_ip block, in the set at set.
func PinPath(set path.Path, pin engine.NetworkIP, name string) path.Path {
	return SetBlockPath(set, map[string]attr.Value{"interface": types.StringValue(pin.Interface), "address": types.StringValue(pin.Address)}).AtName(name)
}
