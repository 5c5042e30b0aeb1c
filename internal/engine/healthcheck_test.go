package engine

import "testing"

func TestHealthCheckJudge(t *testing.T) {
	t.Parallel()
	pass, fail := ProbeResult{OK: true}, func(why string) ProbeResult { return ProbeResult{Reason: why} }
	hc := HealthCheck{HealthyThreshold: 2, UnhealthyThreshold: 3}
	cases := []struct {
		name    string
		results []ProbeResult
		want    Verdict
	}{
		{"nothing yet", nil, Verdict{}},
		{"one pass is not enough", []ProbeResult{pass}, Verdict{}},
		{"two passes in a row", []ProbeResult{fail("a"), pass, pass}, Verdict{Health: HealthHealthy}},
		{"two failures are not enough", []ProbeResult{pass, fail("a"), fail("b")}, Verdict{ConsecutiveFailures: 2, Reason: "b"}},
		{"three failures in a row quote the last", []ProbeResult{fail("a"), fail("b"), fail("c")}, Verdict{Health: HealthUnhealthy, ConsecutiveFailures: 3, Reason: "c"}},
		{"a pass breaks the run", []ProbeResult{fail("a"), fail("b"), pass}, Verdict{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := hc.Judge(c.results); got != c.want {
				t.Errorf("Judge = %+v, want %+v", got, c.want)
			}
		})
	}
	if got := (HealthCheck{}).Judge([]ProbeResult{pass}); got.Health != HealthHealthy {
		t.Errorf("default healthy_threshold 1: one pass is HEALTHY, got %+v", got)
	}
}
