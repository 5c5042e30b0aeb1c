package reconcile

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestApply_healsAnUnhealthyMemberRestartFirstThenReplace runs autohealing of a member whose
// probe fails, on the fake host: the first apply restarts it (same UUID, new domain id) and its
// record counts the repair; the next, once the grace and backoff passed with the probe still
// failing, replaces it (new UUID); a member whose probe passes is never touched.
func TestApply_healsAnUnhealthyMemberRestartFirstThenReplace(t *testing.T) {
	ctx := context.Background()
	r, b, clock, s := probeRig(t, 2)
	s = withCheck(s, 1)
	s.Group.AutoHealing = &engine.AutoHealing{InitialDelay: "60s", Backoff: "60s", MaxConsecutiveFailures: 3}
	b.Probes["db-1"] = passing
	b.Probes["db-2"] = failing("exit status 1: tiny-service: stopped")
	// The members were created an hour ago.
	clock.Advance(time.Hour)
	type member struct {
		UUID  string
		ID    int32
		Heals int
	}
	members := func() map[string]member {
		out := map[string]member{}
		for n, d := range b.Domains {
			out[n] = member{d.UUID, d.ID, d.Spec.Record.Instance.Heals}
		}
		return out
	}
	before := members()

	p, _, err := r.Preview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := p.Final[1].Planned.String(), "RESTART: autoheal (UNHEALTHY: exit status 1: tiny-service: stopped)"; got != want {
		t.Fatalf("planned %q, want %q", got, want)
	}
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	after := members()
	if d := cmp.Diff(before["db-1"], after["db-1"]); d != "" {
		t.Errorf("db-1, healthy, changed (-before +after):\n%s", d)
	}
	if got := after["db-2"]; got.UUID != before["db-2"].UUID || got.ID == before["db-2"].ID || got.Heals != 1 {
		t.Errorf("db-2 after the restart: %+v, before %+v", got, before["db-2"])
	}
	if got := b.Domains["db-2"].Spec.Record.Instance.LastHeal; got != clock.Now().UnixMilli() {
		t.Errorf("db-2's last heal %d, want %d", got, clock.Now().UnixMilli())
	}

	// Inside the grace after the restart: STARTING, nothing to do.
	clock.Advance(30 * time.Second)
	p, _, err = r.Preview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Idle() || p.Final[1].Health != engine.HealthStarting {
		t.Fatalf("inside the grace: idle %t, %s %s", p.Idle(), p.Final[1].Health, p.Final[1].Planned)
	}
	// The restart did not help: a replacement.
	clock.Advance(time.Minute)
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if got := members()["db-2"]; got.UUID == before["db-2"].UUID || got.Heals != 2 {
		t.Errorf("db-2 after the replacement: %+v", got)
	}
	if d := cmp.Diff(before["db-1"], members()["db-1"]); d != "" {
		t.Errorf("db-1, healthy, changed (-before +after):\n%s", d)
	}
}
