// Package planmodifiers holds the provider's own plan modifiers.
package planmodifiers

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/planmodifier"
	"github.com/hashicorp/terraform-plugin-framework/types"
)

// StringDefaultFrom sets an unset string attribute to the planned value of another attribute,
// as base_instance_name defaults to name.
func StringDefaultFrom(source path.Path) planmodifier.String { return defaultFrom{source: source} }

type defaultFrom struct{ source path.Path }

func (m defaultFrom) Description(context.Context) string {
	return fmt.Sprintf("defaults to the value of %s", m.source)
}

func (m defaultFrom) MarkdownDescription(ctx context.Context) string { return m.Description(ctx) }

func (m defaultFrom) PlanModifyString(ctx context.Context, req planmodifier.StringRequest, resp *planmodifier.StringResponse) {
	if !req.ConfigValue.IsNull() {
		return
	}
	var src types.String
	resp.Diagnostics.Append(req.Plan.GetAttribute(ctx, m.source, &src)...)
	if resp.Diagnostics.HasError() {
		return
	}
	resp.PlanValue = src
}
