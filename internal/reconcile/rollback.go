package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// RollbackError is a rollout that failed and was rolled back (update_policy.on_failure =
// "ROLLBACK"): why it failed, which members went back to which template, which it created and
// left, and whether the rollback itself completed.
type RollbackError struct {
	// Rollout is the failure of the rollout.
	Rollout *RolloutError
	// Plan is the rollback as the engine planned it.
	Plan engine.RollbackPlan
	// Err is the rollback's own failure (a *RolloutError, or the observation it is planned
	// from that failed); nil when the rollback completed. It is never rolled back.
	Err error
}

// Reverted reports whether the rollback set out to put members back on their previous template:
// then the group's record and the resource's state go back to that template too. A rollback with
// no member to put back (the rollout failed before it changed any) leaves them as a stop does.
func (e *RollbackError) Reverted() bool { return len(e.Plan.Members) > 0 }

// Completed reports whether the rollback put back every member it planned to.
func (e *RollbackError) Completed() bool { return e.Err == nil }

func (e *RollbackError) Error() string {
	var b strings.Builder
	b.WriteString("the rollout failed and was rolled back (update_policy.on_failure = \"ROLLBACK\"). Why: ")
	for i, f := range e.Rollout.Failed {
		if i > 0 {
			b.WriteString("; ")
		}
		b.WriteString(f.Error())
	}
	b.WriteString(". ")
	var back []string
	for _, m := range e.Plan.Members {
		back = append(back, fmt.Sprintf("%s to template revision %s (%s)", m.Name, m.Revision, m.Kind))
	}
	switch {
	case len(back) > 0 && e.Err == nil:
		fmt.Fprintf(&b, "Rolled back: %s. ", strings.Join(back, ", "))
	case len(back) > 0:
		fmt.Fprintf(&b, "To roll back: %s. ", strings.Join(back, ", "))
	default:
		b.WriteString("No member needed rolling back. ")
	}
	if len(e.Plan.Left) > 0 {
		fmt.Fprintf(&b, "Created by this apply and left as they are (they had no earlier template): %s. ", strings.Join(e.Plan.Left, ", "))
	}
	if len(e.Plan.Unreached) > 0 {
		fmt.Fprintf(&b, "Not rolled back, their host does not answer: %s. ", strings.Join(e.Plan.Unreached, ", "))
	}
	if e.Err != nil {
		fmt.Fprintf(&b, "The rollback itself failed and stopped there (a rollback is never rolled back): %s.", strings.TrimSuffix(e.Err.Error(), "."))
		// A rollout's error already says what the next apply does.
		if re := (*RolloutError)(nil); !errors.As(e.Err, &re) {
			b.WriteString(" The next apply plans again from what is on the hosts.")
		}
		return b.String()
	}
	b.WriteString("The rollback completed: the group keeps its previous template, and the next plan shows the new one still wanted.")
	return b.String()
}

// Unwrap gives the rollout's failure and the rollback's, so that errors.As finds the step that
// failed.
func (e *RollbackError) Unwrap() []error {
	if e.Err == nil {
		return []error{e.Rollout}
	}
	return []error{e.Rollout, e.Err}
}

// rollback puts back what the failed rollout re of plan changed, as the engine plans it from the
// members as they are now, when the group's update policy says so; else it returns re. The
// rollback's own failure stops it: it is never rolled back.
func (r *Reconciler) rollback(ctx context.Context, s engine.GroupState, plan engine.GroupPlan, re *RolloutError) error {
	if !s.Group.Policy.RollsBack() {
		return re
	}
	tflog.Warn(ctx, "rolling back the rollout", map[string]any{"group": s.Group.Name, "changed": strings.Join(re.Started, ", ")})
	// The rollback is planned from the members' records and states: it needs no probe. (Where
	// the observation probes members, this is the observation without probes: probing members
	// the rollout just left unhealthy would spend the whole probe bound for nothing.)
	o, err := r.observe(ctx, s)
	if err != nil {
		return &RollbackError{Rollout: re, Err: fmt.Errorf("cannot read the members to roll back: %w", err)}
	}
	env := r.Env
	env.Now, env.Volumes, env.Hosts, env.Taken, env.Down = r.now(), o.Volumes, r.HostNames(), o.Taken, o.DownHosts()
	env.HostVolumes, env.SnapshotTags = o.HostVolumes, o.SnapshotTags
	rb := engine.PlanRollback(o.withInventory(s), plan, re.Started, o.Observed, env)
	err = r.Execute(ctx, s, rb.Plan)
	e := &RollbackError{Rollout: re, Plan: rb, Err: err}
	if err != nil {
		tflog.Error(ctx, "rollback stopped", map[string]any{"group": s.Group.Name, "error": err.Error()})
	} else {
		tflog.Warn(ctx, "rollback completed", map[string]any{"group": s.Group.Name, "members": len(rb.Members)})
	}
	return e
}
