package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// setBlockPath is the path of one block of the set of nested blocks at set, the block whose
// attributes (every one of them, as the configuration or the plan has them) are attrs: a
// diagnostic about one attribute of one block then points at that block, as
// setBlockPath(...).AtName("device_name"), not at the whole set. Values that do not make an
// object give the set's own path.
func setBlockPath(set path.Path, attrs map[string]attr.Value) path.Path {
	attrTypes := make(map[string]attr.Type, len(attrs))
	for k, v := range attrs {
		attrTypes[k] = v.Type(context.Background())
	}
	obj, d := types.ObjectValue(attrTypes, attrs)
	if d.HasError() {
		return set
	}
	return set.AtSetValue(obj)
}

// templateDiskPath is the path of the template's disk block named deviceName in t (or of the
// boot disk for engine.BootDeviceName), at its attribute name; the template's own path when t
// has no such block.
func templateDiskPath(t *templateModel, deviceName, name string) path.Path {
	tp := path.Root("template")
	if deviceName == engine.BootDeviceName {
		return tp.AtName("boot_disk").AtName(name)
	}
	if t != nil {
		for _, d := range t.Disk {
			if d.DeviceName.ValueString() == deviceName {
				return setBlockPath(tp.AtName("disk"), map[string]attr.Value{"device_name": d.DeviceName, "size_mib": d.SizeMiB}).AtName(name)
			}
		}
	}
	return tp
}
