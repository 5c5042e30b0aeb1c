package providerdata

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// GroupChange is one change of a group by one of its resources: what it writes in the group
// record (mutate), under which ownership claim (nil: the group's policy and configs, which do
// not own it), and the check its plan must pass before anything is written (nil: none).
type GroupChange struct {
	Group string
	// Pool is where a group that has no record yet gets one.
	Pool  string
	Claim *engine.Claim
	// Apply=false stores the change only.
	Apply  bool
	Mutate func(s *engine.GroupState, exists bool) error
	Check  func(engine.GroupPlan) error
	// RolledBack, when set, is written to the record after a rollout that failed was rolled
	// back (update_policy.on_failure = "ROLLBACK"): the record goes back to the template its
	// members are on again.
	RolledBack func(s *engine.GroupState, exists bool) error
}

// ChangeAndApply stores mutate's change in the group record and reconciles the group (see
// run): the change of a policy or a per-instance config. stored tells whether the record now
// holds the change, so that Terraform state is saved for the next apply to finish what failed.
func (d *ProviderData) ChangeAndApply(ctx context.Context, group, pool string, apply bool, mutate func(s *engine.GroupState, exists bool) error) (s engine.GroupState, stored bool, err error) {
	return d.Run(ctx, GroupChange{Group: group, Pool: pool, Apply: apply, Mutate: mutate})
}

// Run is the one group transaction every resource's change goes through:
//
//	hold -> read -> change -> plan -> check -> write -> execute [-> roll back, write back] -> release
//
// The hold serialises this provider's changes to the group and takes the group's lease (one
// read of the record, one write); everything after it starts from the record as the hold wrote
// it (reconcile's held record), so the apply reads the record once. With a check, the change is
// planned before it is written, from the members the plan of this process observed when they
// still hold (holdObserved), and the plan checked: a refused apply leaves the record as it found
// it. The plan that was checked is the plan that runs, unless the record the write started from
// was not the one planned (then the group is planned again, and checked again). Release gives
// the lease back. A rollout rolled back has its change of the record written back (rolledBack)
// before the release, under the same lease.
func (d *ProviderData) Run(ctx context.Context, c GroupChange) (s engine.GroupState, stored bool, err error) {
	held, release, prior, err := d.holdObserved(ctx, c.Group, c.Claim, false)
	if err != nil {
		return s, false, err
	}
	finished := false
	defer func() { release(finished) }()
	var planned *plannedChange
	if c.Check != nil {
		if planned, err = d.planChange(held, c.Group, prior, c.Mutate, c.Check); err != nil {
			return s, false, LeaseCause(held, err)
		}
	}
	s, err = d.Reconciler.ChangeAs(held, c.Group, c.Pool, c.Claim, c.Mutate)
	if err != nil || !c.Apply {
		finished = err == nil
		return s, err == nil, LeaseCause(held, err)
	}
	switch groupproto.Apply(planned != nil, planned != nil && reflect.DeepEqual(planned.s, s)) {
	case groupproto.ApplyThisPlan:
		err = d.Reconciler.ApplyPlanned(held, s, planned.o, planned.p)
	case groupproto.ApplyPlanAgain:
		tflog.Debug(held, "the record written is not the one planned: planning the group again", map[string]any{"group": c.Group})
		err = d.Reconciler.ApplyObserved(held, s, &planned.o, c.Check)
	case groupproto.ApplyObserve:
		err = d.Reconciler.ApplyObserved(held, s, nil, c.Check)
	}
	var rb *reconcile.RollbackError
	if errors.As(err, &rb) && rb.Reverted() && c.RolledBack != nil {
		back, werr := d.Reconciler.ChangeAs(held, c.Group, c.Pool, c.Claim, c.RolledBack)
		if werr != nil {
			err = errors.Join(err, fmt.Errorf("the group's record could not be written back to its previous template after the rollback: %w", werr))
		} else {
			s = back
		}
	}
	finished = err == nil
	return s, true, LeaseCause(held, err)
}

// plannedChange is a change planned before its record is written: the group as the write is to
// leave it, the members observed, and the plan.
type plannedChange struct {
	s engine.GroupState
	o reconcile.Observation
	p engine.GroupPlan
}

// planChange plans the group as mutate would leave it, without writing anything, and returns
// the plan with check's verdict on it. The members are prior when it is an observation of the
// same members (holdObserved), else observed now. A group without a record has nothing to check
// (nil).
func (d *ProviderData) planChange(ctx context.Context, group string, prior *observed, mutate func(s *engine.GroupState, exists bool) error, check func(engine.GroupPlan) error) (*plannedChange, error) {
	s, found, err := d.LoadGroup(ctx, group)
	if err != nil || !found {
		return nil, err
	}
	if err := mutate(&s, true); err != nil {
		return nil, err
	}
	c := plannedChange{s: s}
	switch groupproto.Source(prior.holds(s)) {
	case groupproto.PlanFromCache:
		// The plan of this process planned this very group from these members, under the
		// record generation the lease was taken on: it is the plan that was shown.
		tflog.Debug(ctx, "the apply runs the plan its plan made", map[string]any{"group": group})
		c.p, c.o = *prior.plan, prior.o
	case groupproto.PlanFromObservation:
		tflog.Debug(ctx, "the apply starts from the members its plan observed", map[string]any{"group": group})
		c.p, c.o = d.Reconciler.PlanFrom(s, prior.o), prior.o
	default:
		if c.p, c.o, err = d.Reconciler.Preview(ctx, s); err != nil {
			return nil, err
		}
	}
	if len(c.p.Blocked) > 0 {
		return nil, &reconcile.BlockedError{Blocked: c.p.Blocked}
	}
	return &c, check(c.p)
}
