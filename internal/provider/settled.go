package provider

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
)

// privateSettledKey is the private-state key under which a group resource keeps what its last
// look at the host found.
const privateSettledKey = "settled"

// settled says that the last apply of this state that finished left the group as configured by
// Spec (its encodeGroupSpec) needing nothing: no member to create, delete, change or start. Spec
// is "" when it did need something, or was not seen; a refresh writes "" (it does not plan the
// group, to spare a plan its apply would not use).
//
// A plan that does not refresh (terraform plan -refresh=false, and the apply that follows it)
// runs ModifyPlan with no observation of the group in its process. With an unchanged
// configuration and a settled state it plans no change without reading every member: that is
// what -refresh=false asks for, and it costs no call per member.
//
// Read says that the state's `instances` is what a refresh read (Read writes the marker), not what
// an apply planned: only then does a member read now that differs from it mean that the host
// changed since (warnHostChanged).
//
// Generation is the group record's generation that Read read: the apply of a plan made from
// that refresh refuses to run over another apply's change made since (engine.Claim.Basis).
type settled struct {
	Spec       string `json:"spec"`
	Read       bool   `json:"read,omitempty"`
	Generation int64  `json:"generation,omitempty"`
}

func readSettled(ctx context.Context, p privateGetter, diags *diag.Diagnostics) settled {
	var s settled
	if p == nil {
		return s
	}
	b, d := p.GetKey(ctx, privateSettledKey)
	diags.Append(d...)
	if len(b) > 0 {
		// An unreadable marker only costs the shortcut.
		_ = json.Unmarshal(b, &s)
	}
	return s
}

func writeSettled(ctx context.Context, p privateSetter, s settled, diags *diag.Diagnostics) {
	b, err := json.Marshal(s)
	if err != nil {
		diags.AddError("Cannot store the group's settled marker in Terraform state", err.Error())
		return
	}
	diags.Append(p.SetKey(ctx, privateSettledKey, b)...)
}
