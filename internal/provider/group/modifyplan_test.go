package group

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// The group's ModifyPlan called directly, as terraform-provider-aws tests its plan modifiers: a
// request built from the schema and values, the whole response compared. Each case has its own
// fake host and provider data.

// plannedInstances is the instances a plan of to shows for the group's two members: at to's
// template revision, with the planned action given.
func plannedInstances(t *testing.T, state, to StatefulGroupModel, action string) types.String {
	t.Helper()
	var d diag.Diagnostics
	rows := instanceRows(state.Instances, &d)
	rev := to.engineGroup(context.Background(), &d).Template.Revision()
	for i := range rows {
		a := action
		rows[i].PlannedAction, rows[i].TemplateRevision = &a, rev
	}
	if d.HasError() || len(rows) != 2 {
		t.Fatalf("state instances: %d rows, %v", len(rows), d)
	}
	js, err := json.Marshal(rows)
	if err != nil {
		t.Fatal(err)
	}
	return types.StringValue(string(js))
}

// createdInstances is the instances a create plan of m shows: each member STOPPED (the model's
// running is false) at m's template revision, with CREATE.
func createdInstances(t *testing.T, m StatefulGroupModel, names ...string) types.String {
	t.Helper()
	var d diag.Diagnostics
	rev := m.engineGroup(context.Background(), &d).Template.Revision()
	rows := make([]InstanceRow, len(names))
	for i, n := range names {
		create, healthy := "CREATE", "HEALTHY"
		rows[i] = InstanceRow{Name: n, Index: int64(i + 1), Status: "STOPPED", TemplateRevision: rev, CurrentAction: "NONE",
			PlannedAction: &create, Health: &healthy, Host: "default"}
	}
	js, err := json.Marshal(rows)
	if err != nil || d.HasError() {
		t.Fatal(err, d)
	}
	return types.StringValue(string(js))
}

// TestCreatePlan_isWhatTheApplyLeaves: the members a create plan shows are exactly those the
// apply of that plan leaves in the state (Terraform refuses an apply whose result differs from
// a known planned value), but for their planned action, which the apply has done: the state
// says NONE is left (protocol/leftover.go lets Terraform take that difference alone).
func TestCreatePlan_isWhatTheApplyLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newPlanResource(t)
	m := planGroupModel("m1")
	m.Template.DomainType = types.StringUnknown() // resolved at plan, as the apply resolves it
	req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, m), State: groupStateOf(t, nil), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, m).Raw}}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	r.ModifyPlan(ctx, req, &resp)
	var planned StatefulGroupModel
	if d := resp.Plan.Get(ctx, &planned); d.HasError() || resp.Diagnostics.HasError() {
		t.Fatalf("plan: %v %v", d, resp.Diagnostics)
	}
	if planned.Instances.IsUnknown() || planned.Template.DomainType.IsUnknown() {
		t.Fatalf("the create plan left instances %v, domain_type %v unknown", planned.Instances, planned.Template.DomainType)
	}
	applied := createdGroup(t, r, planned)
	var d diag.Diagnostics
	want := instanceRows(planned.Instances, &d)
	for i := range want {
		none := "NONE"
		want[i].PlannedAction = &none
	}
	if diff := cmp.Diff(want, instanceRows(applied.Instances, &d)); diff != "" || d.HasError() {
		t.Fatalf("instances, planned (-) and applied (+):\n%s%v", diff, d)
	}
}

func TestStatefulGroupModifyPlan(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type setup struct {
		plan    StatefulGroupModel
		want    func(state *StatefulGroupModel) resource.ModifyPlanResponse
		prepare func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel
	}
	cases := map[string]setup{
		"create: each member's name and CREATE": {
			plan: planGroupModel("m1"),
			want: func(*StatefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.Instances = createdInstances(t, p, "db-1", "db-2")
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"create with a value known only at apply: the members after apply": {
			plan: func() StatefulGroupModel {
				p := planGroupModel("m1")
				p.Template.Description = types.StringUnknown()
				return p
			}(),
			want: func(*StatefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.Template.Description = types.StringUnknown()
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"create of a group that is there: refused on its name": {
			plan: planGroupModel("m1"),
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				createdGroup(t, r, planGroupModel("m1"))
				return nil
			},
			want: func(*StatefulGroupModel) resource.ModifyPlanResponse {
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, planGroupModel("m1")), Diagnostics: diag.Diagnostics{
					diagnostics.GroupExists(path.Root("name"), &engine.ExistsError{Group: "db", Why: "its group record is there"}),
				}}
			},
		},
		"update without a change: the state's members, nothing planned": {
			plan: planGroupModel("m1"),
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				return &s
			},
			want: func(state *StatefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.ID, p.Instances = state.ID, state.Instances
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"update of the metadata: every member refreshed in place": {
			plan: planGroupModel("m2"),
			prepare: func(t *testing.T, r *StatefulGroupResource, _ *fake.Backend) *StatefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				return &s
			},
			want: func(state *StatefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m2")
				p.ID, p.Instances = state.ID, plannedInstances(t, *state, p, "REFRESH: metadata tfbench changed")
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		// The record was read, then the listing of the members failed: "known after apply"
		// would contradict the plan made moments before, when the host answered (Terraform's
		// "inconsistent final plan"), so the plan is refused, naming the host and its error.
		"create whose host does not answer the listing of its members: refused": {
			plan: planGroupModel("m1"),
			prepare: func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				// The create's checks list the host first (and answer); the members' listing
				// after them fails.
				lists := 0
				b.Hook = func(op, _ string) error {
					if op == "list" {
						if lists++; lists > 1 {
							return errors.New("connection reset by peer")
						}
					}
					return nil
				}
				return nil
			},
			want: func(*StatefulGroupModel) resource.ModifyPlanResponse {
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, planGroupModel("m1")), Diagnostics: diag.Diagnostics{
					diagnostics.NewGroupHostsDown("db", []string{`host "default" (the provider's uri): list : connection reset by peer`}),
				}}
			},
		},
		"update while another apply holds the group: refused": {
			plan: planGroupModel("m2"),
			prepare: func(t *testing.T, r *StatefulGroupResource, b *fake.Backend) *StatefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				other := reconcile.New(b)
				other.Holder, other.Now = "another apply", func() time.Time { return planClock }
				if _, _, err := other.Hold(ctx, "db", nil); err != nil {
					t.Fatal(err)
				}
				return &s
			},
			want: func(state *StatefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m2")
				p.ID, p.Instances = state.ID, state.Instances
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p), Diagnostics: diag.Diagnostics{
					diagnostics.GroupLeaseHeld(leaseOf("another apply")),
				}}
			},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, b := newPlanResource(t)
			var state *StatefulGroupModel
			if c.prepare != nil {
				state = c.prepare(t, r, b)
			}
			plan := c.plan
			if state != nil {
				// The proposed new state keeps what the prior state computed.
				plan.ID, plan.Instances = state.ID, state.Instances
			}
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			if diff := cmp.Diff(c.want(state), resp, planComparer); diff != "" {
				t.Errorf("ModifyPlan response (-want +got):\n%s", diff)
			}
		})
	}
}

// planComparer compares plans by their values (the schema is the same on both sides), read
// into the model, with the instances list read into its rows so that a difference shows as one.
var planComparer = cmp.Transformer("planValue", func(p tfsdk.Plan) plannedGroupValue {
	var m StatefulGroupModel
	var d diag.Diagnostics
	d.Append(p.Get(context.Background(), &m)...)
	v := plannedGroupValue{Instances: instanceRows(m.Instances, &d), Known: !m.Instances.IsUnknown(), Diagnostics: d}
	m.Instances = types.StringNull()
	v.Model = m
	return v
})

type plannedGroupValue struct {
	Model       StatefulGroupModel
	Instances   []InstanceRow
	Known       bool
	Diagnostics diag.Diagnostics
}

// leaseOf is the lease another apply's holder took at planClock, as its refusal tells it.
func leaseOf(holder string) error {
	return &engine.LeaseError{Group: "db", Lease: engine.Lease{Holder: holder, Since: planClock, Expires: planClock.Add(reconcile.DefaultLeaseTTL)}}
}
