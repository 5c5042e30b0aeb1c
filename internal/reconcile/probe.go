package reconcile

import (
	"context"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// probeSpec is the backend's form of the health check's probe.
func probeSpec(hc engine.HealthCheck) backend.ProbeSpec {
	hc = hc.WithDefaults()
	p := hc.Probe
	return backend.ProbeSpec{Kind: string(p.Kind), Command: p.Command, Port: p.Port, Path: p.Path, ExpectStatus: p.ExpectStatus, Timeout: hc.Timeout}
}

// probeOnce runs the health check's probe once against the member on b, stamped with now();
// err is for a host that could not be asked.
func probeOnce(ctx context.Context, b backend.Backend, name string, hc engine.HealthCheck, now func() time.Time) (engine.ProbeResult, error) {
	res, err := b.Probe(ctx, name, probeSpec(hc))
	if err != nil {
		return engine.ProbeResult{}, err
	}
	return engine.ProbeResult{OK: res.OK, Reason: res.Reason, At: now()}, nil
}
