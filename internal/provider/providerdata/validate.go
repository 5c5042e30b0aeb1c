package providerdata

import (
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// CheckActionBounds reports, at validate time, a minimal action above the most disruptive
// allowed one, on the attribute at minimal.
func CheckActionBounds(diags *diag.Diagnostics, minimal path.Path, minimalValue, allowedValue types.String) {
	if !Known(minimalValue, allowedValue) || minimalValue.IsNull() || allowedValue.IsNull() {
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

// QuoteList writes a list of strings as HCL does.
func QuoteList(words []string) string {
	quoted := make([]string, len(words))
	for i, w := range words {
		quoted[i] = fmt.Sprintf("%q", w)
	}
	return "[" + strings.Join(quoted, ", ") + "]"
}

// NameValidator and DeviceNameValidator check the names that every resource and the provider's
// host blocks take, with the engine's patterns, defined once for all of them.
var (
	NameValidator       = stringvalidator.RegexMatches(engine.NamePattern, engine.NameRule)
	DeviceNameValidator = stringvalidator.All(
		stringvalidator.RegexMatches(engine.DeviceNamePattern, engine.DeviceNameRule),
		stringvalidator.NoneOf(engine.ReservedDeviceNames...),
	)
)
