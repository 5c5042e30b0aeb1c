package group

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// A write-only value (user_data_wo, password_wo) is never in the state: only its version is.
// So the configuration `terraform query -generate-config-out` or `terraform plan
// -generate-config-out` writes for a group has the version the state has, and the value as
// `null # sensitive`, as Terraform writes every sensitive value it cannot give back. Such a
// configuration must plan clean: it says "the value of this version", which the members already
// have (their seeds hold the user data, their definitions the password). So a version with no
// value is accepted while it is the version the group has, and the members keep what they have;
// a version the group does not have yet (a new group, a changed version) needs its value, since
// nothing else holds it. The schema cannot say this (a validator does not see the state), so the
// group's plan does.

// writeOnlyPair is a write-only attribute of the template and the version that stands for it.
type writeOnlyPair struct{ value, version path.Path }

var writeOnlyPairs = []writeOnlyPair{
	{pathCloudInit.AtName("user_data_wo"), pathCloudInit.AtName("user_data_wo_version")},
	{pathGraphics.AtName("password_wo"), pathGraphics.AtName("password_wo_version")},
}

// needsWriteOnlyValue reports whether a configuration with this version and no value must be
// refused: the version is set, and it is not the one the group has (prior, 0 for none).
func needsWriteOnlyValue(valueSet bool, version, prior int64) bool {
	return version > 0 && !valueSet && version != prior
}

// checkWriteOnlyValues refuses, at plan, a write-only version without its value where the group
// does not already have that version (state is null for a new group).
func checkWriteOnlyValues(ctx context.Context, config tfsdk.Config, state tfsdk.State, diags *diag.Diagnostics) {
	for _, p := range writeOnlyPairs {
		var value types.String
		var version, prior types.Int64
		var ignored diag.Diagnostics // a block that is not there reads as null
		ignored.Append(config.GetAttribute(ctx, p.value, &value)...)
		ignored.Append(config.GetAttribute(ctx, p.version, &version)...)
		if version.IsUnknown() || value.IsUnknown() {
			continue
		}
		if !state.Raw.IsNull() {
			ignored.Append(state.GetAttribute(ctx, p.version, &prior)...)
		}
		if !needsWriteOnlyValue(!value.IsNull(), version.ValueInt64(), prior.ValueInt64()) {
			continue
		}
		had := "a new group has no version yet"
		if !prior.IsNull() && prior.ValueInt64() > 0 {
			had = fmt.Sprintf("the group has version %d", prior.ValueInt64())
		} else if !state.Raw.IsNull() {
			had = "the group has none"
		}
		diags.AddAttributeError(p.value, "Write-only value missing",
			fmt.Sprintf("%s is %d, but %s is not set, and %s: the members cannot be given a value of version %d that no one has. Set %s to its value. "+
				"It may be left unset only while %s is the version the group already has (as in the configuration terraform query -generate-config-out writes): the members then keep the value they have.",
				p.version.String(), version.ValueInt64(), p.value.String(), had, version.ValueInt64(), p.value.String(), p.version.String()))
	}
}

// checkUserDataAvailable refuses, at plan, a plan that must write a member's seed with the
// write-only user data when the configuration leaves user_data_wo out (its version the group's
// own): the members whose seeds hold it keep it, but a new member or a seed that is gone has no
// source for it but the configuration.
func checkUserDataAvailable(ctx context.Context, config tfsdk.Config, p engine.GroupPlan, diags *diag.Diagnostics) {
	var value types.String
	var ignored diag.Diagnostics
	ignored.Append(config.GetAttribute(ctx, writeOnlyPairs[0].value, &value)...)
	if !value.IsNull() {
		return
	}
	if names := p.NeedsUserData(); len(names) > 0 {
		diags.AddAttributeError(writeOnlyPairs[0].value, "Write-only value needed",
			fmt.Sprintf("The plan writes a new cloud-init seed for %s, which needs the user data of %s, and %s is not set: the other members keep the user data their seeds hold, but these have no seed to take it from. Set %s to its value.",
				strings.Join(names, ", "), writeOnlyPairs[0].version, writeOnlyPairs[0].value, writeOnlyPairs[0].value))
	}
}
