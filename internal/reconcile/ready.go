package reconcile

import (
	"context"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// NotReadyError is a member that an operation started and that was not ready by its
// ready_timeout; Reason quotes its last probe.
type NotReadyError struct {
	Member string
	Reason string
}

func (e *NotReadyError) Error() string { return e.Member + " is not ready: " + e.Reason }

// waitReady probes the member just started every interval, on the reconciler's clock, until the
// engine's Readiness judges it ready or failed. A probe the host could not answer counts as a
// failed one: the wait goes on until the timeout, and says why.
func (x *opRun) waitReady(ctx context.Context, ready engine.Readiness) error {
	name := x.op.Name
	started := x.startedAt
	if started.IsZero() {
		started = x.r.now()
	}
	fields := map[string]any{"group": x.s.Group.Name, "instance": name, "min_ready": ready.MinReady.String(), "ready_timeout": ready.Timeout.String(), "probe": "domain running"}
	if ready.HealthCheck != nil {
		fields["probe"] = string(ready.HealthCheck.Probe.Kind)
	}
	tflog.Info(ctx, "waiting for "+name+" to be ready", fields)
	var results []engine.ProbeResult
	for {
		res, err := x.readyProbe(ctx, ready)
		if err != nil {
			if ctx.Err() != nil {
				return x.do("wait ready", ctx.Err())
			}
			res = engine.ProbeResult{Reason: "the host could not be asked: " + err.Error(), At: x.r.now()}
		}
		results = append(results, res)
		now := x.r.now()
		v := ready.Judge(started, results, now)
		switch {
		case v.Ready:
			tflog.Info(ctx, fmt.Sprintf("%s ready (healthy for %s)", name, now.Sub(v.HealthySince).Round(time.Millisecond)), map[string]any{"group": x.s.Group.Name, "instance": name, "probes": len(results)})
			return nil
		case v.Failed:
			tflog.Warn(ctx, name+" not ready", map[string]any{"group": x.s.Group.Name, "instance": name, "reason": v.Reason})
			return x.do("wait ready", &NotReadyError{Member: name, Reason: v.Reason})
		}
		if !res.OK {
			tflog.Debug(ctx, "probe failed; waiting", map[string]any{"group": x.s.Group.Name, "instance": name, "reason": res.Reason, "next": v.Next.Sub(now).String()})
		}
		if err := x.r.sleep(ctx, v.Next.Sub(now)); err != nil {
			return x.do("wait ready", err)
		}
	}
}

// readyProbe is one probe of a member waited for: its health check's, or without one whether its
// domain runs.
func (x *opRun) readyProbe(ctx context.Context, ready engine.Readiness) (engine.ProbeResult, error) {
	if x.probes != nil {
		select {
		case x.probes <- struct{}{}:
			defer func() { <-x.probes }()
		case <-ctx.Done():
			return engine.ProbeResult{}, ctx.Err()
		}
	}
	if ready.HealthCheck != nil {
		return probeOnce(ctx, x.guest(), x.op.Name, *ready.HealthCheck, x.r.now)
	}
	doms, err := x.domains().ListDomains(ctx, x.op.Name, x.op.Name)
	if err != nil {
		return engine.ProbeResult{}, err
	}
	for _, d := range doms {
		if d.Name != x.op.Name {
			continue
		}
		if d.ID >= 0 && d.Status == engine.StatusRunning {
			return engine.ProbeResult{OK: true, At: x.r.now()}, nil
		}
		why := fmt.Sprintf("the domain is %s", d.Status)
		if d.Reason != engine.StateReasonNone {
			why += " (" + d.Reason.String() + ")"
		}
		return engine.ProbeResult{Reason: why, At: x.r.now()}, nil
	}
	return engine.ProbeResult{Reason: "the domain is gone", At: x.r.now()}, nil
}
