package provider

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// The group's ModifyPlan called directly, as terraform-provider-aws tests its plan modifiers: a
// request built from the schema and values, the whole response compared. Each case has its own
// fake host and provider data.

// planGroupModel is a group of two stopped members whose members carry metadata tfbench = meta.
func planGroupModel(meta string) statefulGroupModel {
	md, _ := types.MapValue(types.StringType, map[string]attr.Value{"tfbench": types.StringValue(meta)})
	return statefulGroupModel{
		ID:               types.StringUnknown(),
		Name:             types.StringValue("db"),
		BaseInstanceName: types.StringValue("db"),
		Pool:             types.StringValue("virt"),
		TargetSize:       types.Int64Value(2),
		Running:          types.BoolValue(false),
		ShutdownTimeout:  types.StringValue("0s"),
		Template: &templateModel{
			DomainType:    types.StringValue("qemu"),
			VCPU:          types.Int64Value(1),
			MemoryMiB:     types.Int64Value(64),
			BootDisk:      &bootDiskModel{SourceImage: types.StringNull(), SizeMiB: types.Int64Value(16)},
			Metadata:      md,
			Labels:        types.MapNull(types.StringType),
			Description:   types.StringNull(),
			ConsoleLogDir: types.StringNull(),
		},
		Abandon:   types.SetNull(types.StringType),
		Instances: types.StringUnknown(),
		Timeouts: timeouts.Value{Object: types.ObjectNull(map[string]attr.Type{
			"create": types.StringType, "update": types.StringType, "delete": types.StringType,
		})},
	}
}

// groupPlanOf is the model as a plan of the group's schema.
func groupPlanOf(t *testing.T, m statefulGroupModel) tfsdk.Plan {
	t.Helper()
	p := tfsdk.Plan{Schema: statefulGroupSchema(), Raw: tftypes.NewValue(statefulGroupSchema().Type().TerraformType(context.Background()), nil)}
	if d := p.Set(context.Background(), &m); d.HasError() {
		t.Fatalf("plan: %v", d)
	}
	return p
}

// groupStateOf is the model as a state of the group's schema; nil is no state (a create).
func groupStateOf(t *testing.T, m *statefulGroupModel) tfsdk.State {
	t.Helper()
	sch := statefulGroupSchema()
	s := tfsdk.State{Schema: sch, Raw: tftypes.NewValue(sch.Type().TerraformType(context.Background()), nil)}
	if m == nil {
		return s
	}
	if d := s.Set(context.Background(), m); d.HasError() {
		t.Fatalf("state: %v", d)
	}
	return s
}

// newPlanResource is the group resource on a fake host of its own.
func newPlanResource(t *testing.T) (*statefulGroupResource, *fake.Backend) {
	t.Helper()
	b := fake.New()
	rec := reconcile.New(b)
	rec.Env.Run, rec.Holder = "run-test", "test holder"
	rec.Now = func() time.Time { return planClock }
	return &statefulGroupResource{data: &ProviderData{Reconciler: rec}}, b
}

// createdGroup creates the group on r's host as an apply of m would, and returns the state
// that apply leaves.
func createdGroup(t *testing.T, r *statefulGroupResource, m statefulGroupModel) statefulGroupModel {
	t.Helper()
	ctx := context.Background()
	m.ID = m.Name
	var d diag.Diagnostics
	lim := newLimit(ctx, m.Timeouts, "create", "group db", &d)
	diags, stored := r.apply(ctx, lim, &m, &engine.Claim{ID: "owner-1", Create: true}, "", nil, nil, nil)
	if diags.HasError() || !stored || d.HasError() {
		t.Fatalf("create: stored %v, %v %v", stored, diags, d)
	}
	return m
}

// plannedInstances is the instances a plan of to shows for the group's two members: at to's
// template revision, with the planned action given.
func plannedInstances(t *testing.T, state, to statefulGroupModel, action string) types.String {
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
func createdInstances(t *testing.T, m statefulGroupModel, names ...string) types.String {
	t.Helper()
	var d diag.Diagnostics
	rev := m.engineGroup(context.Background(), &d).Template.Revision()
	rows := make([]instanceRow, len(names))
	for i, n := range names {
		create, healthy := "CREATE", "HEALTHY"
		rows[i] = instanceRow{Name: n, Index: int64(i + 1), Status: "STOPPED", TemplateRevision: rev, CurrentAction: "NONE",
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
// says NONE is left (instances_leftover.go lets Terraform take that difference alone).
func TestCreatePlan_isWhatTheApplyLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, _ := newPlanResource(t)
	m := planGroupModel("m1")
	m.Template.DomainType = types.StringUnknown() // resolved at plan, as the apply resolves it
	req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, m), State: groupStateOf(t, nil), Config: tfsdk.Config{Schema: statefulGroupSchema(), Raw: groupPlanOf(t, m).Raw}}
	resp := resource.ModifyPlanResponse{Plan: req.Plan}
	r.ModifyPlan(ctx, req, &resp)
	var planned statefulGroupModel
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
		plan    statefulGroupModel
		want    func(state *statefulGroupModel) resource.ModifyPlanResponse
		prepare func(t *testing.T, r *statefulGroupResource, b *fake.Backend) *statefulGroupModel
	}
	cases := map[string]setup{
		"create: each member's name and CREATE": {
			plan: planGroupModel("m1"),
			want: func(*statefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.Instances = createdInstances(t, p, "db-1", "db-2")
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"create with a value known only at apply: the members after apply": {
			plan: func() statefulGroupModel {
				p := planGroupModel("m1")
				p.Template.Description = types.StringUnknown()
				return p
			}(),
			want: func(*statefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.Template.Description = types.StringUnknown()
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"create of a group that is there: refused on its name": {
			plan: planGroupModel("m1"),
			prepare: func(t *testing.T, r *statefulGroupResource, _ *fake.Backend) *statefulGroupModel {
				createdGroup(t, r, planGroupModel("m1"))
				return nil
			},
			want: func(*statefulGroupModel) resource.ModifyPlanResponse {
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, planGroupModel("m1")), Diagnostics: diag.Diagnostics{
					diagnostics.GroupExists(path.Root("name"), &engine.ExistsError{Group: "db", Why: "its group record is there"}),
				}}
			},
		},
		"update without a change: the state's members, nothing planned": {
			plan: planGroupModel("m1"),
			prepare: func(t *testing.T, r *statefulGroupResource, _ *fake.Backend) *statefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				return &s
			},
			want: func(state *statefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m1")
				p.ID, p.Instances = state.ID, state.Instances
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"update of the metadata: every member refreshed in place": {
			plan: planGroupModel("m2"),
			prepare: func(t *testing.T, r *statefulGroupResource, _ *fake.Backend) *statefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				return &s
			},
			want: func(state *statefulGroupModel) resource.ModifyPlanResponse {
				p := planGroupModel("m2")
				p.ID, p.Instances = state.ID, plannedInstances(t, *state, p, "REFRESH: metadata tfbench changed")
				return resource.ModifyPlanResponse{Plan: groupPlanOf(t, p)}
			},
		},
		"update while another apply holds the group: refused": {
			plan: planGroupModel("m2"),
			prepare: func(t *testing.T, r *statefulGroupResource, b *fake.Backend) *statefulGroupModel {
				s := createdGroup(t, r, planGroupModel("m1"))
				other := reconcile.New(b)
				other.Holder, other.Now = "another apply", func() time.Time { return planClock }
				if _, _, err := other.Hold(ctx, "db", nil); err != nil {
					t.Fatal(err)
				}
				return &s
			},
			want: func(state *statefulGroupModel) resource.ModifyPlanResponse {
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
			var state *statefulGroupModel
			if c.prepare != nil {
				state = c.prepare(t, r, b)
			}
			plan := c.plan
			if state != nil {
				// The proposed new state keeps what the prior state computed.
				plan.ID, plan.Instances = state.ID, state.Instances
			}
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, state), Config: tfsdk.Config{Schema: statefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
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
	var m statefulGroupModel
	var d diag.Diagnostics
	d.Append(p.Get(context.Background(), &m)...)
	v := plannedGroupValue{Instances: instanceRows(m.Instances, &d), Known: !m.Instances.IsUnknown(), Diagnostics: d}
	m.Instances = types.StringNull()
	v.Model = m
	return v
})

type plannedGroupValue struct {
	Model       statefulGroupModel
	Instances   []instanceRow
	Known       bool
	Diagnostics diag.Diagnostics
}

// planClock is the time every case's leases are dated by.
var planClock = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// leaseOf is the lease another apply's holder took at planClock, as its refusal tells it.
func leaseOf(holder string) error {
	return &engine.LeaseError{Group: "db", Lease: engine.Lease{Holder: holder, Since: planClock, Expires: planClock.Add(reconcile.DefaultLeaseTTL)}}
}
