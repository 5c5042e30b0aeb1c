package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// StepError is an operation that failed at one of its steps.
type StepError struct {
	Op   engine.Operation
	Step string
	// Down is true when the member had been stopped or removed when the step failed: the next
	// apply creates or starts it again.
	Down bool
	Err  error
}

func (e *StepError) Error() string {
	return fmt.Sprintf("%s of %s failed at step %q: %v", e.Op.Kind, e.Op.Name, e.Step, e.Err)
}

func (e *StepError) Unwrap() error { return e.Err }

// Outcome is what the failure left of the member (engine.OutcomeOfFailure).
func (e *StepError) Outcome() engine.FailedOutcome {
	var notReady *NotReadyError
	return engine.OutcomeOfFailure(e.Op.Kind, e.Down, errors.As(e.Err, &notReady))
}

// RolloutError is a plan stopped at its first failure: what was done, what failed, and what was
// left untouched.
type RolloutError struct {
	Wave, Waves int
	Failed      []*StepError
	Done        []string
	NotStarted  []string
	// Created names the members the run created before it stopped.
	Created []string
	// Started names the members whose operations started, in this wave and before (those that
	// finished too): what a rollback puts back.
	Started []string
	// Ran names the members any of whose tasks ran, in this wave and before: Started and those
	// only asked to shut down. The objects the others would have made were never made
	// (engine's InventoryAfterStop).
	Ran []string
}

func (e *RolloutError) Error() string {
	var b strings.Builder
	// A run whose only failures are new members is a creation that stopped, not a rollout: no
	// member that existed was touched by the failure.
	allNew := len(e.Failed) > 0
	for _, f := range e.Failed {
		if f.Outcome() != engine.FailedNotCreated {
			allNew = false
		}
	}
	if allNew {
		fmt.Fprintf(&b, "the apply stopped in wave %d of %d. ", e.Wave, e.Waves)
	} else {
		fmt.Fprintf(&b, "the rollout stopped in wave %d of %d. ", e.Wave, e.Waves)
	}
	for _, f := range e.Failed {
		switch f.Outcome() {
		case engine.FailedNotCreated:
			fmt.Fprintf(&b, "Member %s was not created: step %q failed: %v; the next apply creates it. ", f.Op.Name, f.Step, f.Err)
			continue
		case engine.FailedNotReady:
			b.WriteString(f.Error())
			b.WriteString(" (the member runs as changed and is not ready; the rollout stopped so that no other member is changed). ")
		case engine.FailedDown:
			b.WriteString(f.Error())
			b.WriteString(" (the member was down at that point; the next apply brings it back). ")
		case engine.FailedKept:
			b.WriteString(f.Error())
			b.WriteString(" (the member had not been stopped and keeps its previous state). ")
		}
	}
	if len(e.Done) > 0 {
		fmt.Fprintf(&b, "Done before the failure: %s. ", strings.Join(e.Done, ", "))
	}
	if len(e.NotStarted) > 0 {
		fmt.Fprintf(&b, "Not started, left as they were: %s. ", strings.Join(e.NotStarted, ", "))
	}
	switch {
	case allNew && len(e.NotStarted) > 0:
		b.WriteString("The next apply plans again from what is on the host and does what was not started too.")
	case allNew:
		// Each failure said what the next apply does.
	default:
		b.WriteString("The next apply plans again from what is on the host and finishes the rollout.")
	}
	return b.String()
}

// Unwrap gives the failures, so that errors.Is sees their causes.
func (e *RolloutError) Unwrap() []error {
	out := make([]error, len(e.Failed))
	for i, f := range e.Failed {
		out[i] = f
	}
	return out
}

func opLabel(op engine.Operation) string {
	if op.Name == "" {
		return op.Kind.String() + " " + op.Reason
	}
	return op.Name + " (" + op.Kind.String() + ")"
}

// Execute runs the plan's waves in order, each with one bounded fan-out. Wave k+1 starts only
// when every operation of wave k succeeded; on the first failure no further operation starts,
// those under way finish, and the error says what was done and what was not. Within a wave, the
// operations' early tasks (the shutdown requests of members going away) all run before any
// operation's own tasks, so that their waits overlap whatever the fan-out's bound. Execute
// decides nothing: every operation is carried out as the engine listed its tasks.
func (r *Reconciler) Execute(ctx context.Context, s engine.GroupState, plan engine.GroupPlan) error {
	total := plan.Ops()
	var finished atomic.Int32
	var done, created, started, ran []string
	requests := newShutdowns()
	for k, w := range plan.Waves {
		tflog.Info(ctx, fmt.Sprintf("wave %d of %d", k+1, len(plan.Waves)), map[string]any{"group": s.Group.Name, "operations": len(w.Ops)})
		if len(w.Ops) > 0 {
			noteStarted(ctx)
		}
		wr := newWaveRun(r, s, w, requests)
		err := wr.phase(ctx, func(op engine.Operation) []engine.Task { return op.Early }, nil)
		if err == nil {
			err = wr.phase(ctx, func(op engine.Operation) []engine.Task { return op.Tasks }, func(op engine.Operation) {
				n := finished.Add(1)
				msg := fmt.Sprintf("instance %d of %d %s", n, total, op.Kind.Done())
				tflog.Info(ctx, msg,
					map[string]any{"group": s.Group.Name, "instance": op.Name, "operation": op.Kind.String(), "reason": op.Reason, "wave": k + 1})
				progressed(ctx, msg, op)
			})
		}
		var deleted []engine.Operation
		for i, op := range w.Ops {
			if wr.started[i] || wr.ok[i] {
				started = append(started, op.Name)
			}
			if wr.started[i] || wr.ok[i] || wr.requested[i] {
				ran = append(ran, op.Name)
			}
			if wr.ok[i] {
				done = append(done, opLabel(op))
				if op.Kind == engine.OpCreate {
					created = append(created, op.Name)
				}
				if op.Sweep {
					deleted = append(deleted, op)
				}
			}
		}
		if serr := r.sweepDeleted(ctx, s, deleted); serr != nil && err == nil {
			err = serr
			wr.failed = append(wr.failed, &StepError{Op: deleted[0], Step: "check that the deleted members are gone", Err: serr})
		}
		if err != nil {
			re := &RolloutError{Wave: k + 1, Waves: len(plan.Waves), Failed: wr.failed, Done: done, Created: created, Started: started, Ran: ran}
			for i, op := range w.Ops {
				switch {
				case wr.started[i]:
				case wr.requested[i]:
					re.NotStarted = append(re.NotStarted, opLabel(op)+" (asked to shut down)")
				default:
					re.NotStarted = append(re.NotStarted, opLabel(op))
				}
			}
			for _, later := range plan.Waves[k+1:] {
				for _, op := range later.Ops {
					re.NotStarted = append(re.NotStarted, opLabel(op))
				}
			}
			tflog.Error(ctx, "rollout stopped", map[string]any{"group": s.Group.Name, "wave": k + 1, "error": re.Error()})
			return re
		}
	}
	return nil
}

// sweepDeleted makes sure the members the wave deleted are gone. A member the plan saw stopped is
// undefined without a power-off first (a call per member of a large deletion), so one started
// behind Terraform's back since is left running without a definition: one listing of the host's
// transient domains finds it, and it is powered off, which removes it. A domain defined again
// under the name since is not the deleted member and is left alone.
func (r *Reconciler) sweepDeleted(ctx context.Context, s engine.GroupState, deleted []engine.Operation) error {
	byHost := map[string][]string{}
	for _, op := range deleted {
		byHost[op.Host] = append(byHost[op.Host], op.Name)
	}
	for h, names := range byHost {
		b, err := r.host(h)
		if err != nil {
			return err
		}
		running, err := b.TransientDomainNames(ctx)
		if err != nil {
			return err
		}
		for _, n := range names {
			if !running[n] {
				continue
			}
			tflog.Warn(ctx, "a deleted member is still running (started while it was being deleted): powering it off", map[string]any{"group": s.Group.Name, "instance": n, "host": engine.HostOf(h)})
			if err := b.StopDomain(ctx, n); err != nil {
				return err
			}
		}
	}
	return nil
}

// run carries out tasks of one operation on its host.
func (r *Reconciler) run(ctx context.Context, x *opRun, tasks []engine.Task) error {
	if x.backend == nil {
		b, err := r.host(x.op.Host)
		if err != nil {
			return err
		}
		x.backend = b
		tflog.Info(ctx, x.op.Kind.String()+" "+x.op.Name, map[string]any{"group": x.s.Group.Name, "instance": x.op.Name, "host": engine.HostOf(x.op.Host), "reason": x.op.Reason})
		if err := x.keepPassword(ctx); err != nil {
			return err
		}
		if err := x.keepUserData(ctx); err != nil {
			return err
		}
	}
	return x.runTasks(ctx, tasks)
}
