package engine

import "testing"

// BenchmarkPlanGroup plans a description change of a 1,000-member group, as every plan and apply
// of such a group does several times.
func BenchmarkPlanGroup(b *testing.B) {
	const n = 1000
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i + 1
	}
	obs := observed(base(), StatusRunning, indices...)
	g := group(n)
	g.Template.Description = "changed"
	s := state(g)
	b.ReportAllocs()
	for b.Loop() {
		if p := PlanGroup(s, obs, Env{}); len(p.Steps) != n {
			b.Fatalf("%d steps, want %d", len(p.Steps), n)
		}
	}
}
