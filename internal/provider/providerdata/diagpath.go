package providerdata

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// SetBlockPath is the path of one block of the set of nested blocks at set, the block whose
// attributes (every one of them, as the configuration or the plan has them) are attrs: a
// diagnostic about one attribute of one block then points at that block, as
// SetBlockPath(...).AtName("device_name"), not at the whole set. Values that do not make an
// object give the set's own path.
func SetBlockPath(set path.Path, attrs map[string]attr.Value) path.Path {
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
