package provider

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// checkActionBounds reports, at validate time, a minimal action above the most disruptive
// allowed one, on the attribute at minimal.
func checkActionBounds(diags *diag.Diagnostics, minimal path.Path, minimalValue, allowedValue types.String) {
	if !known(minimalValue, allowedValue) || minimalValue.IsNull() || allowedValue.IsNull() {
		return
	}
	lo, err1 := engine.ParseAction(minimalValue.ValueString())
	hi, err2 := engine.ParseAction(allowedValue.ValueString())
	if err1 != nil || err2 != nil {
		return // the attributes' own validators report unknown names
	}
	if err := engine.CheckActionBounds(lo, hi); err != nil {
		diags.AddAttributeError(minimal, "Minimal action above the most disruptive allowed action", err.Error())
	}
}

// ValidateConfig checks what needs more than one attribute, at terraform validate.
func (r *statefulGroupResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var minimal, allowed types.String
	up := path.Root("update_policy")
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("minimal_action"), &minimal)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("most_disruptive_allowed_action"), &allowed)...)
	checkActionBounds(&resp.Diagnostics, up.AtName("minimal_action"), minimal, allowed)
}

// ValidateConfig checks what needs more than one attribute, at terraform validate.
func (r *perInstanceConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var minimal, allowed types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("minimal_action"), &minimal)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("most_disruptive_allowed_action"), &allowed)...)
	checkActionBounds(&resp.Diagnostics, path.Root("minimal_action"), minimal, allowed)
}

var (
	_ resource.ResourceWithValidateConfig = (*statefulGroupResource)(nil)
	_ resource.ResourceWithValidateConfig = (*perInstanceConfigResource)(nil)
)
