package group

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestTakenOver: an import's plan shows the members as they are, known, each one the plan leaves
// alone saying the apply takes the group over (a member the plan does not have, too), and hands
// its apply the same; a null or unknown list stays as it is.
func TestTakenOver(t *testing.T) {
	t.Parallel()
	refresh := engine.Planned{Kind: engine.PlannedRefresh, Why: "metadata role changed"}
	owned := engine.Planned{Why: engine.TakenOverWhy}
	list := func(planned map[string]engine.Planned, names ...string) types.String {
		var ms []engine.Member
		for _, n := range names {
			ms = append(ms, engine.Member{Name: n, Index: 1, Status: engine.StatusRunning, Host: "default", Planned: planned[n]})
		}
		v, d := instancesValue(ms)
		if d.HasError() {
			t.Fatal(d)
		}
		return v
	}
	tests := map[string]struct {
		in        types.String
		planned   map[string]engine.Planned
		want      types.String
		wantShown map[string]engine.Planned
	}{
		"members left as they are": {
			in:        list(map[string]engine.Planned{"db-2": refresh}, "db-1", "db-2"),
			planned:   map[string]engine.Planned{"db-1": {}, "db-2": refresh},
			want:      list(map[string]engine.Planned{"db-1": owned, "db-2": refresh}, "db-1", "db-2"),
			wantShown: map[string]engine.Planned{"db-1": owned, "db-2": refresh},
		},
		"a member the plan does not have": {
			in:        list(nil, "db-3"),
			planned:   map[string]engine.Planned{},
			want:      list(map[string]engine.Planned{"db-3": owned}, "db-3"),
			wantShown: map[string]engine.Planned{"db-3": owned},
		},
		"no members": {in: list(nil), want: list(nil), wantShown: map[string]engine.Planned{}},
		"null":       {in: types.StringNull(), want: types.StringNull()},
		"unknown":    {in: types.StringUnknown(), want: types.StringUnknown()},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d diag.Diagnostics
			got, shown := takenOver(tt.in, tt.planned, &d)
			if d.HasError() {
				t.Fatal(d)
			}
			if got.IsNull() != tt.want.IsNull() || got.IsUnknown() != tt.want.IsUnknown() {
				t.Fatalf("takenOver = %v, want %v", got, tt.want)
			}
			if diff := cmp.Diff(instanceRows(tt.want, &d), instanceRows(got, &d)); diff != "" {
				t.Fatalf("rows (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.wantShown, shown); diff != "" {
				t.Fatalf("shown (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKnownBut: a create plan shows its members only when everything but the skipped attributes
// is known.
func TestKnownBut(t *testing.T) {
	t.Parallel()
	obj := tftypes.Object{AttributeTypes: map[string]tftypes.Type{
		"id": tftypes.String, "instances": tftypes.String,
		"template": tftypes.Object{AttributeTypes: map[string]tftypes.Type{"description": tftypes.String}},
	}}
	val := func(id, instances, description tftypes.Value) tftypes.Value {
		return tftypes.NewValue(obj, map[string]tftypes.Value{"id": id, "instances": instances,
			"template": tftypes.NewValue(obj.AttributeTypes["template"], map[string]tftypes.Value{"description": description})})
	}
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	known := tftypes.NewValue(tftypes.String, "x")
	tests := map[string]struct {
		v    tftypes.Value
		want bool
	}{
		"all known":                     {val(known, known, known), true},
		"only the skipped ones unknown": {val(unknown, unknown, known), true},
		"a nested value unknown":        {val(unknown, unknown, unknown), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := knownBut(tt.v, "id", "instances"); got != tt.want {
				t.Fatalf("knownBut = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestModifyPlan_takeDownWarning: the plan's warning about members taken down says how they
// stop, as the plan's own tasks do: powered off at once with shutdown_timeout = "0s", an ACPI
// shutdown first otherwise. And members over their most disruptive allowed action are one
// error naming each.
func TestModifyPlan_takeDownWarning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	tests := map[string]struct {
		timeout, allowed string
		warning, error   string
	}{
		"0s":  {timeout: "0s", allowed: "REPLACE", warning: `They are powered off at once (shutdown_timeout = "0s", no ACPI shutdown) 1 at a time`},
		"60s": {timeout: "60s", allowed: "REPLACE", warning: "They are stopped (ACPI shutdown, then power off after shutdown_timeout) 1 at a time"},
		"over the allowed action": {timeout: "0s", allowed: "REFRESH",
			error: "2 instances need more than their most disruptive allowed action:\n  db-1 needs RESTART (vcpu 1 -> 2), but its most disruptive allowed action is REFRESH\n  db-2 needs RESTART (vcpu 1 -> 2), but its most disruptive allowed action is REFRESH\n\nNothing was changed. Allow RESTART, or change less."},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r, _ := newPlanResource(t)
			m := planGroupModel("m1")
			m.Running, m.ShutdownTimeout = types.BoolValue(true), types.StringValue(tt.timeout)
			m.UpdatePolicy = &updatePolicyModel{Type: types.StringValue("PROACTIVE"), MinimalAction: types.StringValue("NONE"),
				MostDisruptiveAllowedAction: types.StringValue(tt.allowed), MaxUnavailable: types.StringValue("1"),
				MinReady: types.StringNull(), ReadyTimeout: types.StringNull(), OnFailure: types.StringNull()}
			state := createdGroup(t, r, m)
			plan := m
			plan.ID, plan.Instances = state.ID, state.Instances
			plan.Template.VCPU = types.Int64Value(2)
			req := resource.ModifyPlanRequest{Plan: groupPlanOf(t, plan), State: groupStateOf(t, &state), Config: tfsdk.Config{Schema: StatefulGroupSchema(), Raw: groupPlanOf(t, plan).Raw}}
			resp := resource.ModifyPlanResponse{Plan: req.Plan}
			r.ModifyPlan(ctx, req, &resp)
			var warnings, errs []string
			for _, d := range resp.Diagnostics {
				if d.Severity() == diag.SeverityError {
					errs = append(errs, d.Detail())
				} else if d.Summary() == "Members will be taken down" {
					warnings = append(warnings, d.Detail())
				}
			}
			if tt.error != "" {
				if len(errs) != 1 || errs[0] != tt.error {
					t.Fatalf("errors %q, want one: %q", errs, tt.error)
				}
				return
			}
			if len(errs) > 0 || len(warnings) != 1 || !strings.Contains(warnings[0], tt.warning) {
				t.Fatalf("errors %q, take-down warnings %q; want one saying %q", errs, warnings, tt.warning)
			}
		})
	}
}
