package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var diskType = types.ObjectType{AttrTypes: map[string]attr.Type{"device_name": types.StringType, "size_mib": types.Int64Type}}

func disk(name attr.Value, size int64) attr.Value {
	return types.ObjectValueMust(diskType.AttrTypes, map[string]attr.Value{"device_name": name, "size_mib": types.Int64Value(size)})
}

func TestUniqueAttribute(t *testing.T) {
	cases := []struct {
		name    string
		value   types.Set
		wantErr string
	}{
		{"null set", types.SetNull(diskType), ""},
		{"unknown set", types.SetUnknown(diskType), ""},
		{"distinct names", types.SetValueMust(diskType, []attr.Value{disk(types.StringValue("a"), 1), disk(types.StringValue("b"), 1)}), ""},
		{"same name, different sizes", types.SetValueMust(diskType, []attr.Value{disk(types.StringValue("a"), 1), disk(types.StringValue("a"), 2)}),
			`device_name "a" appears in more than one block`},
		{"unknown names are not compared", types.SetValueMust(diskType, []attr.Value{disk(types.StringUnknown(), 1), disk(types.StringUnknown(), 2)}), ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			req := validator.SetRequest{Path: path.Root("disk"), ConfigValue: c.value}
			var resp validator.SetResponse
			UniqueAttribute("device_name").ValidateSet(context.Background(), req, &resp)
			if c.wantErr == "" {
				if resp.Diagnostics.HasError() {
					t.Fatalf("unexpected error: %v", resp.Diagnostics)
				}
				return
			}
			if !resp.Diagnostics.HasError() || !strings.Contains(resp.Diagnostics.Errors()[0].Detail(), c.wantErr) {
				t.Fatalf("want error %q, got %v", c.wantErr, resp.Diagnostics)
			}
		})
	}
	if d := UniqueAttribute("device_name").Description(context.Background()); !strings.Contains(d, "device_name") {
		t.Fatalf("description %q", d)
	}
}
