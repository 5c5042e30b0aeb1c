package group

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// TestTemplateDiskPath: "Disk cannot shrink" points at the size_mib of the disk that shrinks,
// the boot disk's or the template disk block's of that device_name, not at the template.
func TestTemplateDiskPath(t *testing.T) {
	t.Parallel()
	tmpl := &TemplateModel{Disk: []DiskModel{
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
