package group

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// TestGroupApply_keepsRetainedTheShownPlanSaw is the apply walk of a per-instance config
// destroyed (keeping its state) in the same apply as a vcpu change, on a fake host: the group's
// plan is made with the config, Terraform destroys the config, then the group applies. With the
// members whose configs this process's destroys retained (keep), the apply keeps the config's
// metadata through the change, as the plan showed, and the plan after it is empty; without, it
// drops it with the change (what a plan made after the destroy shows).
func TestGroupApply_keepsRetainedTheShownPlanSaw(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		keep  map[string]bool
		keeps bool
	}{
		"the shown plan saw the config: kept through the change": {map[string]bool{"db-1": true}, true},
		"no plan saw it: dropped with the change":                {nil, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			r, _ := newPlanResource(t)
			rec := r.Data.Reconciler
			state := createdGroup(t, r, planGroupModel("m1"))
			s, err := rec.Change(ctx, "db", "", func(s *engine.GroupState, _ bool) error {
				e := engine.DefaultConfigEntry()
				e.Config.Metadata = map[string]string{"node-id": "7"}
				s.Configs = map[string]engine.ConfigEntry{"db-1": e}
				return nil
			})
			if err == nil {
				err = rec.Apply(ctx, s)
			}
			if err != nil {
				t.Fatalf("config: %v", err)
			}
			// The plan, with the config there.
			plan := planGroupModel("m1")
			plan.Template.VCPU = types.Int64Value(2)
			plan.ID, plan.Instances = state.ID, state.Instances
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, &state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			var m StatefulGroupModel
			resp.Diagnostics.Append(resp.Plan.Get(ctx, &m)...)
			if resp.Diagnostics.HasError() {
				t.Fatal(resp.Diagnostics)
			}
			// The config's destroy, as PerInstanceConfigResource.Delete writes it.
			if _, err := rec.Change(ctx, "db", "", func(s *engine.GroupState, _ bool) error {
				delete(s.Configs, "db-1")
				s.Retain("db-1")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			r.Data.ForgetObserved()
			var diags diag.Diagnostics
			lim := providerdata.NewLimit(ctx, m.Timeouts, "update", "group db", &diags)
			d, stored := r.Apply(ctx, lim, &m, &engine.Claim{ID: "owner-1"}, state.encodeGroupSpec(ctx, &diags), state.Template, tt.keep, nil)
			if diags.Append(d...); !stored || diags.HasError() {
				t.Fatalf("apply: stored %v, %v", stored, diags)
			}
			after, _, err := r.Data.LoadGroup(ctx, "db")
			if err != nil {
				t.Fatal(err)
			}
			o, err := rec.Observe(ctx, after)
			if err != nil {
				t.Fatal(err)
			}
			var mi engine.ManagedInstance
			for _, ob := range o.Observed {
				if ob.Name == "db-1" {
					mi = ob.Instance
				}
			}
			if got := mi.Current.Metadata["node-id"] == "7" && mi.PreservedFromConfig.Metadata["node-id"] == "7"; got != tt.keeps {
				t.Errorf("after the apply db-1 keeps the config's metadata %t (metadata %v, from config %v), want %t", got, mi.Current.Metadata, mi.PreservedFromConfig.Metadata, tt.keeps)
			}
			if mi.Current.VCPU != 2 {
				t.Errorf("after the apply db-1 has vcpu %d, want 2", mi.Current.VCPU)
			}
			if next := rec.PlanFrom(after, o); !next.Idle() {
				t.Errorf("the next plan is not empty: %d steps, %d created, %d deleted", len(next.Steps), len(next.Create), len(next.Delete))
			}
		})
	}
}
