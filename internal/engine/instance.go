package engine

import "slices"

// ManagedInstance is an instance as it is now: the domain as it stands (its disks, metadata and
// attributes, in Current) and the bookkeeping recorded with it.
type ManagedInstance struct {
	Current             DesiredInstance
	PreservedFromPolicy PreservedState
	PreservedFromConfig PreservedState
	// Template is the template the instance was last built or updated from.
	Template         Template
	TemplateRevision string
	LastAppliedHash  string
	// InFlight is the target of a change that was started and not finished: the domain may be
	// anywhere between Current and InFlight. Nil when no change is under way.
	InFlight       *DesiredInstance
	InFlightAction Action
	// Created is when the member's domain was last created (a replacement creates it again), in
	// Unix milliseconds; 0 when unknown (a record written before it was kept). Scale-in by age reads it.
	Created int64
	// Heals is how many autoheal replacements were started in a row, and LastHeal when the last
	// one started (Unix milliseconds); both are written before the replacement starts, so that a
	// failed one counts too, for every run of Terraform on every machine.
	Heals    int
	LastHeal int64
	// Move is the move between hosts under way: written on the source domain's record before
	// the member stops, and on the target's definition once its volumes are copied and checked;
	// nil when the member is not moving.
	Move *Move
	// Preserved is how the member is preserved (NOW, WHEN_FAILED, AUTO) or ""; PreservedSince
	// when that began, in Unix milliseconds.
	Preserved      string
	PreservedSince int64
}

// Move is a member's move between hosts: from the host it was on to the one it goes to, live
// (libvirt migration) or cold (stop, copy and verify every volume, define and start there).
type Move struct {
	From string
	To   string
	Live bool
}

// InstancePlan is what an instance needs to reach its desired state.
type InstancePlan struct {
	Desired             DesiredInstance
	PreservedFromPolicy PreservedState
	PreservedFromConfig PreservedState
	// Needed is the least action that reaches Desired; Action is Needed raised by the minimal
	// action. When Action exceeds the most disruptive allowed action, Blocked is true and nothing
	// may be done to the instance.
	Needed  Action
	Action  Action
	Blocked bool
	Allowed Action
	Reasons []Reason
	Hash    string
	// Changed is true when anything must be written to the instance, even when it costs NONE.
	Changed bool
}

// NewInstancePlan is the plan of an instance that does not exist yet.
func NewInstancePlan(name string, t Template, p Policy, c InstanceConfig) InstancePlan {
	fromPolicy, fromConfig := Preserve(name, t, p, c)
	desired := Desire(name, t, fromPolicy, fromConfig)
	return InstancePlan{
		Desired: desired, PreservedFromPolicy: fromPolicy, PreservedFromConfig: fromConfig,
		Action: ActionReplace, Needed: ActionReplace, Allowed: ActionReplace, Hash: desired.Hash(), Changed: true,
	}
}

// PlanInstance decides what one instance needs, given the template, the stateful policy, its
// per-instance config and the two bounds on the action. An instance that needs nothing gets NONE
// even when the minimal action is higher: the minimal action applies to instances that change.
//
// A change that was interrupted (InFlight set) leaves the domain somewhere between its recorded
// state and the interrupted target, so the plan covers both: the action is the larger of what
// each needs to reach the desired state. This is what makes a revert after a failed apply safe.
func PlanInstance(mi ManagedInstance, t Template, p Policy, c InstanceConfig, minimal, allowed Action) InstancePlan {
	name := mi.Current.Name
	fromPolicy, fromConfig := Preserve(name, t, p, c)
	full := Desire(name, t, fromPolicy, fromConfig)
	desired := keepUnpreservedSources(full, mi.Current)
	needed, reasons := mi.diff(desired)
	if t.Adopted {
		// An adopted domain is never redefined: only live changes reach it.
		allowed = MinAction(allowed, ActionRefresh)
	}
	plan := InstancePlan{
		Desired: desired, PreservedFromPolicy: fromPolicy, PreservedFromConfig: fromConfig,
		Needed: needed, Action: needed, Reasons: reasons, Hash: desired.Hash(), Allowed: allowed,
	}
	plan.Changed = len(reasons) > 0 || mi.LastAppliedHash != plan.Hash
	if plan.Changed && !mi.policyOnly(t, fromConfig, desired) {
		// The minimal action applies to template and config changes: a stateful policy change is
		// bookkeeping and never disrupts a member.
		plan.Action = MaxAction(needed, minimal)
	}
	if plan.Action == ActionReplace && full.Hash() != desired.Hash() {
		// A recreation builds the template's own volumes where a config's volume was kept
		// attached after the config let it go.
		plan.Desired, plan.Hash = full, full.Hash()
		plan.Needed, plan.Reasons = mi.diff(full)
		plan.Needed = MaxAction(plan.Needed, needed)
	}
	plan.Blocked = plan.Action > allowed
	return plan
}

// diff is what the instance needs to reach desired. A change that was interrupted (InFlight set)
// leaves the domain somewhere between its recorded state and the interrupted target, so the
// diff covers both: the larger of what each needs.
func (mi ManagedInstance) diff(desired DesiredInstance) (Action, []Reason) {
	needed, reasons := InstanceDiff(mi.Current, desired)
	if mi.InFlight != nil {
		settle, more := InstanceDiff(*mi.InFlight, desired)
		what := "interrupted " + mi.InFlightAction.String() + " settled"
		if len(more) > 0 {
			what += " (" + JoinReasons(more) + ")"
		}
		settle = MaxAction(settle, ActionRefresh)
		reasons = append(reasons, Reason{Action: settle, What: what})
		needed = MaxAction(needed, settle)
	}
	return needed, reasons
}

// policyOnly reports whether the only change is the stateful policy's: the same instance planned
// with the policy part it was last built with would need nothing.
func (mi ManagedInstance) policyOnly(t Template, fromConfig PreservedState, desired DesiredInstance) bool {
	if mi.InFlight != nil || mi.LastAppliedHash == "" {
		return false
	}
	before := keepUnpreservedSources(Desire(desired.Name, t, mi.PreservedFromPolicy, fromConfig), mi.Current)
	_, reasons := InstanceDiff(mi.Current, before)
	return len(reasons) == 0 && before.Hash() == mi.LastAppliedHash
}

// keepUnpreservedSources keeps a disk that a config had swapped in attached as it is once
// neither the config nor the policy preserves it any more: the template defines the device, the
// disk becomes stateless, and the user's volume is replaced by the template's own only when the
// instance is next recreated (first reference document).
func keepUnpreservedSources(desired, current DesiredInstance) DesiredInstance {
	out := desired
	out.Disks = slices.Clone(desired.Disks)
	for i, d := range out.Disks {
		if d.Preserved || d.Source != VolumeName(desired.Name, d.DeviceName) {
			continue
		}
		if c, ok := current.DiskByName(d.DeviceName); ok && c.Source != d.Source {
			out.Disks[i] = DesiredDisk{DeviceName: d.DeviceName, Source: c.Source, ReadOnly: c.ReadOnly}
		}
	}
	return out
}

// Applied is the managed instance once the plan has been carried out.
func (p InstancePlan) Applied(t Template) ManagedInstance { return p.appliedAs(t, t.Revision()) }

// appliedAs is Applied with the template's revision already worked out: the plan builds every
// changed member's record, and hashing the same template once per member would cost a large
// group's plan a JSON encoding per member.
func (p InstancePlan) appliedAs(t Template, rev string) ManagedInstance {
	return ManagedInstance{
		Current: p.Desired, PreservedFromPolicy: p.PreservedFromPolicy, PreservedFromConfig: p.PreservedFromConfig,
		Template: t.Canonical(), TemplateRevision: rev, LastAppliedHash: p.Hash,
	}
}
