package libvirt

import (
	"context"
	"errors"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// Probe runs one health probe against the running domain (see backend.Backend).
func (b *Backend) Probe(ctx context.Context, name string, spec backend.ProbeSpec) (backend.ProbeResult, error) {
	return backend.ProbeResult{}, errors.New("probe: not implemented yet")
}
