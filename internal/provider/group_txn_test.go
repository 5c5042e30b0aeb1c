package provider

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
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
	req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, &state), Config: tfsdk.Config{Schema: statefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	planned := measure(func() { r.ModifyPlan(ctx, req, &resp) })
	if resp.Diagnostics.HasError() {
		t.Fatal(resp.Diagnostics)
	}
	var m statefulGroupModel
	resp.Diagnostics.Append(resp.Plan.Get(ctx, &m)...)
	var diags diag.Diagnostics
	applied := measure(func() {
		lim := newLimit(ctx, m.Timeouts, "update", "group db", &diags)
		d, stored := r.apply(ctx, lim, &m, &engine.Claim{ID: "owner-1"}, state.encodeGroupSpec(ctx, &diags))
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
