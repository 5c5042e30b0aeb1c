package reconcile

import (
	"context"
	"sync"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultProbeBound is the most one observation spends probing its members, all of them
// together. Every refresh, plan and apply observes its groups, so the bound is what one stuck
// guest, or a group of failing ones, can add to each of them. 30 seconds lets the health check's
// defaults run to their verdict (a member failing fast is probed at 0, 10 and 20 s, and reaches
// unhealthy_threshold 3) and lets a probe that hangs end on its own timeout (5 s by default) with
// time to spare; a sequence the bound cuts short is judged by its last result (engine's
// Group.HealthOf), and a member with no result yet is UNKNOWN.
const DefaultProbeBound = 30 * time.Second

// probeSpec is the backend's form of the health check's probe.
func probeSpec(hc engine.HealthCheck) backend.ProbeSpec {
	hc = hc.WithDefaults()
	p := hc.Probe
	return backend.ProbeSpec{Kind: string(p.Kind), Command: p.Command, Port: p.Port, Path: p.Path, ExpectStatus: p.ExpectStatus, Timeout: hc.Timeout}
}

// probeOnce runs the health check's probe once against the member on b, stamped with now();
// err is for a host that could not be asked.
func probeOnce(ctx context.Context, b backend.GuestAgent, name string, hc engine.HealthCheck, now func() time.Time) (engine.ProbeResult, error) {
	res, err := b.Probe(ctx, name, probeSpec(hc))
	if err != nil {
		return engine.ProbeResult{}, err
	}
	return engine.ProbeResult{OK: res.OK, Reason: res.Reason, At: now()}, nil
}

// after is the timer of the reconciler's clock.
func (r *Reconciler) after(d time.Duration) <-chan time.Time {
	if r.After != nil {
		return r.After(d)
	}
	return time.After(d)
}

func (r *Reconciler) probeBound() time.Duration {
	if r.ProbeBound > 0 {
		return r.ProbeBound
	}
	return DefaultProbeBound
}

// probeMembers fills Observed.Probe of every member the group's health check judges (engine's
// Group.Checks), each probed on its own host, members in parallel under the worker bound, the
// whole under probeBound. A group with no health check, or no running member, costs no probe at
// all. It fails only when ctx ends.
func (r *Reconciler) probeMembers(ctx context.Context, s engine.GroupState, obs []engine.Observed) error {
	if s.Group.HealthCheck == nil {
		return nil
	}
	var members []int
	for i, o := range obs {
		if s.Group.Checks(o) {
			members = append(members, i)
		}
	}
	if len(members) == 0 {
		return nil
	}
	hc := s.Group.HealthCheck.WithDefaults()
	bound := r.probeBound()
	deadline := r.now().Add(bound)
	bctx, cancel := context.WithCancel(ctx)
	defer cancel()
	ended := make(chan struct{})
	defer close(ended)
	go func() {
		select {
		case <-r.after(bound):
			cancel()
		case <-ended:
		}
	}()
	slots := make(chan struct{}, r.workers())
	var wg sync.WaitGroup
	for _, i := range members {
		o := &obs[i]
		// Until its sequence ends, a member is one the bound cut short with no result.
		o.Probe = &engine.ProbeOutcome{Unfinished: true}
		b, err := r.host(o.Host)
		if err != nil {
			o.Probe = &engine.ProbeOutcome{Err: err.Error()}
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			select {
			case slots <- struct{}{}:
			case <-bctx.Done():
				return
			}
			defer func() { <-slots }()
			o.Probe = r.probeSequence(bctx, b, o.Name, hc, deadline)
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return err
	}
	var cut []string
	for _, i := range members {
		if obs[i].Probe.Unfinished {
			cut = append(cut, obs[i].Name)
		}
	}
	if len(cut) > 0 {
		tflog.Warn(ctx, "the observation's probe bound cut health checks short: those members are judged on their last probe, or UNKNOWN without one",
			map[string]any{"group": s.Group.Name, "bound": bound.String(), "members": cut})
	}
	return nil
}

// probeSequence probes one member as HEALTH.md says: once, then again every interval (from the
// start of one probe to the start of the next) until the engine's HealthCheck.ObservationDone. The
// sequence stops, Unfinished, when the next probe could not start before deadline or ctx ends
// (the bound passed); it stops with Err when the host could not be asked.
func (r *Reconciler) probeSequence(ctx context.Context, b backend.GuestAgent, name string, hc engine.HealthCheck, deadline time.Time) *engine.ProbeOutcome {
	out := &engine.ProbeOutcome{}
	for {
		start := r.now()
		res, err := probeOnce(ctx, b, name, hc, r.now)
		switch {
		case err != nil && ctx.Err() != nil:
			out.Unfinished = true
			return out
		case err != nil:
			out.Err = err.Error()
			tflog.Warn(ctx, "the host could not probe the member: it is UNKNOWN", map[string]any{"member": name, "error": out.Err})
			return out
		}
		out.Results = append(out.Results, res)
		tflog.Debug(ctx, "probed", map[string]any{"member": name, "ok": res.OK, "reason": res.Reason, "probe": len(out.Results)})
		if hc.ObservationDone(out.Results) {
			return out
		}
		next := start.Add(hc.Interval)
		if !next.Before(deadline) {
			out.Unfinished = true
			return out
		}
		if err := r.sleep(ctx, next.Sub(r.now())); err != nil {
			out.Unfinished = true
			return out
		}
	}
}
