package engine

import (
	"fmt"
	"time"
)

// A member that a create, restart or replace started is waited for until it is ready before its
// operation ends (TaskWaitReady), so that the next wave starts only when this one's members serve.
// Readiness says what ready is and Judge says, from the probe results so far, whether the member
// is ready, failed, or when to look again: the executor only probes, sleeps and asks.

// readyCheckInterval is how often a member without a health check is looked at while it is
// waited for: its "probe" is whether its domain runs, which only a crash changes.
const readyCheckInterval = 5 * time.Second

// Readiness is what a TaskWaitReady waits for.
type Readiness struct {
	// HealthCheck judges the member by its probe; nil: the member is ready when its domain runs.
	HealthCheck *HealthCheck
	// MinReady is how long the member must stay ready, probed on through it, before it counts.
	MinReady time.Duration
	// Timeout is how long after its start the member may take to be ready: once it has passed,
	// a member that is not HEALTHY (or a probe that fails during min_ready) fails the operation.
	Timeout time.Duration
}

// Readiness is what the group's started members are waited for.
func (g Group) Readiness() Readiness {
	r := Readiness{HealthCheck: g.HealthCheck, MinReady: max(g.Policy.MinReady, 0), Timeout: g.Policy.ReadyTimeout}
	if r.Timeout <= 0 {
		r.Timeout = DefaultReadyTimeout
	}
	if r.HealthCheck != nil {
		hc := r.HealthCheck.WithDefaults()
		r.HealthCheck = &hc
	}
	return r
}

// Waits reports whether there is anything to wait for once a member is started: a health check
// to pass, or a min_ready to last. Without either, ready is "the domain runs", which the start
// that just succeeded established: a look at the domain would cost a large group a call per
// member and tell nothing more.
func (r Readiness) Waits() bool { return r.HealthCheck != nil || r.MinReady > 0 }

// Interval is how long the executor waits between two probes while neither ready nor failed.
func (r Readiness) Interval() time.Duration {
	if r.HealthCheck != nil {
		return r.HealthCheck.WithDefaults().Interval
	}
	return readyCheckInterval
}

// ReadyVerdict is what the probes of a member waited for say.
type ReadyVerdict struct {
	// Ready: HEALTHY, and for MinReady since.
	Ready bool
	// Failed: not ready by the timeout; Reason says why, quoting the last failed probe.
	Failed bool
	Reason string
	// HealthySince is when the member became HEALTHY in the run of passes it is in; zero when it
	// is not HEALTHY.
	HealthySince time.Time
	// Next is when to probe again, while neither ready nor failed.
	Next time.Time
}

// Judge reads the probe results of a member started at started, oldest first, at now. A member
// is HEALTHY after the health check's healthy_threshold passes in a row (without a health check,
// after one: its domain runs), and ready once it stayed HEALTHY for MinReady; a failed probe
// starts the min_ready clock again. Past the timeout, a member that is not HEALTHY fails.
func (r Readiness) Judge(started time.Time, results []ProbeResult, now time.Time) ReadyVerdict {
	threshold := 1
	if r.HealthCheck != nil {
		threshold = r.HealthCheck.WithDefaults().HealthyThreshold
	}
	passes := 0
	for i := len(results) - 1; i >= 0 && results[i].OK; i-- {
		passes++
	}
	deadline := started.Add(r.Timeout)
	var v ReadyVerdict
	if passes >= threshold {
		v.HealthySince = results[len(results)-passes+threshold-1].At
		if !now.Before(v.HealthySince.Add(r.MinReady)) {
			v.Ready = true
			return v
		}
		// Probed on through min_ready, and once more at its end.
		v.Next = minTime(now.Add(r.Interval()), v.HealthySince.Add(r.MinReady))
		return v
	}
	if !now.Before(deadline) {
		v.Failed = true
		v.Reason = notReadyReason(r, results, passes, threshold)
		return v
	}
	v.Next = minTime(now.Add(r.Interval()), deadline)
	return v
}

// notReadyReason says why a member is not ready at its timeout, quoting its last failed probe.
func notReadyReason(r Readiness, results []ProbeResult, passes, threshold int) string {
	last := ""
	for i := len(results) - 1; i >= 0; i-- {
		if !results[i].OK {
			last = results[i].Reason
			break
		}
	}
	switch {
	case len(results) == 0:
		return fmt.Sprintf("not probed within ready_timeout (%s)", r.Timeout)
	case passes > 0:
		return fmt.Sprintf("not HEALTHY within ready_timeout (%s): %d of %d passes in a row needed; the last failed probe said: %s", r.Timeout, passes, threshold, last)
	default:
		return fmt.Sprintf("not HEALTHY within ready_timeout (%s): %s", r.Timeout, last)
	}
}

func minTime(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}
