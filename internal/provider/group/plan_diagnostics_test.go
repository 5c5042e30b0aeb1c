package group

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// TestAddPlanDiagnostics_unhealed warns of the failed members autohealing leaves as they are,
// picked by the engine's typed Unhealed, not by the words of their planned action.
func TestAddPlanDiagnostics_unhealed(t *testing.T) {
	t.Parallel()
	waits := engine.Planned{Why: "autoheal waits for the initial delay, until 2026-01-01T00:00:00Z (shut off (crashed))", Unhealed: true}
	gaveUp := engine.Planned{Why: "autoheal stopped after 3 consecutive failures (crashed); change the template or the member's config to try again", Unhealed: true}
	cases := map[string]struct {
		final []engine.Member
		want  []diag.Diagnostic
	}{
		"none left": {[]engine.Member{{Name: "db-1"}, {Name: "db-2", Planned: engine.Planned{Why: "autoheal, in words only"}}}, nil},
		"two left": {[]engine.Member{{Name: "db-1", Planned: waits}, {Name: "db-2"}, {Name: "db-3", Planned: gaveUp}},
			[]diag.Diagnostic{diag.NewWarningDiagnostic("Failed members left as they are", "db-1: "+waits.Why+"\ndb-3: "+gaveUp.Why)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			providerdata.AddPlanDiagnostics(&diags, engine.GroupPlan{Final: c.final}, path.Root("most_disruptive_allowed_action"))
			if d := cmp.Diff(diag.Diagnostics(c.want), diags); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
		})
	}
}
