package engine

import (
	"fmt"
	"slices"
)

// With update_policy.on_failure = "ROLLBACK", a rollout that failed puts back the members it
// changed: each member a restart or replace of the rollout started on (in the failed wave and
// before) goes back to the template and the state its record had when the apply observed it,
// with the same kind of operation, keeping its preserved disks as any replacement does, in waves
// under max_unavailable, each member waited for until ready. A member the rollout created has no
// earlier state and is left as it is. A rollback is never rolled back: its operations are marked
// as such, and PlanRollback plans nothing for them.

// RollsBack reports whether a failed rollout under this policy is rolled back.
func (p UpdatePolicy) RollsBack() bool { return p.OnFailure == OnFailureRollback }

// RolledBack is a member a rollback puts back.
type RolledBack struct {
	Name string
	// Kind is the rollback's operation: the kind the rollout changed the member with, or a
	// creation when the member's domain is gone.
	Kind OpKind
	// Revision is the revision of the template the member goes back to.
	Revision string
}

// RollbackPlan is how a failed rollout is put back.
type RollbackPlan struct {
	// Plan holds the rollback's waves; nothing else of it is set.
	Plan GroupPlan
	// Members are the members put back, in the order they are.
	Members []RolledBack
	// Left are the members the rollout created, left as they are: there is nothing to go back to.
	Left []string
	// Unreached are the members the rollout changed whose host does not answer now: they cannot
	// be put back by this apply.
	Unreached []string
}

// PlanRollback plans the rollback of forward, a plan of s that stopped at a failure: started
// names the members whose operations started (those that finished too), now is the group's
// members as observed after the failure. The members go back in the reverse order of the
// rollout's waves (the failed wave's first: they are the ones not serving), a budget's worth
// per wave. Nothing is planned unless s's update policy rolls back, nor for a rollback.
func PlanRollback(s GroupState, forward GroupPlan, started []string, now []Observed, env Env) RollbackPlan {
	var rp RollbackPlan
	if !s.Group.Policy.RollsBack() {
		return rp
	}
	s = s.Inventoried(now, env)
	byName := make(map[string]Observed, len(now))
	for _, o := range now {
		byName[o.Name] = o
	}
	var ops []Operation
	for k := len(forward.Waves) - 1; k >= 0; k-- {
		for _, op := range forward.Waves[k].Ops {
			if op.Rollback || !slices.Contains(started, op.Name) {
				continue
			}
			switch op.Kind {
			case OpCreate:
				rp.Left = append(rp.Left, op.Name)
			case OpRestart, OpReplace:
				prev := op.Step.Current
				if prev.Current.Hash() == op.Step.Plan.Desired.Hash() && prev.TemplateRevision == op.Step.Revision {
					// A repair that changed nothing of what the member is: nothing to put back.
					continue
				}
				o, present := byName[op.Name]
				if present && o.Unknown {
					rp.Unreached = append(rp.Unreached, op.Name)
					continue
				}
				if present && untouched(o, op) {
					// Its operation failed before its in-flight marker, the first thing it
					// writes (a pool without room for its snapshot, an image that could not be
					// staged): the member runs on as it was, and a rollback would only disrupt it.
					continue
				}
				back := rollbackOp(s, op, o, present, env)
				ops = append(ops, back)
				rp.Members = append(rp.Members, RolledBack{Name: op.Name, Kind: back.Kind, Revision: prev.TemplateRevision})
			default:
			}
		}
	}
	slices.Sort(rp.Left)
	for chunk := range slices.Chunk(ops, s.Group.Policy.Budget(s.Group.TargetSize)) {
		rp.Plan.Waves = append(rp.Plan.Waves, Wave{Ops: chunk})
	}
	return rp
}

// rollbackOp puts back the member forward changed: to its record as the apply observed it
// (forward's Step.Current), from the member as it is now, o (present false: its domain is gone).
// The action is at least forward's, so that a replacement is undone by a replacement: a new boot
// volume from the old image, the stateless volumes made again, the preserved ones kept.
func rollbackOp(s GroupState, forward Operation, o Observed, present bool, env Env) Operation {
	prev := forward.Step.Current
	why := fmt.Sprintf("rollback to template revision %s", prev.TemplateRevision)
	plan := InstancePlan{
		Desired: prev.Current, PreservedFromPolicy: prev.PreservedFromPolicy, PreservedFromConfig: prev.PreservedFromConfig,
		Allowed: ActionReplace, Hash: prev.Current.Hash(), Changed: true,
	}
	if !present {
		// Gone (a replacement failed between the undefinition and the definition): made again
		// as it was, its volumes reused as a creation reuses them.
		plan.Needed, plan.Action = ActionReplace, ActionReplace
		plan.Reasons = []Reason{{Action: ActionReplace, What: why + " (definition missing)"}}
		back := s
		back.Group.Template = prev.Template
		m := NewMember{Name: forward.Name, Index: forward.Index, Plan: plan, Host: forward.Host}
		return back.withTasks(env.imaged(s.Group, Operation{Kind: OpCreate, Name: m.Name, Index: m.Index, New: m, Host: m.Host, Reason: plan.Reasons[0].What,
			Power: s.Group.DesiredStatus(), Volumes: creationVolumes(prev.Current, prev.Template, env), Seed: creationSeed(prev.Current), NVRAM: creationNVRAM(prev.Current), Rollback: true,
			Reverts: forwardSnapshots(forward)}))
	}
	needed, _ := o.Instance.diff(prev.Current)
	plan.Needed = needed
	plan.Action = MaxAction(MaxAction(needed, forward.Step.Action), ActionRestart)
	plan.Reasons = []Reason{{Action: plan.Action, What: why}}
	st := Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance, Plan: plan, Action: plan.Action,
		Template: prev.Template, Revision: prev.TemplateRevision, Observed: o.Status}
	var op Operation
	if plan.Action == ActionReplace {
		op = replaceOp(s, o, st, env)
	} else {
		op = restartOp(s, o, st, env)
	}
	op.Rollback = true
	// The rollback takes no snapshot of its own: it puts back the rollout's.
	op.Snapshots, op.Reverts = nil, forwardSnapshots(forward)
	return s.withTasks(env.imaged(s.Group, op))
}

// untouched reports whether the member is still exactly what forward's operation found: the same
// domain, no in-flight marker, its record on the template and state it had.
func untouched(o Observed, forward Operation) bool {
	prev := forward.Step.Current
	return o.Instance.InFlight == nil && o.UUID == forward.Step.UUID && o.Instance.TemplateRevision == prev.TemplateRevision &&
		o.Instance.Current.Hash() == prev.Current.Hash()
}
