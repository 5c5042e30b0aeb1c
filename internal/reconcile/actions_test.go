package reconcile

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// An action's plan runs on the executor as any plan does, and leaves the group where the group's
// own plan finds nothing to do: recreate gives the member a new UUID and leaves the others'
// domains, restart keeps the UUID, preserve and release write the record only. Progress is told
// for each operation.
func TestRunAction_nextPlanIsEmpty(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s := spec(3)
	s.Policy = &engine.Policy{Disks: []engine.PolicyDisk{{DeviceName: "data"}}}
	cases := []struct {
		action engine.MemberAction
		member string
		// newUUID is true when the member gets a new UUID; newID when a new domain id (a new
		// QEMU process).
		newUUID, newID bool
		preserved      string
		progress       []string
	}{
		{action: engine.MemberRecreate, member: "db-2", newUUID: true, newID: true, progress: []string{"instance 1 of 1 replaced db-2"}},
		{action: engine.MemberRestart, member: "db-2", newID: true, progress: []string{"instance 1 of 1 restarted db-2"}},
		{action: engine.MemberPreserve, member: "db-3", preserved: engine.PreserveNow, progress: []string{"instance 1 of 1 marked db-3"}},
	}
	for _, c := range cases {
		t.Run(c.action.String(), func(t *testing.T) {
			b := fake.New()
			apply(t, b, s)
			r := New(b)
			before := map[string]struct {
				uuid string
				id   int32
			}{}
			for n, d := range b.Domains {
				before[n] = struct {
					uuid string
					id   int32
				}{d.UUID, d.ID}
			}
			ap, _, err := r.PlanAction(ctx, s, c.action, []string{c.member})
			if err != nil {
				t.Fatal(err)
			}
			var told []string
			run := WithProgress(ctx, func(msg string, op engine.Operation) { told = append(told, msg+" "+op.Name) })
			if err := r.RunAction(run, s, c.action, ap.Plan); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.progress, told); diff != "" {
				t.Errorf("progress (-want +got):\n%s", diff)
			}
			for n, d := range b.Domains {
				was := before[n]
				newUUID, newID := d.UUID != was.uuid, d.ID != was.id
				wantUUID, wantID := n == c.member && c.newUUID, n == c.member && c.newID
				if newUUID != wantUUID || newID != wantID {
					t.Errorf("%s: new UUID %v, new domain %v; want %v, %v", n, newUUID, newID, wantUUID, wantID)
				}
			}
			p, o, err := r.Preview(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Waves) != 0 {
				t.Errorf("the plan after the action has waves %+v", p.Waves)
			}
			for _, m := range o.Observed {
				want := ""
				if m.Name == c.member {
					want = c.preserved
				}
				if m.Instance.Preserved != want {
					t.Errorf("%s preserved %q, want %q", m.Name, m.Instance.Preserved, want)
				}
			}
		})
	}
}
