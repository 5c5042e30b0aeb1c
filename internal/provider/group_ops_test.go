package provider

import (
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func step(name string, a engine.Action, changed bool, power engine.Status, adopt bool, reasons ...string) engine.Step {
	var rs []engine.Reason
	for _, r := range reasons {
		rs = append(rs, engine.Reason{What: r})
	}
	return engine.Step{Name: name, Action: a, Power: power, Adopt: adopt, Plan: engine.InstancePlan{Reasons: rs, Changed: changed}}
}

// TestAddPlanDiagnostics calls the plan report directly: one warning that lists each member the plan
// takes down with its action and reasons (nothing for live changes and power, which show in
// planned_action), and one error per instance the plan may not change, on the bounding attribute.
func TestAddPlanDiagnostics(t *testing.T) {
	bound := path.Root("most_disruptive_allowed_action")
	cases := []struct {
		name     string
		plan     engine.GroupPlan
		warning  string
		errors   []string
		errPaths []path.Path
	}{
		{name: "nothing to do"},
		{
			name: "refresh and replace",
			plan: engine.GroupPlan{Steps: []engine.Step{
				step("db-1", engine.ActionRefresh, true, "", false, "metadata node-id"),
				step("db-2", engine.ActionReplace, true, "", false, "boot image changed"),
			}},
			warning: "db-2: REPLACE: boot image changed",
		},
		{
			name: "power, an adoption and a restart that then stops",
			plan: engine.GroupPlan{Steps: []engine.Step{
				step("db-1", engine.ActionNone, false, engine.StatusStopped, false),
				step("legacy", engine.ActionRefresh, true, "", true, "adopted"),
				step("db-3", engine.ActionRestart, true, engine.StatusStopped, false, "vcpu 1 -> 2"),
			}},
			warning: "db-3: RESTART: vcpu 1 -> 2; then STOP",
		},
		{
			name: "over the allowed action",
			plan: engine.GroupPlan{Blocked: []engine.Blocked{
				{Name: "db-1", Needs: engine.ActionRefresh, Allowed: engine.ActionNone, Reasons: []engine.Reason{{What: "metadata node-id"}}},
				{Name: "db-9", Problem: "a domain named db-9 exists that no provider created"},
			}},
			errors:   []string{"Instance db-1 needs REFRESH (metadata node-id), but its most disruptive allowed action is NONE", "a domain named db-9 exists"},
			errPaths: []path.Path{bound, {}},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var diags diag.Diagnostics
			addPlanDiagnostics(&diags, c.plan, bound)
			warnings := diags.Warnings()
			switch {
			case c.warning == "" && len(warnings) > 0:
				t.Fatalf("unexpected warnings: %v", warnings)
			case c.warning != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0].Detail(), c.warning+"\n\n")):
				t.Fatalf("warnings %v, want one with detail %q", warnings, c.warning)
			}
			errs := diags.Errors()
			if len(errs) != len(c.errors) {
				t.Fatalf("%d errors (%v), want %d", len(errs), errs, len(c.errors))
			}
			for i, e := range errs {
				if !strings.Contains(e.Detail(), c.errors[i]) {
					t.Errorf("error %d: %q does not contain %q", i, e.Detail(), c.errors[i])
				}
				p := path.Empty()
				if wp, ok := e.(diag.DiagnosticWithPath); ok {
					p = wp.Path()
				}
				if !p.Equal(c.errPaths[i]) {
					t.Errorf("error %d on %v, want %v", i, p, c.errPaths[i])
				}
			}
		})
	}
}
