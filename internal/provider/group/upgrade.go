package group

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

var _ resource.ResourceWithUpgradeState = (*StatefulGroupResource)(nil)

// UpgradeState moves state written with schema versions 0 to 3 to version 4. Each upgrader
// gives the current version: version 0's goes through version 1's, 2's and 3's rewrites too.
func (r *StatefulGroupResource) UpgradeState(context.Context) map[int64]resource.StateUpgrader {
	return map[int64]resource.StateUpgrader{
		0: {StateUpgrader: upgradeGroupStateV0},
		1: {StateUpgrader: upgradeGroupStateV1},
		2: {StateUpgrader: upgradeGroupStateV2},
		3: {StateUpgrader: upgradeGroupStateV3},
	}
}

// upgradeGroupStateV3 rewrites version 3 state as JSON: distribution_policy gained drain,
// rebalance and live, which get the defaults (no host, false, true) that the configuration which
// wrote the state plans for them now; left null, every group with a distribution_policy would
// plan a change to them after the provider's upgrade. A group without the block has none.
func upgradeGroupStateV3(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	upgradeGroupStateJSON(req, resp, 3, upgradeGroupJSONV3)
}

func upgradeGroupJSONV3(raw []byte) ([]byte, error) {
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	if dp, ok := st["distribution_policy"].(map[string]any); ok {
		for name, def := range map[string]any{"drain": []any{}, "rebalance": false, "live": true} {
			if dp[name] == nil {
				dp[name] = def
			}
		}
	}
	return json.Marshal(st)
}

// upgradeGroupStateV2 rewrites version 2 state as JSON: adopt_existing and abandon are new, and
// get the defaults (false, no names) that the configuration which wrote the state plans for
// them now; left null, every group would plan a change to them after the provider's upgrade.
func upgradeGroupStateV2(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	upgradeGroupStateJSON(req, resp, 2, chain(upgradeGroupJSONV2, upgradeGroupJSONV3))
}

func upgradeGroupJSONV2(raw []byte) ([]byte, error) {
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	if st["adopt_existing"] == nil {
		st["adopt_existing"] = false
	}
	if st["abandon"] == nil {
		st["abandon"] = []any{}
	}
	return json.Marshal(st)
}

// chain applies rewrites in order.
func chain(rewrites ...func([]byte) ([]byte, error)) func([]byte) ([]byte, error) {
	return func(raw []byte) ([]byte, error) {
		var err error
		for _, rewrite := range rewrites {
			if raw, err = rewrite(raw); err != nil {
				return nil, err
			}
		}
		return raw, nil
	}
}

// upgradeGroupStateV1 rewrites version 1 state as JSON: update_policy gained min_ready,
// ready_timeout and on_failure, which get their defaults, as the configuration that wrote the
// state has them now; otherwise every group with an update_policy would plan a change to them
// after the provider's upgrade. template.health_check is new and absent (null).
func upgradeGroupStateV1(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	upgradeGroupStateJSON(req, resp, 1, chain(upgradeGroupJSONV1, upgradeGroupJSONV2, upgradeGroupJSONV3))
}

func upgradeGroupJSONV1(raw []byte) ([]byte, error) {
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		return nil, err
	}
	if up, ok := st["update_policy"].(map[string]any); ok {
		for name, def := range map[string]string{"min_ready": defaultMinReady, "ready_timeout": defaultReadyTimeout, "on_failure": engine.OnFailureStop} {
			if up[name] == nil {
				up[name] = def
			}
		}
	}
	return json.Marshal(st)
}

// upgradeGroupStateJSON rewrites state of schema version from with upgrade.
func upgradeGroupStateJSON(req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse, from int, upgrade func([]byte) ([]byte, error)) {
	if req.RawState == nil || req.RawState.JSON == nil {
		resp.Diagnostics.AddError("Cannot upgrade the group's state", fmt.Sprintf("The state of schema version %d has no JSON to read.", from))
		return
	}
	out, err := upgrade(req.RawState.JSON)
	if err != nil {
		resp.Diagnostics.AddError("Cannot upgrade the group's state", fmt.Sprintf("State of schema version %d cannot be read: %v.", from, err))
		return
	}
	resp.DynamicValue = &tfprotov6.DynamicValue{JSON: out}
}

// upgradeGroupStateV0 rewrites version 0 state as JSON: max_unavailable was a number and is now
// a string that also takes percentages; shutdown_timeout did not exist, and members stopped hard,
// so old state gets the new default; instances gain planned_action, NONE until the next plan.
// Version 0 state goes through version 1's, 2's and 3's upgrades too: an upgrader gives the
// current version.
func upgradeGroupStateV0(_ context.Context, req resource.UpgradeStateRequest, resp *resource.UpgradeStateResponse) {
	upgradeGroupStateJSON(req, resp, 0, chain(upgradeGroupJSONV0, upgradeGroupJSONV1, upgradeGroupJSONV2, upgradeGroupJSONV3))
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
		// As the framework holds it: the list's JSON (protocol/instances.go).
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
