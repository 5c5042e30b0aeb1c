package group

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestUpgradeGroupState calls each state upgrader directly with state of its version and checks
// every attribute that changed. Each gives the current version; a whole state's result must fit
// the current schema, so that Terraform can read it.
func TestUpgradeGroupState(t *testing.T) {
	t.Parallel()
	type upgrader func(context.Context, resource.UpgradeStateRequest, *resource.UpgradeStateResponse)
	cases := map[string]struct {
		upgrade upgrader
		old     string
		want    map[string]any
		current bool // the result is the current schema's
	}{
		"v0 number and instances": {
			upgrade: upgradeGroupStateV0,
			old:     `{"id":"g","name":"g","update_policy":{"type":"PROACTIVE","max_unavailable":2},"instances":[{"name":"g-1","index":1,"status":"RUNNING","template_revision":"r","current_action":"NONE"}]}`,
			want: map[string]any{"id": "g", "name": "g", "shutdown_timeout": "60s", "adopt_existing": false, "abandon": []any{},
				"update_policy": map[string]any{"type": "PROACTIVE", "max_unavailable": "2", "min_ready": "0s", "ready_timeout": "5m", "on_failure": "STOP"},
				"instances":     []any{map[string]any{"name": "g-1", "index": float64(1), "status": "RUNNING", "template_revision": "r", "current_action": "NONE", "planned_action": "NONE"}}},
		},
		"v0 no update policy, no instances": {
			upgrade: upgradeGroupStateV0,
			old:     `{"id":"g","name":"g","update_policy":null,"instances":null}`,
			want:    map[string]any{"id": "g", "name": "g", "shutdown_timeout": "60s", "update_policy": nil, "instances": nil, "adopt_existing": false, "abandon": []any{}},
		},
		// Version 1 state gets the update policy's new attributes at their defaults, so that the
		// plan after the provider's upgrade is empty.
		"v1 with an update policy": {
			upgrade: upgradeGroupStateV1,
			old:     `{"id":"g","name":"g","update_policy":{"type":"PROACTIVE","minimal_action":"NONE","most_disruptive_allowed_action":"REPLACE","max_unavailable":"2"}}`,
			want: map[string]any{"id": "g", "name": "g", "adopt_existing": false, "abandon": []any{}, "update_policy": map[string]any{"type": "PROACTIVE", "minimal_action": "NONE",
				"most_disruptive_allowed_action": "REPLACE", "max_unavailable": "2", "min_ready": "0s", "ready_timeout": "5m", "on_failure": "STOP"}},
			current: true,
		},
		"v1 without one": {
			upgrade: upgradeGroupStateV1,
			old:     `{"id":"g","name":"g","update_policy":null}`,
			want:    map[string]any{"id": "g", "name": "g", "update_policy": nil, "adopt_existing": false, "abandon": []any{}},
			current: true,
		},
		// Version 2 state gets adopt_existing and abandon at their defaults; values it has stay.
		"v2 without adopt_existing and abandon": {
			upgrade: upgradeGroupStateV2,
			old:     `{"id":"g","name":"g","update_policy":null}`,
			want:    map[string]any{"id": "g", "name": "g", "update_policy": nil, "adopt_existing": false, "abandon": []any{}},
			current: true,
		},
		// Version 3 state gets distribution_policy's drain, rebalance and live at their defaults,
		// so that the plan after the provider's upgrade is empty; a group without the block has
		// none, and earlier versions get them through the chain.
		"v3 with a distribution policy": {
			upgrade: upgradeGroupStateV3,
			old:     `{"id":"g","name":"g","adopt_existing":false,"abandon":[],"distribution_policy":{"hosts":["default","h2"]}}`,
			want: map[string]any{"id": "g", "name": "g", "adopt_existing": false, "abandon": []any{},
				"distribution_policy": map[string]any{"hosts": []any{"default", "h2"}, "drain": []any{}, "rebalance": false, "live": true}},
			current: true,
		},
		"v3 without one": {
			upgrade: upgradeGroupStateV3,
			old:     `{"id":"g","name":"g","adopt_existing":false,"abandon":[],"distribution_policy":null}`,
			want:    map[string]any{"id": "g", "name": "g", "adopt_existing": false, "abandon": []any{}, "distribution_policy": nil},
			current: true,
		},
		"v2 with a distribution policy": {
			upgrade: upgradeGroupStateV2,
			old:     `{"id":"g","name":"g","distribution_policy":{"hosts":["h2"]}}`,
			want: map[string]any{"id": "g", "name": "g", "adopt_existing": false, "abandon": []any{},
				"distribution_policy": map[string]any{"hosts": []any{"h2"}, "drain": []any{}, "rebalance": false, "live": true}},
			current: true,
		},
		"v0 with a distribution policy": {
			upgrade: upgradeGroupStateV0,
			old:     `{"id":"g","name":"g","update_policy":null,"instances":null,"distribution_policy":{"hosts":["h2"]}}`,
			want: map[string]any{"id": "g", "name": "g", "shutdown_timeout": "60s", "update_policy": nil, "instances": nil, "adopt_existing": false, "abandon": []any{},
				"distribution_policy": map[string]any{"hosts": []any{"h2"}, "drain": []any{}, "rebalance": false, "live": true}},
		},
	}
	typ := StatefulGroupSchema().Type().TerraformType(context.Background())
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp := &resource.UpgradeStateResponse{}
			c.upgrade(context.Background(), resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(c.old)}}, resp)
			if resp.Diagnostics.HasError() {
				t.Fatalf("diagnostics: %v", resp.Diagnostics)
			}
			var got map[string]any
			if err := json.Unmarshal(resp.DynamicValue.JSON, &got); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("upgraded state (-want +got):\n%s", d)
			}
			if !c.current {
				return
			}
			if _, err := tftypes.ValueFromJSONWithOpts(resp.DynamicValue.JSON, typ, tftypes.ValueFromJSONOpts{}); err != nil {
				t.Errorf("the upgraded state does not fit the schema: %v", err)
			}
		})
	}
	for name, upgrade := range map[string]upgrader{"v0": upgradeGroupStateV0, "v1": upgradeGroupStateV1, "v2": upgradeGroupStateV2, "v3": upgradeGroupStateV3} {
		t.Run(name+" not JSON", func(t *testing.T) {
			t.Parallel()
			resp := &resource.UpgradeStateResponse{}
			upgrade(context.Background(), resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte("{")}}, resp)
			if !resp.Diagnostics.HasError() {
				t.Fatal("broken state upgraded without an error")
			}
		})
	}
}
