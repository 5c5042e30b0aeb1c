package group

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var pathCloudInit = path.Root("template").AtName("cloud_init")

// cloudInitUserData reads the write-only user data and its version from an apply's
// configuration; a version of 0 when there is none (no cloud_init block, or no user_data_wo).
// The value goes to the executor only (reconcile.Secrets): never into a model that is planned,
// stored or logged.
func cloudInitUserData(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) (string, int64) {
	var obj types.Object
	diags.Append(config.GetAttribute(ctx, pathCloudInit, &obj)...)
	if obj.IsNull() || obj.IsUnknown() {
		return "", 0
	}
	var ud types.String
	var version types.Int64
	diags.Append(config.GetAttribute(ctx, pathCloudInit.AtName("user_data_wo"), &ud)...)
	diags.Append(config.GetAttribute(ctx, pathCloudInit.AtName("user_data_wo_version"), &version)...)
	if ud.IsNull() || ud.IsUnknown() || version.IsNull() || version.IsUnknown() {
		return "", 0
	}
	return ud.ValueString(), version.ValueInt64()
}

// applySecrets are the write-only values of the group's apply, for the executor: only the group's
// own Create and Update have them (a per-instance config's apply has req.Config of its own).
func applySecrets(ctx context.Context, config tfsdk.Config, diags *diag.Diagnostics) reconcile.Secrets {
	s := reconcile.Secrets{GraphicsPassword: graphicsPassword(ctx, config, diags)}
	s.UserData, s.UserDataVersion = cloudInitUserData(ctx, config, diags)
	return s
}
