package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
)

// TestPlannedActionsOnly: an applied group value that differs from its plan in members'
// planned_action alone lets Terraform take it (the state says what is left); any other
// difference, or none, leaves Terraform's own check as it is.
func TestPlannedActionsOnly(t *testing.T) {
	t.Parallel()
	str := func(s string) tftypes.Value { return tftypes.NewValue(tftypes.String, s) }
	value := func(name string, instances tftypes.Value) tftypes.Value {
		return tftypes.NewValue(frameworkGroupType, map[string]tftypes.Value{
			"name": str(name), "target_size": tftypes.NewValue(tftypes.Number, 2), "instances": instances,
		})
	}
	const (
		planned = `[{"name":"g-1","index":1,"health":"HEALTHY","planned_action":"CREATE"},{"name":"g-2","index":2,"health":"HEALTHY","planned_action":"REPLACE: boot image changed"}]`
		left    = `[{"name":"g-1","index":1,"health":"HEALTHY","planned_action":"NONE"},{"name":"g-2","index":2,"health":"HEALTHY","planned_action":"NONE"}]`
		moved   = `[{"name":"g-1","index":1,"health":"UNHEALTHY","planned_action":"NONE"},{"name":"g-2","index":2,"health":"HEALTHY","planned_action":"NONE"}]`
	)
	unknown := tftypes.NewValue(tftypes.String, tftypes.UnknownValue)
	cases := map[string]struct {
		planned, applied tftypes.Value
		want             bool
	}{
		"the same":                         {value("g", str(planned)), value("g", str(planned)), false},
		"planned actions done":             {value("g", str(planned)), value("g", str(left)), true},
		"planned actions and health":       {value("g", str(planned)), value("g", str(moved)), false},
		"planned actions and another attr": {value("g", str(planned)), value("h", str(left)), false},
		"list unknown at plan":             {value("g", unknown), value("g", str(left)), false},
		"a member more":                    {value("g", str(planned)), value("g", str(`[{"name":"g-1","index":1,"health":"HEALTHY","planned_action":"NONE"}]`)), false},
		"null applied":                     {value("g", str(planned)), tftypes.NewValue(frameworkGroupType, nil), false},
		"null instances":                   {value("g", tftypes.NewValue(tftypes.String, nil)), value("g", tftypes.NewValue(tftypes.String, nil)), false},
	}
	// A value the plan left unknown may come back as anything.
	cases["name unknown at plan, actions done"] = struct {
		planned, applied tftypes.Value
		want             bool
	}{
		tftypes.NewValue(frameworkGroupType, map[string]tftypes.Value{
			"name": tftypes.NewValue(tftypes.String, tftypes.UnknownValue), "target_size": tftypes.NewValue(tftypes.Number, 2), "instances": str(planned),
		}),
		value("g", str(left)), true,
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := protocol.PlannedActionsOnly(frameworkGroupType, encode(t, frameworkGroupType, c.planned), encode(t, frameworkGroupType, c.applied))
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("plannedActionsOnly (-want +got):\n%s", diff)
			}
		})
	}
}
