package groupproto

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestLeft(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		planned, want engine.Planned
	}{
		"nothing planned": {engine.Planned{}, engine.Planned{}},
		"created":         {engine.Planned{Kind: engine.PlannedCreate}, engine.Planned{}},
		"replaced, then started": {
			engine.Planned{Kind: engine.PlannedReplace, Why: "boot image changed", Then: engine.PlannedStart},
			engine.Planned{},
		},
		"moved":   {engine.Planned{Kind: engine.PlannedMove, Why: "h2 -> default (cold)"}, engine.Planned{}},
		"stopped": {engine.Planned{Kind: engine.PlannedStop, Why: "running = false"}, engine.Planned{}},
		"left unhealed": {
			engine.Planned{Why: "FAILED: within initial_delay", Unhealed: true},
			engine.Planned{Why: "FAILED: within initial_delay", Unhealed: true},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, Left(c.planned)); diff != "" {
				t.Errorf("Left (-want +got):\n%s", diff)
			}
		})
	}
}
