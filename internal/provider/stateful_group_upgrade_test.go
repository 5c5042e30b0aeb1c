package provider

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
)

// TestUpgradeGroupStateV0 calls the upgrader directly with version 0 state and checks every
// attribute that changed, and that the result fits the version 1 schema.
func TestUpgradeGroupStateV0(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		v0   string
		want map[string]any
	}{
		"number and instances": {
			v0: `{"id":"g","name":"g","update_policy":{"type":"PROACTIVE","max_unavailable":2},"instances":[{"name":"g-1","index":1,"status":"RUNNING","template_revision":"r","current_action":"NONE"}]}`,
			want: map[string]any{"id": "g", "name": "g", "shutdown_timeout": "60s",
				"update_policy": map[string]any{"type": "PROACTIVE", "max_unavailable": "2", "min_ready": "0s", "ready_timeout": "5m", "on_failure": "STOP"},
				"instances":     []any{map[string]any{"name": "g-1", "index": float64(1), "status": "RUNNING", "template_revision": "r", "current_action": "NONE", "planned_action": "NONE"}}},
		},
		"no update policy, no instances": {
			v0:   `{"id":"g","name":"g","update_policy":null,"instances":null}`,
			want: map[string]any{"id": "g", "name": "g", "shutdown_timeout": "60s", "update_policy": nil, "instances": nil},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			resp := &resource.UpgradeStateResponse{}
			upgradeGroupStateV0(context.Background(), resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte(c.v0)}}, resp)
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
		})
	}
	t.Run("not JSON", func(t *testing.T) {
		resp := &resource.UpgradeStateResponse{}
		upgradeGroupStateV0(context.Background(), resource.UpgradeStateRequest{RawState: &tfprotov6.RawState{JSON: []byte("{")}}, resp)
		if !resp.Diagnostics.HasError() {
			t.Fatal("broken state upgraded without an error")
		}
	})
}
