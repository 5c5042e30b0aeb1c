// This file holds the fake's backend.Host (DomainCaps is in caps.go): its virtualisation, limits
// and UUID, each from a field the test sets.

package fake

import (
	"context"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Limits are a small host's: 16 vCPUs, 4 GiB.
func (b *Backend) Limits(context.Context, string) (backend.Limits, error) {
	return backend.Limits{MaxVCPU: 16, MemoryMiB: 4096}, nil
}

// HostVirt answers Virt: by default no kvm, so an unset domain_type is qemu. It is no call in
// Log or Calls (the capabilities are read once per run, and no test counts them).
func (b *Backend) HostVirt(context.Context) (engine.HostVirt, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.Virt, nil
}

// hostUUID is HostID, "fake" when unset.
func (b *Backend) hostUUID() string {
	if b.HostID == "" {
		return "fake"
	}
	return b.HostID
}

// HostUUID returns the HostID field ("fake" by default).
func (b *Backend) HostUUID(context.Context) (string, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if err := b.call("host-uuid", ""); err != nil {
		return "", err
	}
	return b.hostUUID(), nil
}
