// This file holds the fake's backend.GuestAgent: the guests' addresses and health probes, each
// from a map the test sets.

package fake

import (
	"context"
	"fmt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

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
