package reconcile

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestExecute_haltedMembersArePoweredOff: a member paused, suspended or crashed cannot act on an
// ACPI shutdown request, which libvirt refuses. Whether the plan saw it so or it was halted
// between the plan and the request, it is powered off without the wait of shutdown_timeout,
// wherever a member is stopped: a replacement, running = false, a scale-in, a destroy. The
// calls on the member show it; the fake clock, on which a wait for a guest that does not stop
// lasts its whole timeout, does not move.
func TestExecute_haltedMembersArePoweredOff(t *testing.T) {
	t.Parallel()
	replace := func(s engine.GroupState) engine.GroupState {
		s.Group.Template.BootDisk.SourceImage = "/images/b.qcow2"
		return s
	}
	stop := func(s engine.GroupState) engine.GroupState {
		s.Group.Running = false
		return s
	}
	scaleIn := func(s engine.GroupState) engine.GroupState {
		s.Group.TargetSize = 0
		return s
	}
	cases := []struct {
		name   string
		change func(engine.GroupState) engine.GroupState // nil: the group is destroyed
		halted engine.Status
		// late halts the member when its shutdown is requested, after the plan saw it running.
		late bool
		want []string
	}{
		{"replace, paused at the plan", replace, engine.StatusPaused, false, []string{"stop db-1", "undefine db-1"}},
		{"replace, suspended at the plan", replace, engine.StatusSuspended, false, []string{"stop db-1", "undefine db-1"}},
		{"replace, crashed at the plan", replace, engine.StatusFailed, false, []string{"stop db-1", "undefine db-1"}},
		{"replace, paused after the plan", replace, engine.StatusPaused, true, []string{"shutdown db-1", "stop db-1", "wait-stopped db-1", "undefine db-1"}},
		{"running = false, paused at the plan", stop, engine.StatusPaused, false, []string{"stop db-1"}},
		{"running = false, paused after the plan", stop, engine.StatusPaused, true, []string{"shutdown db-1", "stop db-1", "wait-stopped db-1"}},
		{"scale-in, paused at the plan", scaleIn, engine.StatusPaused, false, []string{"stop db-1", "undefine db-1"}},
		{"scale-in, paused after the plan", scaleIn, engine.StatusPaused, true, []string{"shutdown db-1", "stop db-1", "wait-stopped db-1", "undefine db-1"}},
		{"destroy, crashed at the plan", nil, engine.StatusFailed, false, []string{"stop db-1", "undefine db-1"}},
		{"destroy, paused after the plan", nil, engine.StatusPaused, true, []string{"shutdown db-1", "stop db-1", "wait-stopped db-1", "undefine db-1"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			s := spec(1)
			s.Group.ShutdownTimeout = "60s"
			apply(t, b, s)
			d := b.Domains["db-1"]
			if c.late {
				b.Hook = func(op, obj string) error {
					if op == "shutdown" && obj == "db-1" {
						d.Halted = c.halted
					}
					return nil
				}
			} else {
				d.Halted = c.halted
			}
			start := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
			b.Clock = fake.NewClock(start)
			b.Log = nil
			r := New(b)
			r.Workers, r.Now = 1, b.Clock.Now
			var err error
			if c.change == nil {
				err = r.Destroy(context.Background(), recorded(t, b, s))
			} else {
				err = r.Apply(context.Background(), recorded(t, b, c.change(s)))
			}
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, l := range b.Log {
				op, obj, _ := strings.Cut(l, " ")
				if obj == "db-1" && (op == "shutdown" || op == "wait-stopped" || op == "stop" || op == "undefine") {
					got = append(got, l)
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("calls that take db-1 down (-want +got):\n%s", diff)
			}
			if waited := b.Clock.Now().Sub(start); waited != 0 {
				t.Errorf("the stop waited %s on the fake clock for a member that cannot act on a shutdown request", waited)
			}
		})
	}
}
