package validators

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
)

// Parsed rejects a string that parse refuses, with parse's own explanation: the rule lives once,
// where production reads the value, and the schema borrows it.
func Parsed(what string, parse func(string) error) validator.String {
	return parsed{what: what, parse: parse}
}

type parsed struct {
	what  string
	parse func(string) error
}

func (v parsed) Description(context.Context) string { return "must be " + v.what }

func (v parsed) MarkdownDescription(ctx context.Context) string { return v.Description(ctx) }

func (v parsed) ValidateString(_ context.Context, req validator.StringRequest, resp *validator.StringResponse) {
	if req.ConfigValue.IsNull() || req.ConfigValue.IsUnknown() {
		return
	}
	if err := v.parse(req.ConfigValue.ValueString()); err != nil {
		resp.Diagnostics.AddAttributeError(req.Path, "Invalid value",
			fmt.Sprintf("%s = %q: %v. Allowed: %s.", req.Path, req.ConfigValue.ValueString(), err, v.what))
	}
}
