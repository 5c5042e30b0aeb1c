package fake

import (
	"context"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// What the fake host answers about itself (its pools, networks and limits) and about its guests
// (addresses, leases, probes): each from a map the test sets.

// LookupPool finds a pool AddPool or CreatePool defined as it is, and every other pool active,
// with its directory at /fake/<pool>, unless MissingPools names it.
func (b *Backend) LookupPool(_ context.Context, name string) (backend.Pool, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("lookup-pool", name); err != nil {
		return backend.Pool{}, err
	}
	if p, ok := b.pools[name]; ok {
		return p.info(name), nil
	}
	if b.MissingPools[name] {
		return backend.Pool{}, fmt.Errorf("look up storage pool %s: %w", name, backend.ErrNotFound)
	}
	return backend.Pool{Name: name, Path: "/fake/" + name, Active: true}, nil
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

// Limits are a small host's: 16 vCPUs, 4 GiB.
func (b *Backend) Limits(context.Context, string) (backend.Limits, error) {
	return backend.Limits{MaxVCPU: 16, MemoryMiB: 4096}, nil
}

// GuestAddresses returns AgentAddresses[name]; a domain not in it has no agent to ask.
func (b *Backend) GuestAddresses(_ context.Context, name string) ([]string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("guest-addresses", name); err != nil {
		return nil, err
	}
	ips, ok := b.AgentAddresses[name]
	if !ok {
		return nil, fmt.Errorf("guest-addresses %s: the guest agent is not connected", name)
	}
	return ips, nil
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

// Probe answers from Probes[name] (a function the test sets, called under no lock), else
// fails as a guest with no agent would.
func (b *Backend) Probe(ctx context.Context, name string, spec backend.ProbeSpec) (backend.ProbeResult, error) {
	b.mu.Lock()
	err := b.call("probe", name)
	f := b.Probes[name]
	b.mu.Unlock()
	if err != nil {
		return backend.ProbeResult{}, err
	}
	if f == nil {
		return backend.ProbeResult{Reason: "guest agent is not connected"}, nil
	}
	return f(ctx, spec)
}
