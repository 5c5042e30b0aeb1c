package engine

import (
	"slices"
	"testing"
)

// BenchmarkPlanGroup_probed is the no-op plan of 1,000 running members without a health check,
// and with one whose probe passed for each: judging the probes is a small part of the plan.
func BenchmarkPlanGroup_probed(b *testing.B) {
	const n = 1000
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i + 1
	}
	obs := observed(base(), StatusRunning, indices...)
	for i := range obs {
		o := &obs[i]
		o.Attached = slices.Clone(o.Instance.Current.Disks)
		o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
	}
	probedObs := slices.Clone(obs)
	for i := range probedObs {
		probedObs[i].Probe = &ProbeOutcome{Results: []ProbeResult{{OK: true}}}
	}
	g := group(n)
	checked := g
	checked.HealthCheck = &HealthCheck{Probe: Probe{Kind: ProbeGuestAgent}}
	checked.AutoHealing = &AutoHealing{}
	for _, c := range []struct {
		name string
		g    Group
		obs  []Observed
	}{{"no health check", g, obs}, {"health check, all passed", checked, probedObs}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if p := PlanGroup(state(c.g), c.obs, Env{Now: healthNow}); !p.Idle() {
					b.Fatal("not idle")
				}
			}
		})
	}
}
