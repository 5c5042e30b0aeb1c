package reconcile

import (
	"context"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
)

// BenchmarkPreview_stoppedWithAndWithoutHealthCheck is the no-op plan of 1,000 stopped members on
// the fake host (the observation and the plan a refresh and a plan run), with and without a
// health check: a group with no running member costs no probe, so both cost the same.
func BenchmarkPreview_stoppedWithAndWithoutHealthCheck(b *testing.B) {
	const n = 1000
	fb := fake.New()
	s := spec(n)
	s.Group.Running = false
	r := New(fb)
	if err := r.Apply(context.Background(), s); err != nil {
		b.Fatal(err)
	}
	for _, c := range []struct {
		name  string
		check bool
	}{{"no health check", false}, {"health check", true}} {
		s := s
		if c.check {
			s = withCheck(s, 3)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			before := fb.Calls["probe"]
			for b.Loop() {
				p, _, err := r.Preview(context.Background(), s)
				if err != nil || !p.Idle() {
					b.Fatalf("preview: %v, idle %t", err, p.Idle())
				}
			}
			if got := fb.Calls["probe"] - before; got != 0 {
				b.Fatalf("%d probes", got)
			}
		})
	}
}
