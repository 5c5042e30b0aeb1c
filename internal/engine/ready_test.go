package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestReadiness_Judge: ready once HEALTHY (healthy_threshold passes in a row; without a health
// check one look at a running domain) for min_ready, a failure restarting that clock; failed
// once the timeout passed while not HEALTHY, quoting the last failed probe; otherwise probed
// again an interval later, or at the end of min_ready or the timeout when that comes first.
func TestReadiness_Judge(t *testing.T) {
	t.Parallel()
	t0 := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	pass := func(s int) ProbeResult { return ProbeResult{OK: true, At: at(s)} }
	fail := func(s int, why string) ProbeResult { return ProbeResult{Reason: why, At: at(s)} }
	hc := &HealthCheck{Probe: Probe{Kind: ProbeExec}, Interval: 10 * time.Second, HealthyThreshold: 2}
	withCheck := Readiness{HealthCheck: hc, MinReady: 30 * time.Second, Timeout: time.Minute}
	cases := []struct {
		name    string
		r       Readiness
		results []ProbeResult
		now     int
		want    ReadyVerdict
	}{
		{"no health check, running, no min_ready", Readiness{Timeout: time.Minute}, []ProbeResult{pass(0)}, 0,
			ReadyVerdict{Ready: true, HealthySince: at(0)}},
		{"no health check, running, in min_ready: looked at again at its end", Readiness{MinReady: 3 * time.Second, Timeout: time.Minute}, []ProbeResult{pass(0)}, 0,
			ReadyVerdict{HealthySince: at(0), Next: at(3)}},
		{"no health check, still running after min_ready", Readiness{MinReady: 3 * time.Second, Timeout: time.Minute}, []ProbeResult{pass(0), pass(3)}, 3,
			ReadyVerdict{Ready: true, HealthySince: at(0)}},
		{"one pass of two needed", withCheck, []ProbeResult{pass(0)}, 0, ReadyVerdict{Next: at(10)}},
		{"healthy at the second pass, min_ready from then", withCheck, []ProbeResult{fail(0, "x"), pass(10), pass(20)}, 20,
			ReadyVerdict{HealthySince: at(20), Next: at(30)}},
		{"healthy for min_ready", withCheck, []ProbeResult{pass(10), pass(20), pass(30), pass(40), pass(50)}, 50,
			ReadyVerdict{Ready: true, HealthySince: at(20)}},
		{"a failure during min_ready starts it again", withCheck, []ProbeResult{pass(10), pass(20), fail(30, "flap"), pass(40), pass(50)}, 50,
			ReadyVerdict{HealthySince: at(50), Next: at(60)}},
		{"the last probe before the timeout", withCheck, []ProbeResult{fail(0, "a"), fail(10, "b")}, 55, ReadyVerdict{Next: at(60)}},
		{"not healthy by the timeout", withCheck, []ProbeResult{fail(0, "a"), fail(50, "tiny-service: stopped")}, 60,
			ReadyVerdict{Failed: true, Reason: "not HEALTHY within ready_timeout (1m0s): tiny-service: stopped"}},
		{"healthy at the timeout, within min_ready: waited for", withCheck, []ProbeResult{pass(40), pass(50)}, 60,
			ReadyVerdict{HealthySince: at(50), Next: at(70)}},
		{"a failure in min_ready after the timeout fails", withCheck, []ProbeResult{pass(40), pass(50), fail(70, "flap")}, 70,
			ReadyVerdict{Failed: true, Reason: "not HEALTHY within ready_timeout (1m0s): flap"}},
		{"one pass of two at the timeout", withCheck, []ProbeResult{fail(50, "boot"), pass(60)}, 60,
			ReadyVerdict{Failed: true, Reason: "not HEALTHY within ready_timeout (1m0s): 1 of 2 passes in a row needed; the last failed probe said: boot"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, c.r.Judge(t0, c.results, at(c.now))); diff != "" {
				t.Errorf("verdict (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGroup_Readiness fills the defaults: ready_timeout 5m, the health check's own defaults.
func TestGroup_Readiness(t *testing.T) {
	t.Parallel()
	g := Group{HealthCheck: &HealthCheck{Probe: Probe{Kind: ProbeGuestAgent}}}
	r := g.Readiness()
	if r.Timeout != DefaultReadyTimeout || r.HealthCheck.Interval != DefaultProbeInterval || r.HealthCheck.HealthyThreshold != DefaultHealthyThreshold || r.Interval() != DefaultProbeInterval {
		t.Errorf("readiness %+v, health check %+v", r, *r.HealthCheck)
	}
	if g.HealthCheck.Interval != 0 {
		t.Error("the group's own health check was changed")
	}
}
