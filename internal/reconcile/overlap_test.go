package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestExecute_deletionWaitsOverlap takes down running members whose guests ignore ACPI, as a
// destroy and a scale-in do: every shutdown request is issued before the first wait, whatever
// the fan-out's bound, and the waits share one deadline, so that the whole deletion lasts one
// shutdown_timeout on the fake clock (one worker makes the fake clock exact) where it lasted one
// per member.
func TestExecute_deletionWaitsOverlap(t *testing.T) {
	t.Parallel()
	const size = 10
	cases := []struct {
		name    string
		workers int
		destroy bool
		// elapsed is how long the deletion lasts on the fake clock; 0 when not checked (several
		// workers' waits add up on the fake clock).
		elapsed time.Duration
	}{
		{"destroy, one worker", 1, true, engine.DefaultShutdownTimeout},
		{"destroy, four workers", 4, true, 0},
		{"scale-in, one worker", 1, false, engine.DefaultShutdownTimeout},
		{"scale-in, three workers", 3, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			s := spec(size)
			apply(t, b, s)
			for _, d := range b.Domains {
				d.IgnoresACPI = true
			}
			start := time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)
			b.Clock = fake.NewClock(start)
			b.Log = nil
			r := New(b)
			r.Workers, r.Now = c.workers, b.Clock.Now
			var err error
			if c.destroy {
				err = r.Destroy(context.Background(), s)
			} else {
				s.Group.TargetSize = 0
				err = r.Apply(context.Background(), s)
			}
			if err != nil {
				t.Fatal(err)
			}
			var shutdowns, stops []string
			firstWait := -1
			for i, l := range b.Log {
				op, obj, _ := strings.Cut(l, " ")
				switch op {
				case "shutdown":
					shutdowns = append(shutdowns, obj)
					if firstWait >= 0 {
						t.Fatalf("shutdown of %s requested after the first wait (call %d of %v)", obj, i, b.Log)
					}
				case "wait-stopped":
					if firstWait < 0 {
						firstWait = i
					}
				case "stop":
					stops = append(stops, obj)
				}
			}
			var want []string
			for i := range size {
				want = append(want, fmt.Sprintf("db-%d", i+1))
			}
			slices.Sort(shutdowns)
			slices.Sort(stops)
			slices.Sort(want)
			if diff := cmp.Diff(want, shutdowns); diff != "" {
				t.Errorf("shutdown requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(want, stops); diff != "" {
				t.Errorf("power-offs of the guests that ignored ACPI (-want +got):\n%s", diff)
			}
			if len(b.Domains) != 0 {
				t.Errorf("domains left: %v", ids(b))
			}
			if got := b.Clock.Now().Sub(start); c.elapsed > 0 && got != c.elapsed {
				t.Errorf("the deletion lasted %s on the fake clock, want one shutdown_timeout (%s)", got, c.elapsed)
			}
		})
	}
}

// TestExecute_failedShutdownRequestStopsTheDeletion: a shutdown request that fails stops the
// deletion before any member is waited for or undefined, and the error tells the members that
// were asked to shut down from those left as they were.
func TestExecute_failedShutdownRequestStopsTheDeletion(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := spec(3)
	apply(t, b, s)
	b.FailOn["shutdown db-2"] = errors.New("connection lost")
	b.Log = nil
	r := New(b)
	r.Workers = 1
	err := r.Destroy(context.Background(), s)
	var re *RolloutError
	if !errors.As(err, &re) {
		t.Fatalf("want a RolloutError, got %v", err)
	}
	var failed []string
	for _, f := range re.Failed {
		failed = append(failed, f.Op.Name+" at "+f.Step)
	}
	got := map[string][]string{"failed": failed, "done": re.Done, "not started": re.NotStarted}
	want := map[string][]string{
		"failed":      {"db-2 at shut down"},
		"done":        nil,
		"not started": {"db-1 (delete) (asked to shut down)", "db-3 (delete)"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rollout error (-want +got):\n%s", diff)
	}
	for _, l := range b.Log {
		if strings.HasPrefix(l, "wait-stopped") || strings.HasPrefix(l, "undefine") {
			t.Errorf("%q after a failed shutdown request", l)
		}
	}
	if len(b.Domains) != 3 {
		t.Errorf("domains left %v, want all three", ids(b))
	}
}
