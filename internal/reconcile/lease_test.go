package reconcile

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var t0 = time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)

// holder is a reconciler of another apply on the same fake host, with a clock the test moves.
func holder(b *fake.Backend, name string, now *time.Time) *Reconciler {
	r := New(b)
	r.Holder = name
	r.Now = func() time.Time { return *now }
	return r
}

func TestHold_secondApplyFailsBeforeChangingAnything(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	now := t0
	a, other := holder(b, "a", &now), holder(b, "b", &now)
	own := &engine.Claim{ID: "state-a", Create: true}
	_, release, err := a.Hold(ctx, "db", own)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeAs(ctx, "db", "p", own, func(s *engine.GroupState, _ bool) error { *s = spec(2); return nil }); err != nil {
		t.Fatal(err)
	}
	before, _ := b.ReadGroupRecord(ctx, "db")

	var le *engine.LeaseError
	if _, _, err := other.Hold(ctx, "db", nil); !errors.As(err, &le) || le.Lease.Holder != "a" {
		t.Fatalf("second hold: %v, want a LeaseError naming a", err)
	}
	if _, err := other.Change(ctx, "db", "", func(s *engine.GroupState, _ bool) error { s.Group.TargetSize = 5; return nil }); !errors.As(err, &le) {
		t.Fatalf("second change: %v, want a LeaseError", err)
	}
	if after, _ := b.ReadGroupRecord(ctx, "db"); after.Generation != before.Generation {
		t.Fatalf("the refused apply wrote generation %d", after.Generation)
	}

	release(true)
	_, m, err := a.LoadRecord(ctx, "db")
	if err != nil || m.Lease != nil || m.Owner == nil || m.Owner.ID != "state-a" || m.Owner.Creating {
		t.Fatalf("after release: %+v %+v, %v; want no lease, owner state-a, creation finished", m.Lease, m.Owner, err)
	}
	if _, _, err := other.Hold(ctx, "db", nil); err != nil {
		t.Fatalf("hold after release: %v", err)
	}
}

// TestHold_finishesReleases: a release stays unfinished through a hold that does not finish; a
// finished hold of its run finishes it (the change reached the members); the group resource's
// own finished apply (its claim) lets every release go (engine.Released).
func TestHold_finishesReleases(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	own := &engine.Claim{ID: "state-a", Create: true}
	a, _ := policyReleased(t, own, false)
	released := func() *engine.Released {
		s, _, err := a.LoadRecord(ctx, "db")
		if err != nil {
			t.Fatal(err)
		}
		return s.Released
	}
	for _, h := range []struct {
		claim    *engine.Claim
		finished bool
		want     string // "unfinished", "finished" or "gone"
	}{{nil, false, "unfinished"}, {own, false, "unfinished"}, {nil, true, "finished"}, {own, true, "gone"}} {
		_, release, err := a.Hold(ctx, "db", h.claim)
		if err != nil {
			t.Fatal(err)
		}
		release(h.finished)
		got := "gone"
		if r := released(); r != nil && r.Unfinished {
			got = "unfinished"
		} else if r != nil {
			got = "finished"
		}
		if got != h.want {
			t.Fatalf("after a hold with claim %v that finished %v: release %s, want %s", h.claim != nil, h.finished, got, h.want)
		}
	}
}

func TestHold_aKilledHoldersLeaseEndsAtExpiry(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	now := t0
	killed, next := holder(b, "killed", &now), holder(b, "next", &now)
	if _, err := killed.Change(ctx, "db", "p", func(s *engine.GroupState, _ bool) error { *s = spec(1); return nil }); err != nil {
		t.Fatal(err)
	}
	// The holder never releases: it was killed.
	now = t0.Add(DefaultLeaseTTL - time.Second)
	if _, _, err := next.Hold(ctx, "db", nil); err == nil {
		t.Fatal("took the lease before it expired")
	}
	now = t0.Add(DefaultLeaseTTL)
	_, release, err := next.Hold(ctx, "db", nil)
	if err != nil {
		t.Fatalf("hold after expiry: %v", err)
	}
	release(true)
}

func TestHold_aHolderKnownGoneLosesTheLeaseAtOnce(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	now := t0
	killed, next := holder(b, "killed", &now), holder(b, "next", &now)
	killed.HolderPID = 4242
	if _, err := killed.Change(ctx, "db", "p", func(s *engine.GroupState, _ bool) error { *s = spec(1); return nil }); err != nil {
		t.Fatal(err)
	}
	next.HolderGone = func(l engine.Lease) bool { return l.PID == 4242 }
	_, release, err := next.Hold(ctx, "db", nil)
	if err != nil {
		t.Fatalf("hold over a gone holder: %v", err)
	}
	release(true)
}

func TestHold_renewsWhileItWorksAndStopsWorkWhenTheLeaseIsLost(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	clock := t0
	a := New(b)
	a.Holder, a.LeaseTTL = "a", 40*time.Millisecond
	a.Now = func() time.Time { return clock }
	if _, err := a.Change(ctx, "db", "p", func(s *engine.GroupState, _ bool) error { *s = spec(1); return nil }); err != nil {
		t.Fatal(err)
	}
	held, release, err := a.Hold(ctx, "db", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer release(false)
	first, _ := b.ReadGroupRecord(ctx, "db")

	// The renewal writes new generations on its own; wait for one (bounded by the test's
	// deadline, not by a sleep).
	for {
		rec, _ := b.ReadGroupRecord(ctx, "db")
		if rec.Generation > first.Generation {
			break
		}
		select {
		case <-held.Done():
			t.Fatalf("work stopped while the lease was held: %v", context.Cause(held))
		case <-time.After(5 * time.Millisecond):
		}
	}

	// Another apply takes the lease after it expired unrenewed (the holder stalled): the
	// holder's work is stopped at its next renewal, with the reason.
	other := New(b)
	other.Holder = "b"
	other.Now = func() time.Time { return t0.Add(time.Hour) }
	if _, err := other.Change(ctx, "db", "", func(*engine.GroupState, bool) error { return nil }); err != nil {
		t.Fatal(err)
	}
	<-held.Done()
	var le *engine.LeaseError
	if !errors.As(context.Cause(held), &le) || le.Lease.Holder != "b" {
		t.Fatalf("cause %v, want the lease lost to b", context.Cause(held))
	}
}

func TestChangeAs_anotherStateCannotChangeTheGroup(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	now := t0
	a, other := holder(b, "a", &now), holder(b, "b", &now)
	create := &engine.Claim{ID: "state-a", Create: true}
	_, release, err := a.Hold(ctx, "db", create)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.ChangeAs(ctx, "db", "p", create, func(s *engine.GroupState, _ bool) error { *s = spec(1); return nil }); err != nil {
		t.Fatal(err)
	}
	release(true)
	var oe *engine.OwnerError
	if _, err := other.ChangeAs(ctx, "db", "p", &engine.Claim{ID: "state-b"}, func(s *engine.GroupState, _ bool) error { s.Group.TargetSize = 3; return nil }); !errors.As(err, &oe) {
		t.Fatalf("change by another state: %v, want an OwnerError", err)
	}
	var ee *engine.ExistsError
	if _, err := other.ChangeAs(ctx, "db", "p", &engine.Claim{ID: "state-b", Create: true}, func(*engine.GroupState, bool) error { return nil }); !errors.As(err, &ee) {
		t.Fatalf("create by another state: %v, want an ExistsError", err)
	}
	if s, _ := a.Load(ctx, "db"); s.Group.TargetSize != 1 {
		t.Fatalf("target size %d after refused changes", s.Group.TargetSize)
	}
	if _, err := other.ChangeAs(ctx, "db", "p", &engine.Claim{ID: "state-b", TakeoverFrom: "state-a"}, func(*engine.GroupState, bool) error { return nil }); err != nil {
		t.Fatalf("takeover after import: %v", err)
	}
	now = now.Add(DefaultLeaseTTL)
	if _, err := a.ChangeAs(ctx, "db", "p", &engine.Claim{ID: "state-a"}, func(*engine.GroupState, bool) error { return nil }); !errors.As(err, &oe) || oe.Owner.ID != "state-b" {
		t.Fatalf("change by the old owner: %v, want an OwnerError naming state-b", err)
	}
}

// TestHoldToDestroy_marksTheRunsRelease: the destroy's hold marks a finished release of its run
// unfinished in the same write that takes the lease, and a destroy cut off leaves it so.
func TestHoldToDestroy_marksTheRunsRelease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	a, b := policyReleased(t, nil, true)
	before, _ := b.ReadGroupRecord(ctx, "db")
	_, release, _, err := a.HoldToDestroy(ctx, "db", nil)
	if err != nil {
		t.Fatal(err)
	}
	after, _ := b.ReadGroupRecord(ctx, "db")
	s, m, err := a.LoadRecord(ctx, "db")
	if err != nil || m.Lease == nil || s.Released == nil || !s.Released.Unfinished {
		t.Fatalf("under the destroy's hold: lease %+v, release %+v, %v; want the lease and the release unfinished", m.Lease, s.Released, err)
	}
	if after.Generation != before.Generation+1 {
		t.Fatalf("the hold wrote %d generations, want one", after.Generation-before.Generation)
	}
	release(false)
	if s, _, _ := a.LoadRecord(ctx, "db"); s.Released == nil || !s.Released.Unfinished {
		t.Fatalf("after a cut-off destroy the release is %+v, want it unfinished", s.Released)
	}
}

// policyReleased is a group record whose NEVER policy run-1 released and removed (finished or
// not), written by a holder of run-1 under claim.
func policyReleased(t *testing.T, claim *engine.Claim, finished bool) (*Reconciler, *fake.Backend) {
	t.Helper()
	b := fake.New()
	now := t0
	a := holder(b, "a", &now)
	a.Env.Run = "run-1"
	if _, err := a.ChangeAs(context.Background(), "db", "p", claim, func(s *engine.GroupState, _ bool) error {
		*s = withPolicy(spec(2), engine.DeleteNever)
		s.Release("run-1")
		if finished {
			s.FinishRelease("run-1")
		}
		s.Policy = nil
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return a, b
}

// TestHold_refusesAPlanMadeBeforeAnotherRunsChange: an apply's hold names the record generation
// its plan read (Claim.Basis). Writes made since by its own run (a config of the group applied
// before it in the same apply) are its plan's; another run's (another apply, even one that
// changed nothing but its lease) make the plan stale: the hold is refused and gives the lease
// back at once.
func TestHold_refusesAPlanMadeBeforeAnotherRunsChange(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		// between writes the record between the plan and the hold.
		between func(t *testing.T, mine, other *Reconciler)
		stale   bool
	}{
		"nothing written since": {between: func(*testing.T, *Reconciler, *Reconciler) {}},
		"its own run wrote since": {between: func(t *testing.T, mine, _ *Reconciler) {
			_, release, err := mine.Hold(context.Background(), "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			release(true)
		}},
		"another run held the group since": {between: func(t *testing.T, _, other *Reconciler) {
			_, release, err := other.Hold(context.Background(), "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			release(true)
		}, stale: true},
		"another run changed the group since": {between: func(t *testing.T, _, other *Reconciler) {
			held, release, err := other.Hold(context.Background(), "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := other.Change(held, "db", "", func(s *engine.GroupState, _ bool) error { s.Group.TargetSize = 5; return nil }); err != nil {
				t.Fatal(err)
			}
			release(true)
		}, stale: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			b := fake.New()
			now := t0
			mine, other := holder(b, "mine", &now), holder(b, "other", &now)
			mine.Env.Run, other.Env.Run = "run-mine", "run-other"
			if _, err := other.Change(ctx, "db", "p", func(s *engine.GroupState, _ bool) error { *s = spec(2); return nil }); err != nil {
				t.Fatal(err)
			}
			// A record with the lease given back, as a finished apply leaves it.
			_, release, err := other.Hold(ctx, "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			release(true)
			_, plan, err := mine.LoadRecord(ctx, "db")
			if err != nil {
				t.Fatal(err)
			}
			tc.between(t, mine, other)
			_, release, _, err = mine.HoldFrom(ctx, "db", &engine.Claim{Basis: plan.Generation})
			var stale *engine.StalePlanError
			if got := errors.As(err, &stale); got != tc.stale {
				t.Fatalf("hold: %v, stale %v, want %v", err, got, tc.stale)
			}
			if !tc.stale {
				release(true)
			}
			if _, m, err := mine.LoadRecord(ctx, "db"); err != nil || m.Lease != nil {
				t.Fatalf("after the hold: lease %+v, %v; want it given back", m.Lease, err)
			}
		})
	}
}
