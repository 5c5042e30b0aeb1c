package providerdata

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
// planned_action, and that says "power off" when the members are powered off at once), one
// error for every instance over its most disruptive allowed action, on the bounding attribute,
// and one per instance that cannot be changed at all.
func TestAddPlanDiagnostics(t *testing.T) {
	bound := path.Root("most_disruptive_allowed_action")
	cases := []struct {
		name     string
		plan     engine.GroupPlan
		warning  string
		warnWord string // what the warning says of how members stop
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
			errors:   []string{"a domain named db-9 exists", "Instance db-1 needs REFRESH (metadata node-id), but its most disruptive allowed action is NONE. Nothing was changed. Allow REFRESH"},
			errPaths: []path.Path{{}, bound},
		},
		{
			name: "several over the allowed action: one error naming each",
			plan: engine.GroupPlan{Blocked: []engine.Blocked{
				{Name: "db-1", Needs: engine.ActionRestart, Allowed: engine.ActionRefresh, Reasons: []engine.Reason{{What: "vcpu 1 -> 2"}}},
				{Name: "db-2", Needs: engine.ActionReplace, Allowed: engine.ActionRefresh, Reasons: []engine.Reason{{What: "boot image changed"}}},
			}},
			errors: []string{"2 instances need more than their most disruptive allowed action:\n" +
				"  db-1 needs RESTART (vcpu 1 -> 2), but its most disruptive allowed action is REFRESH\n" +
				"  db-2 needs REPLACE (boot image changed), but its most disruptive allowed action is REFRESH\n\n" +
				"Nothing was changed. Allow REPLACE, or change less."},
			errPaths: []path.Path{bound},
		},
		{
			name:     "a scale-in's pick on a host that does not answer: it waits, nothing is removed",
			plan:     engine.GroupPlan{Held: []engine.HostWait{{Name: "db-2", Host: "h3", Why: "scale-in waits for host h3, which cannot be reached", Picked: "scale-in (HIGHEST_INDEX)"}}},
			warning:  "db-2: scale-in waits for host h3, which cannot be reached; it was picked by scale-in (HIGHEST_INDEX), and no other member is removed in its place",
			warnWord: "Nothing is done in their place",
		},
		{
			name: "a replace that powers off (shutdown_timeout 0s)",
			plan: engine.GroupPlan{
				Steps: []engine.Step{step("db-2", engine.ActionReplace, true, "", false, "boot image changed")},
				Waves: []engine.Wave{{Ops: []engine.Operation{{Kind: engine.OpReplace, Name: "db-2", Tasks: []engine.Task{{Kind: engine.TaskPowerOff}}}}}},
			},
			warning:  "db-2: REPLACE: boot image changed",
			warnWord: `They are powered off at once (shutdown_timeout = "0s", no ACPI shutdown) 1 at a time`,
		},
		{
			name: "a replace that shuts down first",
			plan: engine.GroupPlan{
				Steps: []engine.Step{step("db-2", engine.ActionReplace, true, "", false, "boot image changed")},
				Waves: []engine.Wave{{Ops: []engine.Operation{{Kind: engine.OpReplace, Name: "db-2", Tasks: []engine.Task{{Kind: engine.TaskShutdown}, {Kind: engine.TaskStopWait}}}}}},
			},
			warning:  "db-2: REPLACE: boot image changed",
			warnWord: "They are stopped (ACPI shutdown, then power off after shutdown_timeout) 1 at a time",
		},
		{
			name: "a replace of a paused member: powered off without waiting, and said so",
			plan: func() engine.GroupPlan {
				st := step("db-2", engine.ActionReplace, true, "", false, "boot image changed")
				st.Observed = engine.StatusPaused
				return engine.GroupPlan{
					Steps: []engine.Step{st},
					Waves: []engine.Wave{{Ops: []engine.Operation{{Kind: engine.OpReplace, Name: "db-2", Tasks: []engine.Task{{Kind: engine.TaskPowerOff, Halted: engine.StatusPaused}}}}}},
				}
			}(),
			warning:  "db-2: REPLACE: boot image changed; paused: powered off without waiting",
			warnWord: "They are powered off at once (paused, suspended or crashed, they cannot act on an ACPI shutdown) 1 at a time",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var diags diag.Diagnostics
			AddPlanDiagnostics(&diags, c.plan, bound)
			warnings := diags.Warnings()
			switch {
			case c.warning == "" && len(warnings) > 0:
				t.Fatalf("unexpected warnings: %v", warnings)
			case c.warning != "" && (len(warnings) != 1 || !strings.HasPrefix(warnings[0].Detail(), c.warning+"\n\n")):
				t.Fatalf("warnings %v, want one with detail %q", warnings, c.warning)
			case c.warnWord != "" && !strings.Contains(warnings[0].Detail(), c.warnWord):
				t.Fatalf("warning %q does not say %q", warnings[0].Detail(), c.warnWord)
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
