package provider

import (
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-go/tfprotov6"
	"github.com/hashicorp/terraform-plugin-go/tftypes"
)

// A plan shows, in each member's planned_action, what the apply will do to it ("CREATE",
// "REPLACE: boot image changed"). Once the apply has done it, nothing of it is left: the state
// the apply saves says what is left to do (NONE), as the refresh that follows reads it
// (membersOf). Otherwise every later `terraform plan -refresh-only`, and every output that uses
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

// plannedActionsOnly reports whether applied, the group's value an apply returns, differs from
// planned, the value its plan gave, and only in its members' planned_action. Both are in the
// framework's form (instances as JSON text, see instances_proto.go) and of type typ. A value
// the plan left unknown may come back as anything, as Terraform's own check has it.
func plannedActionsOnly(typ tftypes.Type, planned, applied *tfprotov6.DynamicValue) (bool, error) {
	if planned == nil || applied == nil {
		return false, nil
	}
	pv, err := planned.Unmarshal(typ)
	if err != nil {
		return false, err
	}
	av, err := applied.Unmarshal(typ)
	if err != nil {
		return false, err
	}
	if pv.IsNull() || av.IsNull() || !pv.IsKnown() {
		return false, nil
	}
	// Where the plan said "known after apply", the applied value is taken as planned.
	av, err = tftypes.Transform(av, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		// A path the plan does not have (a member more) is compared as it is.
		if at, rest, walkErr := tftypes.WalkAttributePath(pv, p); walkErr == nil && len(rest.Steps()) == 0 {
			if pl, ok := at.(tftypes.Value); ok && !pl.IsKnown() {
				return tftypes.NewValue(v.Type(), tftypes.UnknownValue), nil
			}
		}
		return v, nil
	})
	if err != nil {
		return false, err
	}
	if pv.Equal(av) {
		return false, nil
	}
	mp, err := withoutPlannedActions(pv)
	if err != nil {
		return false, err
	}
	ma, err := withoutPlannedActions(av)
	if err != nil {
		return false, err
	}
	return mp.Equal(ma), nil
}

// withoutPlannedActions is the group's value (framework form) with planned_action taken out of
// every member of `instances`.
func withoutPlannedActions(v tftypes.Value) (tftypes.Value, error) {
	return tftypes.Transform(v, func(p *tftypes.AttributePath, v tftypes.Value) (tftypes.Value, error) {
		steps := p.Steps()
		if len(steps) != 1 || steps[0] != tftypes.AttributeName(instancesAttrName) || !v.IsKnown() || v.IsNull() || !v.Type().Is(tftypes.String) {
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
