package validators

import (
	"context"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

var diskType = types.ObjectType{AttrTypes: map[string]attr.Type{"device_name": types.StringType, "size_mib": types.Int64Type}}

func disk(name attr.Value, size int64) attr.Value {
	return types.ObjectValueMust(diskType.AttrTypes, map[string]attr.Value{"device_name": name, "size_mib": types.Int64Value(size)})
}

func TestUniqueAttribute(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		value   types.Set
		wantErr string
		// wantPath is where the error points: the repeating block's attribute.
		wantPath path.Path
	}{
		{"null set", types.SetNull(diskType), "", path.Empty()},
		{"unknown set", types.SetUnknown(diskType), "", path.Empty()},
		{"distinct names", types.SetValueMust(diskType, []attr.Value{disk(types.StringValue("a"), 1), disk(types.StringValue("b"), 1)}), "", path.Empty()},
		{"same name, different sizes", types.SetValueMust(diskType, []attr.Value{disk(types.StringValue("a"), 1), disk(types.StringValue("a"), 2)}),
			`device_name "a" appears in more than one block`, path.Root("disk").AtSetValue(disk(types.StringValue("a"), 2)).AtName("device_name")},
		{"unknown names are not compared", types.SetValueMust(diskType, []attr.Value{disk(types.StringUnknown(), 1), disk(types.StringUnknown(), 2)}), "", path.Empty()},
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
			if got := resp.Diagnostics.Errors()[0].(diag.DiagnosticWithPath).Path(); !got.Equal(c.wantPath) {
				t.Errorf("error on %s, want %s", got, c.wantPath)
			}
		})
	}
	if d := UniqueAttribute("device_name").Description(context.Background()); !strings.Contains(d, "device_name") {
		t.Fatalf("description %q", d)
	}
}

// TestUniqueListAttribute: in a list of blocks, the error is on the repeating block's attribute,
// by its index.
func TestUniqueListAttribute(t *testing.T) {
	t.Parallel()
	share := types.ObjectType{AttrTypes: map[string]attr.Type{"target": types.StringType}}
	el := func(target string) attr.Value {
		return types.ObjectValueMust(share.AttrTypes, map[string]attr.Value{"target": types.StringValue(target)})
	}
	req := validator.ListRequest{Path: path.Root("template").AtName("filesystem"), ConfigValue: types.ListValueMust(share, []attr.Value{el("a"), el("b"), el("a")})}
	var resp validator.ListResponse
	UniqueListAttribute("target").ValidateList(context.Background(), req, &resp)
	if len(resp.Diagnostics.Errors()) != 1 {
		t.Fatalf("want one error, got %v", resp.Diagnostics)
	}
	want := path.Root("template").AtName("filesystem").AtListIndex(2).AtName("target")
	if got := resp.Diagnostics.Errors()[0].(diag.DiagnosticWithPath).Path(); !got.Equal(want) {
		t.Errorf("error on %s, want %s", got, want)
	}
}
