package engine

// ManagedInstance is an instance as it is now: the domain as it stands (its disks, metadata and
// attributes, in Current) and the bookkeeping recorded with it.
type ManagedInstance struct {
	Current             DesiredInstance
	PreservedFromPolicy PreservedState
	PreservedFromConfig PreservedState
	TemplateRevision    string
	LastAppliedHash     string
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
	Reasons []Reason
	Hash    string
}

// PlanInstance decides what one instance needs, given the template, the stateful policy, its
// per-instance config and the two bounds on the action. An instance that needs nothing gets NONE
// even when the minimal action is higher: the minimal action applies to instances that change.
func PlanInstance(mi ManagedInstance, t Template, p Policy, c InstanceConfig, minimal, allowed Action) InstancePlan {
	fromPolicy, fromConfig := Preserve(mi.Current.Name, t, p, c)
	desired := Desire(mi.Current.Name, t, fromPolicy, fromConfig)
	needed, reasons := InstanceDiff(mi.Current, desired)
	plan := InstancePlan{
		Desired: desired, PreservedFromPolicy: fromPolicy, PreservedFromConfig: fromConfig,
		Needed: needed, Action: needed, Reasons: reasons, Hash: desired.Hash(),
	}
	if len(reasons) > 0 || mi.LastAppliedHash != plan.Hash {
		plan.Action = MaxAction(needed, minimal)
	}
	plan.Blocked = plan.Action > allowed
	return plan
}

// Applied is the managed instance once the plan has been carried out.
func (p InstancePlan) Applied(revision string) ManagedInstance {
	return ManagedInstance{
		Current: p.Desired, PreservedFromPolicy: p.PreservedFromPolicy, PreservedFromConfig: p.PreservedFromConfig,
		TemplateRevision: revision, LastAppliedHash: p.Hash,
	}
}
