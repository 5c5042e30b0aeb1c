// This file holds the fake's backend.Networks: which networks run, their DHCP leases and host
// entries.

package fake

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultDHCPNetwork is a network as libvirt's "default" is: 192.168.122.1/24, DHCP from .2 to
// .254, no host entries.
func DefaultDHCPNetwork(name string) engine.DHCPNetwork {
	return engine.DHCPNetwork{Name: name, Address: "192.168.122.1", Prefix: 24, RangeStart: "192.168.122.2", RangeEnd: "192.168.122.254"}
}

// network is the named network, made as DefaultDHCPNetwork when first asked for; called under
// the lock.
func (b *Backend) network(name string) (*engine.DHCPNetwork, error) {
	if b.MissingNetworks[name] {
		return nil, fmt.Errorf("network %s: %w", name, backend.ErrNotFound)
	}
	if b.Networks == nil {
		b.Networks = map[string]*engine.DHCPNetwork{}
	}
	n, ok := b.Networks[name]
	if !ok {
		d := DefaultDHCPNetwork(name)
		n = &d
		b.Networks[name] = n
	}
	return n, nil
}

// DHCPNetwork returns a copy of the network's set-up.
func (b *Backend) DHCPNetwork(_ context.Context, name string) (engine.DHCPNetwork, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("dhcp-network", name); err != nil {
		return engine.DHCPNetwork{}, err
	}
	n, err := b.network(name)
	if err != nil {
		return engine.DHCPNetwork{}, err
	}
	out := *n
	out.Hosts = slices.Clone(n.Hosts)
	return out, nil
}

// SetDHCPHost refuses what libvirt refuses: an add whose MAC or address has an entry, a modify
// of a MAC with none.
func (b *Backend) SetDHCPHost(_ context.Context, name string, host engine.DHCPHost, modify bool) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	op := "dhcp-host-add"
	if modify {
		op = "dhcp-host-modify"
	}
	if err := b.call(op, name+" "+host.MAC+" "+host.IP); err != nil {
		return err
	}
	n, err := b.network(name)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(n.Hosts, func(h engine.DHCPHost) bool { return strings.EqualFold(h.MAC, host.MAC) })
	if modify {
		if i < 0 {
			return fmt.Errorf("update network %s: no host entry for MAC %s to modify", name, host.MAC)
		}
		n.Hosts[i] = host
		return nil
	}
	if i >= 0 || slices.ContainsFunc(n.Hosts, func(h engine.DHCPHost) bool { return h.IP == host.IP }) {
		return fmt.Errorf("update network %s: there is an existing dhcp host entry that matches MAC %s or address %s", name, host.MAC, host.IP)
	}
	n.Hosts = append(n.Hosts, host)
	return nil
}

// DeleteDHCPHost deletes the entry that matches host in every attribute, as libvirt does.
func (b *Backend) DeleteDHCPHost(_ context.Context, name string, host engine.DHCPHost) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("dhcp-host-delete", name+" "+host.MAC+" "+host.IP); err != nil {
		return err
	}
	n, err := b.network(name)
	if err != nil {
		return err
	}
	i := slices.Index(n.Hosts, host)
	if i < 0 {
		return fmt.Errorf("update network %s: couldn't locate a matching dhcp host entry", name)
	}
	n.Hosts = slices.Delete(n.Hosts, i, i+1)
	return nil
}

// LookupNetwork finds every network active unless MissingNetworks names it.
func (b *Backend) LookupNetwork(_ context.Context, name string) (bool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-network", name); err != nil {
		return false, err
	}
	if b.MissingNetworks[name] {
		return false, fmt.Errorf("look up network %s: %w", name, backend.ErrNotFound)
	}
	return true, nil
}

// Leases returns DHCPLeases[network].
func (b *Backend) Leases(_ context.Context, network string) (map[string][]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("leases", network); err != nil {
		return nil, err
	}
	if b.MissingNetworks[network] {
		return nil, fmt.Errorf("network %s: %w", network, backend.ErrNotFound)
	}
	return b.DHCPLeases[network], nil
}
