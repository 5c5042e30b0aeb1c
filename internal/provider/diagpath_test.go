package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestTemplateDiskPath: "Disk cannot shrink" points at the size_mib of the disk that shrinks,
// the boot disk's or the template disk block's of that device_name, not at the template.
func TestTemplateDiskPath(t *testing.T) {
	t.Parallel()
	tmpl := &templateModel{Disk: []diskModel{
		{DeviceName: types.StringValue("data"), SizeMiB: types.Int64Value(64)},
		{DeviceName: types.StringValue("logs"), SizeMiB: types.Int64Value(8)},
	}}
	logs := types.ObjectValueMust(map[string]attr.Type{"device_name": types.StringType, "size_mib": types.Int64Type},
		map[string]attr.Value{"device_name": types.StringValue("logs"), "size_mib": types.Int64Value(8)})
	cases := map[string]struct {
		device string
		want   path.Path
	}{
		"the boot disk":           {"boot", path.Root("template").AtName("boot_disk").AtName("size_mib")},
		"a template disk":         {"logs", path.Root("template").AtName("disk").AtSetValue(logs).AtName("size_mib")},
		"a disk the plan lacks":   {"gone", path.Root("template")},
		"no template in the plan": {"data", path.Root("template")},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			in := tmpl
			if name == "no template in the plan" {
				in = nil
			}
			if got := templateDiskPath(in, c.device, "size_mib"); !got.Equal(c.want) {
				t.Errorf("path %s, want %s", got, c.want)
			}
		})
	}
}

// TestCheckPolicyDisks: a policy disk the template lacks is refused on that disk block's
// device_name, and a disk of the template is not.
func TestCheckPolicyDisks(t *testing.T) {
	t.Parallel()
	disks := []policyDiskModel{
		{DeviceName: types.StringValue("data"), DeleteRule: types.StringValue("NEVER")},
		{DeviceName: types.StringValue("logs"), DeleteRule: types.StringValue("ON_PERMANENT_INSTANCE_DELETION")},
	}
	var diags diag.Diagnostics
	checkPolicyDisks(&diags, "db", []string{"data"}, disks)
	if len(diags.Errors()) != 1 {
		t.Fatalf("want one error, got %v", diags)
	}
	logs := types.ObjectValueMust(map[string]attr.Type{"device_name": types.StringType, "delete_rule": types.StringType},
		map[string]attr.Value{"device_name": types.StringValue("logs"), "delete_rule": types.StringValue("ON_PERMANENT_INSTANCE_DELETION")})
	want := path.Root("disk").AtSetValue(logs).AtName("device_name")
	if got := diags.Errors()[0].(diag.DiagnosticWithPath).Path(); !got.Equal(want) {
		t.Errorf("error on %s, want %s", got, want)
	}
}
