package group

import (
	"context"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework-timeouts/resource/timeouts"
	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// planGroupModel is a group of two stopped members whose members carry metadata tfbench = meta.
func planGroupModel(meta string) StatefulGroupModel {
	md, _ := types.MapValue(types.StringType, map[string]attr.Value{"tfbench": types.StringValue(meta)})
	return StatefulGroupModel{
		ID:               types.StringUnknown(),
		Name:             types.StringValue("db"),
		BaseInstanceName: types.StringValue("db"),
		Pool:             types.StringValue("virt"),
		TargetSize:       types.Int64Value(2),
		Running:          types.BoolValue(false),
		ShutdownTimeout:  types.StringValue("0s"),
		Template: &TemplateModel{
			DomainType:    types.StringValue("qemu"),
			VCPU:          types.Int64Value(1),
			MemoryMiB:     types.Int64Value(64),
			BootDisk:      &BootDiskModel{SourceImage: types.StringNull(), SizeMiB: types.Int64Value(16)},
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
func groupPlanOf(t *testing.T, m StatefulGroupModel) tfsdk.Plan {
	t.Helper()
	p := tfsdk.Plan{Schema: StatefulGroupSchema(), Raw: tftypes.NewValue(StatefulGroupSchema().Type().TerraformType(context.Background()), nil)}
	if d := p.Set(context.Background(), &m); d.HasError() {
		t.Fatalf("plan: %v", d)
	}
	return p
}

// groupStateOf is the model as a state of the group's schema; nil is no state (a create).
func groupStateOf(t *testing.T, m *StatefulGroupModel) tfsdk.State {
	t.Helper()
	sch := StatefulGroupSchema()
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
func newPlanResource(t *testing.T) (*StatefulGroupResource, *fake.Backend) {
	t.Helper()
	b := fake.New()
	rec := reconcile.New(b)
	rec.Env.Run, rec.Holder = "run-test", "test holder"
	rec.Now = func() time.Time { return planClock }
	return &StatefulGroupResource{Data: &providerdata.ProviderData{Reconciler: rec}}, b
}

// createdGroup creates the group on r's host as an apply of m would, and returns the state
// that apply leaves.
func createdGroup(t *testing.T, r *StatefulGroupResource, m StatefulGroupModel) StatefulGroupModel {
	t.Helper()
	ctx := context.Background()
	m.ID = m.Name
	var d diag.Diagnostics
	lim := providerdata.NewLimit(ctx, m.Timeouts, "create", "group db", &d)
	diags, stored := r.Apply(ctx, lim, &m, &engine.Claim{ID: "owner-1", Create: true}, "", nil, nil, nil)
	if diags.HasError() || !stored || d.HasError() {
		t.Fatalf("create: stored %v, %v %v", stored, diags, d)
	}
	return m
}

// planClock is the time every case's leases are dated by.
var planClock = time.Date(2026, 11, 25, 12, 0, 0, 0, time.UTC)

// diagnosticTexts renders diagnostics as "severity|attribute|summary|detail" for comparison.
func diagnosticTexts(diags diag.Diagnostics) []string {
	var out []string
	for _, d := range diags {
		at := ""
		if a, ok := d.(diag.DiagnosticWithPath); ok {
			at = a.Path().String()
		}
		out = append(out, d.Severity().String()+"|"+at+"|"+d.Summary()+"|"+d.Detail())
	}
	return out
}
