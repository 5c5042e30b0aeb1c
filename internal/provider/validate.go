package provider

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
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

// nameValidator and deviceNameValidator check the names that every resource and the provider's
// host blocks take, with the patterns of names.go, defined once for all of them.
var (
	nameValidator = stringvalidator.RegexMatches(dnsLabelRegexp,
		"must be a DNS label: 1 to 63 lower case letters, digits and hyphens, starting with a letter and not ending with a hyphen")
	deviceNameValidator = stringvalidator.All(
		stringvalidator.RegexMatches(deviceNameRegexp, "must be a lower case letter followed by up to 31 lower case letters, digits, hyphens or underscores"),
		stringvalidator.NoneOf(engine.BootDeviceName),
	)
)

// checkNICs enforces that a network interface names its network exactly when its type needs one.
func checkNICs(t *templateModel) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, n := range t.NetworkInterface {
		if !known(n.Type, n.Network) {
			continue
		}
		p := path.Root("template").AtName("network_interface").AtListIndex(i).AtName("network")
		switch {
		case n.Type.ValueString() == "network" && n.Network.ValueString() == "":
			diags.AddAttributeError(p, "Missing network", "network_interface with type \"network\" needs network, the name of a libvirt network such as \"default\"; or set type = \"user\".")
		case n.Type.ValueString() == "user" && !n.Network.IsNull():
			diags.AddAttributeError(p, "Unexpected network", fmt.Sprintf("network_interface with type \"user\" takes no network, got %q.", n.Network.ValueString()))
		}
	}
	return diags
}
