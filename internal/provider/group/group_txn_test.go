package group

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestGroupTransactionCounts is the apply walk of a template metadata change, as terraform runs
// it in one provider process: the group's plan (ModifyPlan), then its apply. The apply reads the
// group record once (when it takes the lease), writes it three times (lease, change, release),
// and runs the plan its plan made rather than planning again. Not parallel: the engine plans are
// counted process-wide.
func TestGroupTransactionCounts(t *testing.T) {
	ctx := context.Background()
	r, b := newPlanResource(t)
	state := createdGroup(t, r, planGroupModel("m1"))
	plan := planGroupModel("m2")
	plan.ID, plan.Instances = state.ID, state.Instances
	type counts struct{ RecordReads, RecordWrites, EnginePlans int64 }
	measure := func(f func()) counts {
		reads, writes, before := b.Calls["read-group"], b.Calls["write-group"], reconcile.ProcessCounts()
		f()
		return counts{int64(b.Calls["read-group"] - reads), int64(b.Calls["write-group"] - writes), reconcile.ProcessCounts().EnginePlans - before.EnginePlans}
	}
	req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, &state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	planned := measure(func() { r.ModifyPlan(ctx, req, &resp) })
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var m StatefulGroupModel
	resp.Diagnostics.Append(resp.Plan.Get(ctx, &m)...)
	var diags diag.Diagnostics
	applied := measure(func() {
		lim := providerdata.NewLimit(ctx, m.Timeouts, "update", "group db", &diags)
		d, stored := r.Apply(ctx, lim, &m, &engine.Claim{ID: "owner-1"}, state.encodeGroupSpec(ctx, &diags), state.Template, nil, nil)
		if diags.Append(d...); !stored || diags.HasError() {
			t.Fatalf("apply: stored %v, %v", stored, diags)
		}
	})
	got := map[string]counts{"plan": planned, "apply": applied}
	want := map[string]counts{
		"plan":  {RecordReads: 1, EnginePlans: 1},
		"apply": {RecordReads: 1, RecordWrites: 3},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("record reads, writes and engine plans (-want +got):\n%s", diff)
	}
}

// TestGroupTransaction_rollbackWritesThePreviousTemplateBack: a change of the template whose
// members never become healthy, under on_failure ROLLBACK, fails with a RollbackError, and the
// transaction writes the record back as rolledBack says (the previous template, the resource's
// configuration as the state keeps it); the members are on the previous template again. (Whether
// the health check and on_failure stay in the record is store v2's: not checked here.)
func TestGroupTransaction_rollbackWritesThePreviousTemplateBack(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, b := newPlanResource(t)
	b.Clock = fake.NewClock(planClock)
	r.Data.Reconciler.Now, r.Data.Reconciler.Sleep = b.Clock.Now, b.Clock.Sleep
	m := planGroupModel("m1")
	m.Running = types.BoolValue(true)
	state := createdGroup(t, r, m)
	var d diag.Diagnostics
	oldResource := state.encodeGroupSpec(ctx, &d)
	b.Probes = map[string]func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error){}
	for _, n := range []string{"db-1", "db-2"} {
		b.Probes[n] = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
			if d, _ := b.DomainNow(n); d.Spec.VCPU == 2 {
				return backend.ProbeResult{Reason: "exit status 1: tiny-service: stopped"}, nil
			}
			return backend.ProbeResult{OK: true}, nil
		}
	}
	hc := &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}}}
	var before engine.Template
	_, stored, err := r.Data.Run(ctx, providerdata.GroupChange{Group: "db", Pool: "virt", Apply: true, Claim: &engine.Claim{ID: "owner-1"},
		Mutate: func(s *engine.GroupState, _ bool) error {
			before = s.Group.Template
			g := s.Group
			g.Template.VCPU = 2
			g.HealthCheck = hc
			g.Policy.OnFailure, g.Policy.ReadyTimeout = engine.OnFailureRollback, time.Minute
			s.SetGroup(g)
			s.Resource = "the new configuration"
			return nil
		},
		RolledBack: func(s *engine.GroupState, _ bool) error {
			s.Group.Template, s.Resource = before, oldResource
			return nil
		},
	})
	var rb *reconcile.RollbackError
	if !stored || !errors.As(err, &rb) || !rb.Completed() {
		t.Fatalf("stored %v, error %v: want a completed rollback", stored, err)
	}
	if !strings.Contains(err.Error(), "db-1 is not ready") || !strings.Contains(err.Error(), "tiny-service: stopped") {
		t.Errorf("error %q does not name db-1 and quote its probe", err)
	}
	s, found, lerr := r.Data.LoadGroup(ctx, "db")
	if lerr != nil || !found {
		t.Fatalf("record: %v (found %v)", lerr, found)
	}
	got := map[string]any{"revision": s.Group.Template.Revision(), "resource": s.Resource,
		"db-1": b.Domains["db-1"].Spec.Record.Instance.TemplateRevision, "db-1 vcpu": b.Domains["db-1"].Spec.VCPU, "db-2": b.Domains["db-2"].Spec.Record.Instance.TemplateRevision}
	want := map[string]any{"revision": before.Revision(), "resource": oldResource,
		"db-1": before.Revision(), "db-1 vcpu": int64(1), "db-2": before.Revision()}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after the rollback (-want +got):\n%s", diff)
	}
}
