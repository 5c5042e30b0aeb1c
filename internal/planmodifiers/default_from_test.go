package planmodifiers

import (
	"context"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

func TestStringDefaultFrom(t *testing.T) {
	s := schema.Schema{Attributes: map[string]schema.Attribute{
		"name":               schema.StringAttribute{Required: true},
		"base_instance_name": schema.StringAttribute{Optional: true, Computed: true},
	}}
	objType := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String, "base_instance_name": tftypes.String}}
	plan := tfsdk.Plan{Schema: s, Raw: tftypes.NewValue(objType, map[string]tftypes.Value{
		"name":               tftypes.NewValue(tftypes.String, "db"),
		"base_instance_name": tftypes.NewValue(tftypes.String, tftypes.UnknownValue),
	})}
	cases := []struct {
		name   string
		config types.String
		plan   types.String
		want   types.String
	}{
		{"unset takes the source's value", types.StringNull(), types.StringUnknown(), types.StringValue("db")},
		{"set keeps its own value", types.StringValue("web"), types.StringValue("web"), types.StringValue("web")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := planmodifier.StringRequest{Path: path.Root("base_instance_name"), ConfigValue: c.config, PlanValue: c.plan, Plan: plan}
			resp := planmodifier.StringResponse{PlanValue: c.plan}
			StringDefaultFrom(path.Root("name")).PlanModifyString(context.Background(), req, &resp)
			if resp.Diagnostics.HasError() {
				t.Fatalf("diagnostics: %v", resp.Diagnostics)
			}
			if !resp.PlanValue.Equal(c.want) {
				t.Fatalf("plan value %s, want %s", resp.PlanValue, c.want)
			}
		})
	}
}
