package group

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestEngineGroup_canary: update_policy.canary as the engine reads it, and as the group record
// keeps it (and import reads it back): unset is no hold, "0" a hold of every member.
func TestEngineGroup_canary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	cases := map[string]struct {
		canary types.String
		want   *engine.Canary
	}{
		"unset":      {canary: types.StringNull(), want: nil},
		"a number":   {canary: types.StringValue("1"), want: &engine.Canary{Fixed: 1}},
		"zero":       {canary: types.StringValue("0"), want: &engine.Canary{}},
		"percentage": {canary: types.StringValue("25%"), want: &engine.Canary{Percent: 25}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := planGroupModel("m1")
			m.UpdatePolicy = plannedPolicy("0s", "5m", "STOP")
			m.UpdatePolicy.Canary = c.canary
			var diags diag.Diagnostics
			g := m.engineGroup(ctx, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(c.want, g.Policy.Canary); diff != "" {
				t.Errorf("Policy.Canary (-want +got):\n%s", diff)
			}
			spec := m.encodeGroupSpec(ctx, &diags)
			if has := strings.Contains(spec, `"canary"`); has != !c.canary.IsNull() {
				t.Errorf("the configuration kept has canary %t, want %t: %s", has, !c.canary.IsNull(), spec)
			}
			var back StatefulGroupModel
			back.decodeGroupSpec(spec, &diags)
			if diags.HasError() {
				t.Fatal(diags)
			}
			if diff := cmp.Diff(m.UpdatePolicy, back.UpdatePolicy); diff != "" {
				t.Errorf("update policy read back (-written +read):\n%s", diff)
			}
		})
	}
}
