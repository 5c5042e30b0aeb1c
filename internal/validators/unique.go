// Package validators holds the provider's own attribute validators.
package validators

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// UniqueAttribute rejects a set of nested blocks in which two blocks share the value of the named
// string attribute, such as two disks with one device_name.
func UniqueAttribute(name string) validator.Set { return uniqueAttribute{name: name} }

type uniqueAttribute struct{ name string }

func (v uniqueAttribute) Description(context.Context) string {
	return fmt.Sprintf("each block must have a different %s", v.name)
}

func (v uniqueAttribute) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

// UniqueListAttribute is UniqueAttribute for a list of nested blocks, such as shares keyed by
// their target.
func UniqueListAttribute(name string) validator.List { return uniqueAttribute{name: name} }

func (v uniqueAttribute) ValidateList(ctx context.Context, req validator.ListRequest, resp *validator.ListResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v.validate(req.ConfigValue.Elements(), func(i int, _ attr.Value) path.Path { return req.Path.AtListIndex(i) }, &resp.Diagnostics)
}

func (v uniqueAttribute) ValidateSet(ctx context.Context, req validator.SetRequest, resp *validator.SetResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	v.validate(req.ConfigValue.Elements(), func(_ int, el attr.Value) path.Path { return req.Path.AtSetValue(el) }, &resp.Diagnostics)
}

// validate reports the first block whose attribute repeats an earlier block's, on that block's
// attribute (element gives a block's path), not on the whole list or set.
func (v uniqueAttribute) validate(elements []attr.Value, element func(int, attr.Value) path.Path, diags *diag.Diagnostics) {
	seen := map[string]bool{}
	for i, el := range elements {
		obj, ok := el.(types.Object)
		if !ok || obj.IsNull() || obj.IsUnknown() {
			continue
		}
		value := obj.Attributes()[v.name]
		s, ok := value.(types.String)
		if !ok || s.IsNull() || s.IsUnknown() {
			continue
		}
		if seen[s.ValueString()] {
			diags.AddAttributeError(element(i, el).AtName(v.name), "Duplicate "+v.name,
				fmt.Sprintf("%s %q appears in more than one block; each block must have a different %s.", v.name, s.ValueString(), v.name))
			return
		}
		seen[s.ValueString()] = true
	}
}
