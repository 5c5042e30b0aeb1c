package group

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"

	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// privatePlannedKey is the private-state key under which a group's plan hands its apply what it
// showed of each member: the apply refuses to do more (engine.GroupPlan.Unplanned). The text of
// `instances`' planned_action is for the user; the apply reads these typed values, never that
// text. The apply that used them removes them.
const privatePlannedKey = "planned"

// plannedVersion is the version of plannedRecord. A plan and its apply run the same build of
// the provider (Terraform requires it of a saved plan), so a record of another version is a bug,
// and the apply refuses it rather than guess.
const plannedVersion = 1

// plannedRecord is what the plan showed, as the private state keeps it.
type plannedRecord struct {
	Version int                   `json:"version"`
	Members map[string]plannedRow `json:"members"`
}

// plannedRow is an engine.Planned as the private state keeps it: kinds by their names, which
// outlive a reordering of the engine's constants.
type plannedRow struct {
	Kind     string `json:"kind"`
	Why      string `json:"why,omitempty"`
	Then     string `json:"then,omitempty"`
	Unhealed bool   `json:"unhealed,omitempty"`
}

// plannedKindNamed is the kind of the given name; PlannedUnrecognized (which ranks as the most
// disruptive) for a name this build does not know.
func plannedKindNamed(name string) engine.PlannedKind {
	for k := engine.PlannedNone; k < engine.PlannedUnrecognized; k++ {
		if k.String() == name {
			return k
		}
	}
	return engine.PlannedUnrecognized
}

func plannedRowOf(p engine.Planned) plannedRow {
	r := plannedRow{Kind: p.Kind.String(), Why: p.Why, Unhealed: p.Unhealed}
	if p.Then != engine.PlannedNone {
		r.Then = p.Then.String()
	}
	return r
}

func (r plannedRow) planned() engine.Planned {
	p := engine.Planned{Kind: plannedKindNamed(r.Kind), Why: r.Why, Unhealed: r.Unhealed}
	if r.Then != "" {
		p.Then = plannedKindNamed(r.Then)
	}
	return p
}

// encodePlanned is the private-state value of what a plan shows of each member.
func encodePlanned(shown map[string]engine.Planned) ([]byte, error) {
	rec := plannedRecord{Version: plannedVersion, Members: make(map[string]plannedRow, len(shown))}
	for name, p := range shown {
		rec.Members[name] = plannedRowOf(p)
	}
	return json.Marshal(rec)
}

// decodePlanned reads what encodePlanned wrote; nil for no value (the plan showed no list: the
// apply has nothing to hold itself to).
func decodePlanned(b []byte) (map[string]engine.Planned, error) {
	if len(b) == 0 {
		return nil, nil
	}
	var rec plannedRecord
	if err := json.Unmarshal(b, &rec); err != nil {
		return nil, err
	}
	if rec.Version != plannedVersion {
		return nil, fmt.Errorf("version %d, this build writes and reads version %d", rec.Version, plannedVersion)
	}
	out := make(map[string]engine.Planned, len(rec.Members))
	for name, r := range rec.Members {
		out[name] = r.planned()
	}
	return out, nil
}

// writePlanned keeps what the plan shows of each member for its apply; nil removes it (the plan
// shows no list, or one the apply will not run).
func writePlanned(ctx context.Context, p providerdata.PrivateSetter, shown map[string]engine.Planned, diags *diag.Diagnostics) {
	if absent(p) {
		return
	}
	if shown == nil {
		diags.Append(p.SetKey(ctx, privatePlannedKey, nil)...)
		return
	}
	b, err := encodePlanned(shown)
	if err != nil {
		diags.AddError("Cannot store the group's planned actions in Terraform state", err.Error())
		return
	}
	diags.Append(p.SetKey(ctx, privatePlannedKey, b)...)
}

// readPlanned is what the plan showed of each member, for its apply.
func readPlanned(ctx context.Context, p providerdata.PrivateGetter, diags *diag.Diagnostics) map[string]engine.Planned {
	if absent(p) {
		return nil
	}
	b, d := p.GetKey(ctx, privatePlannedKey)
	diags.Append(d...)
	shown, err := decodePlanned(b)
	if err != nil {
		diags.AddError("Cannot read the group's planned actions from Terraform state",
			fmt.Sprintf("The plan's record of what it showed for each member (private state key %q) cannot be read: %v. Nothing was changed; run terraform apply again to plan anew.", privatePlannedKey, err))
	}
	return shown
}

// absent reports whether a private state is missing: nil, or a nil pointer (a request built by
// hand, in tests, has none).
func absent(p any) bool {
	if p == nil {
		return true
	}
	v := reflect.ValueOf(p)
	return v.Kind() == reflect.Pointer && v.IsNil()
}

// plannedOf is what the members of a plan show, by name.
func plannedOf(members []engine.Member) map[string]engine.Planned {
	out := make(map[string]engine.Planned, len(members))
	for _, m := range members {
		out[m.Name] = m.Planned
	}
	return out
}

// createsOf is what a create's plan showed of the members of a planned list: a create plan
// shows its members only when it creates each one (planCreateInstances), so every one of them is
// CREATE. nil when the list is not known. (The framework hands a Create no planned private state,
// so this is read from the list's names, not from planned_action.)
func createsOf(rows []InstanceRow, listed bool) map[string]engine.Planned {
	if !listed {
		return nil
	}
	out := make(map[string]engine.Planned, len(rows))
	for _, r := range rows {
		out[r.Name] = engine.Planned{Kind: engine.PlannedCreate}
	}
	return out
}
