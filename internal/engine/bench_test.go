package engine

import (
	"slices"
	"testing"
)

// BenchmarkPlanGroup plans a 1,000-member group, as every plan and apply of such a group does
// several times: a description change, and then the plans after it, which read every member's
// record left from before the change as updated (Described).
func BenchmarkPlanGroup(b *testing.B) {
	const n = 1000
	indices := make([]int, n)
	for i := range indices {
		indices[i] = i + 1
	}
	obs := observed(base(), StatusRunning, indices...)
	for i := range obs {
		// As the listing reads them: what is attached, the sizes and the description.
		o := &obs[i]
		o.Attached = slices.Clone(o.Instance.Current.Disks)
		o.VCPU, o.MemoryMiB = o.Instance.Current.VCPU, o.Instance.Current.MemoryMiB
		o.Description = new(string)
	}
	g := group(n)
	g.Template.Description = "changed"
	s := state(g)
	b.Run("description change", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			p := PlanGroup(s, obs, Env{})
			if len(p.Waves) != 1 || len(p.Waves[0].Ops) != n || !p.Waves[0].Ops[0].Description || p.Waves[0].Ops[0].Record {
				b.Fatalf("%d waves, want one of %d description writes", len(p.Waves), n)
			}
		}
	})
	described := slices.Clone(obs)
	for i := range described {
		described[i].Description = &g.Template.Description
	}
	b.Run("after it", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if p := PlanGroup(s, described, Env{}); len(p.Waves) != 0 {
				b.Fatalf("%d waves, want none", len(p.Waves))
			}
		}
	})
}
