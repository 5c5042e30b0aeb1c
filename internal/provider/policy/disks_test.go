package policy

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestCheckPolicyDisks: a policy disk the template lacks is refused on that disk block's
// device_name, and a disk of the template is not.
func TestCheckPolicyDisks(t *testing.T) {
	t.Parallel()
	disks := []PolicyDiskModel{
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
