package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// healApply applies s; a repair whose member is still unhealthy may fail its wait for ready
// (rollouts wait for ready members): that failure is the only one allowed, and the repair is
// judged by what it did to the members.
func healApply(t *testing.T, r *Reconciler, s engine.GroupState) {
	t.Helper()
	if err := r.Apply(context.Background(), s); err != nil && !strings.Contains(err.Error(), "db-2 is not ready") {
		t.Fatalf("apply: %v", err)
	}
}

// TestApply_healsAnUnhealthyMemberRestartFirstThenReplace runs autohealing of a member whose
// probe fails, on the fake host: the first apply restarts it (same UUID, new domain id) and its
// record counts the repair; inside the grace after it the member is STARTING and left alone;
// after it, with the probe still failing, it is replaced (new UUID); a member whose probe passes
// is never touched.
func TestApply_healsAnUnhealthyMemberRestartFirstThenReplace(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, b, clock, s := probeRig(t, 2)
	s = withCheck(s, 1)
	s.Group.AutoHealing = &engine.AutoHealing{InitialDelay: "1h", Backoff: "60s", MaxConsecutiveFailures: 3}
	b.Probes["db-1"] = passing
	b.Probes["db-2"] = failing("exit status 1: tiny-service: stopped")
	clock.Advance(2 * time.Hour) // past the members' grace
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
	healApply(t, r, s)
	after := members()
	if d := cmp.Diff(before["db-1"], after["db-1"]); d != "" {
		t.Errorf("db-1, healthy, changed (-before +after):\n%s", d)
	}
	if got := after["db-2"]; got.UUID != before["db-2"].UUID || got.ID == before["db-2"].ID || got.Heals != 1 {
		t.Errorf("db-2 after the restart: %+v, before %+v", got, before["db-2"])
	}
	healed := time.UnixMilli(b.Domains["db-2"].Spec.Record.Instance.LastHeal)
	if healed.Before(probeStart.Add(2*time.Hour)) || healed.After(clock.Now()) {
		t.Errorf("db-2's last heal %s, not during the apply", healed)
	}

	// Inside the grace after the restart: STARTING, nothing to do.
	p, _, err = r.Preview(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	if !p.Idle() || p.Final[1].Health != engine.HealthStarting {
		t.Fatalf("inside the grace: idle %t, %s %s", p.Idle(), p.Final[1].Health, p.Final[1].Planned)
	}
	// The restart did not help: a replacement, once the grace and the backoff passed.
	clock.Advance(healed.Add(time.Hour + time.Minute).Sub(clock.Now()))
	healApply(t, r, s)
	if got := members()["db-2"]; got.UUID == before["db-2"].UUID || got.Heals != 2 {
		t.Errorf("db-2 after the replacement: %+v", got)
	}
	if d := cmp.Diff(before["db-1"], members()["db-1"]); d != "" {
		t.Errorf("db-1, healthy, changed (-before +after):\n%s", d)
	}
}
