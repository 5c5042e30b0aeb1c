package config

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// ValidateConfig checks what needs more than one attribute, at terraform validate.
func (r *PerInstanceConfigResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var minimal, allowed types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("minimal_action"), &minimal)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("most_disruptive_allowed_action"), &allowed)...)
	providerdata.CheckActionBounds(&resp.Diagnostics, path.Root("minimal_action"), minimal, allowed)
}

// checkConfigMetadata refuses, at plan, a per-instance config's metadata larger than its
// member's record can carry beside the template's (engine.MaxConfigMetadataBytes).
func checkConfigMetadata(ctx context.Context, diags *diag.Diagnostics, ps *PreservedStateModel) {
	if ps == nil || !providerdata.Known(ps.Metadata) {
		return
	}
	var ignored diag.Diagnostics
	parts := []engine.TextPart{{Attribute: "preserved_state.metadata", Bytes: engine.MapBytes(providerdata.StringMap(ctx, ps.Metadata, &ignored))}}
	if err := engine.CheckTextSize(parts, engine.MaxConfigMetadataBytes, "The config's preserved_state.metadata (keys and values)"); err != nil {
		diags.AddAttributeError(path.Root("preserved_state").AtName("metadata"), "Metadata too large", err.Error()+".")
	}
}

var _ resource.ResourceWithValidateConfig = (*PerInstanceConfigResource)(nil)
