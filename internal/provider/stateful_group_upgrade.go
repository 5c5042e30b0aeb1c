package provider

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var _ resource.ResourceWithUpgradeState = (*statefulGroupResource)(nil)

// UpgradeState moves state written with schema version 0 to version 1.
func (r *statefulGroupResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{0: {StateUpgrader: upgradeGroupStateV0}}
}

// upgradeGroupStateV0 rewrites version 0 state as JSON: max_unavailable was a number and is now
// a string that also takes percentages; shutdown_timeout did not exist, and members stopped hard,
// so old state gets the new default; instances gain planned_action, NONE until the next plan.
func upgradeGroupStateV0(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	if req.RawState == nil || req.RawState.JSON == nil {
		resp.Diagnostics.AddError("Cannot upgrade the group's state", "The state of schema version 0 has no JSON to read.")
		return
	}
	out, err := upgradeGroupJSONV0(req.RawState.JSON)
	if err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the group's state", fmt.Sprintf("State of schema version 0 cannot be read: %v.", err))
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: out}
}

func upgradeGroupJSONV0(raw []byte) ([]byte, error) {
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	if up, ok := st["update_policy"].(map[string]any); ok {
		switch v := up["max_unavailable"].(type) {
		case float64:
			up["max_unavailable"] = fmt.Sprint(int64(v))
		case nil:
			up["max_unavailable"] = nil
		}
	}
	if _, ok := st["shutdown_timeout"]; !ok {
		st["shutdown_timeout"] = engine.DefaultShutdownTimeoutText
	}
	addPlanned := func(list []any) {
		for _, it := range list {
			if m, ok := it.(map[string]any); ok {
				if _, has := m["planned_action"]; !has {
					m["planned_action"] = "NONE"
				}
			}
		}
	}
	switch v := st["instances"].(type) {
	case []any:
		addPlanned(v)
	case string:
		// As the framework holds it: the list's JSON (instances_proto.go).
		var list []any
		if err := json.Unmarshal([]byte(v), &list); err != nil {
			return nil, fmt.Errorf("instances: %w", err)
		}
		addPlanned(list)
		text, err := json.Marshal(list)
		if err != nil {
			return nil, err
		}
		st["instances"] = string(text)
	}
	return json.Marshal(st)
}
