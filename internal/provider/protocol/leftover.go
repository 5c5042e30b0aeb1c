package protocol

import (
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A plan shows, in each member's planned_action, what the apply will do to it ("CREATE",
// "REPLACE: boot image changed"). Once the apply has done it, nothing of it is left: the state
// the apply saves says what is left to do (NONE), as the refresh that follows reads it
// (MembersOf). Otherwise every later `terraform plan -refresh-only`, and every output that uses
// the list, reports "Objects have changed outside of Terraform" for what the apply itself did
// (issue 45).
//
// Terraform, though, holds an apply to its plan: every value the plan gave as known must come
// back the same, or it fails the apply as "inconsistent result". The one way the protocol has
// to let a value differ is the response's UnsafeToUseLegacyTypeSystem, which demotes that check
// to a warning in Terraform's log, for every attribute. So the provider makes the check itself
// first (plannedActionsOnly): the flag is set only when the applied value differs from the plan
// in members' planned_action and nowhere else, and any other difference still fails the apply
// in Terraform as it always did.
//
// What cannot be covered: another resource whose arguments read a member's planned_action is
// planned with the plan's text and applied with NONE, and Terraform fails that resource's apply.
// planned_action describes the plan; nothing is meant to be built from it.

// withoutPlannedActions is the group's value (framework form) with planned_action taken out of
// every member of `instances`.
func withoutPlannedActions(v tftypes.Value) (tftypes.Value, error) {
	return tftypes.Transform(v, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		steps := p.Steps()
		if len(steps) != 1 || steps[0] != tftypes.AttributeName(InstancesAttrName) || !v.IsKnown() || v.IsNull() || !v.Type().Is(tftypes.String) {
			return v, nil
		}
		var text string
		if err := v.As(&text); err != nil {
			return v, err
		}
		rows, err := parseInstanceRows(text)
		if err != nil {
			return v, err
		}
		for _, r := range rows {
			delete(r, "planned_action")
		}
		js, err := json.Marshal(rows)
		if err != nil {
			return v, err
		}
		return tftypes.NewValue(tftypes.String, string(js)), nil
	})
}
