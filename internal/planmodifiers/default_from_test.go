package planmodifiers

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// TestStringDefaultFrom calls the modifier directly, as terraform-provider-aws tests its plan
// modifiers: a request per case, on create (no state) and on update (a state), and the whole
// response compared.
func TestStringDefaultFrom(t *testing.T) {
	t.Parallel()
	s := schema.Schema{Attributes: map[string]schema.Attribute{
		"name":               schema.StringAttribute{Required: true},
		"base_instance_name": schema.StringAttribute{Optional: true, Computed: true},
	}}
	objType := tftypes.Object{AttributeTypes: map[string]tftypes.Type{"name": tftypes.String, "base_instance_name": tftypes.String}}
	// object is the resource with name and base_instance_name; a nil name is unknown.
	object := func(name any, base any) tftypes.Value {
		if name == nil {
			name = tftypes.UnknownValue
		}
		return tftypes.NewValue(objType, map[string]tftypes.Value{
			"name":               tftypes.NewValue(tftypes.String, name),
			"base_instance_name": tftypes.NewValue(tftypes.String, base),
		})
	}
	noState := tftypes.NewValue(objType, nil)
	cases := map[string]struct {
		state  tftypes.Value // noState on create
		plan   tftypes.Value
		config types.String
		value  types.String // the attribute's planned value before the modifier
		want   planmodifier.StringResponse
	}{
		"create, unset: the source's value": {
			state: noState, plan: object("db", tftypes.UnknownValue),
			config: types.StringNull(), value: types.StringUnknown(),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("db")},
		},
		"create, set: its own value": {
			state: noState, plan: object("db", "web"),
			config: types.StringValue("web"), value: types.StringValue("web"),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("web")},
		},
		"create, unset, source unknown: unknown": {
			state: noState, plan: object(nil, tftypes.UnknownValue),
			config: types.StringNull(), value: types.StringUnknown(),
			want: planmodifier.StringResponse{PlanValue: types.StringUnknown()},
		},
		"update, unset, source unchanged: the same value": {
			state: object("db", "db"), plan: object("db", "db"),
			config: types.StringNull(), value: types.StringValue("db"),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("db")},
		},
		"update, unset, source changed: follows the source": {
			state: object("db", "db"), plan: object("db2", tftypes.UnknownValue),
			config: types.StringNull(), value: types.StringUnknown(),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("db2")},
		},
		"update, set where it was unset: its own value": {
			state: object("db", "db"), plan: object("db", "web"),
			config: types.StringValue("web"), value: types.StringValue("web"),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("web")},
		},
		"update, unset where it was set: back to the source's value": {
			state: object("db", "web"), plan: object("db", tftypes.UnknownValue),
			config: types.StringNull(), value: types.StringUnknown(),
			want: planmodifier.StringResponse{PlanValue: types.StringValue("db")},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			req := planmodifier.StringRequest{
				Path:        path.Root("base_instance_name"),
				ConfigValue: c.config,
				PlanValue:   c.value,
				Plan:        tfsdk.Plan{Schema: s, Raw: c.plan},
				State:       tfsdk.State{Schema: s, Raw: c.state},
			}
			resp := planmodifier.StringResponse{PlanValue: c.value}
			StringDefaultFrom(path.Root("name")).PlanModifyString(context.Background(), req, &resp)
			if diff := cmp.Diff(c.want, resp); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
		})
	}
}
