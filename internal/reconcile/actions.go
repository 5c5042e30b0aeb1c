package reconcile

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// PlanAction plans a member action on the group's named members from what the hosts have now
// (engine.PlanMemberAction): the engine decides what each member gets, or refuses the action.
// It changes nothing; run it under the group's lease, and run its plan with Execute.
func (r *Reconciler) PlanAction(ctx context.Context, s engine.GroupState, action engine.MemberAction, names []string) (engine.ActionPlan, Observation, error) {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return engine.ActionPlan{}, o, err
	}
	ap, err := engine.PlanMemberAction(o.withInventory(s), o.Observed, action, names, r.planEnv(o))
	return ap, o, err
}

// planEnv is what a plan made from the observation o depends on besides the record.
func (r *Reconciler) planEnv(o Observation) engine.Env {
	env := r.Env
	env.Now, env.Volumes, env.Hosts, env.Taken, env.Down = r.now(), o.Volumes, r.HostNames(), o.Taken, o.DownHosts()
	env.HostUUIDs, env.HostVolumes = o.HostUUIDs, o.HostVolumes
	env.Images, env.SnapshotTags = o.Images, o.SnapshotTags
	if env.NewUUID == nil {
		env.NewUUID = newUUID
	}
	return env
}

// Progress is told, as each operation of a plan finishes, what Execute logs of it ("instance 1
// of 2 replaced"); see WithProgress.
type Progress func(msg string, op engine.Operation)

type progressKey struct{}

// WithProgress has Execute tell p of each operation it finishes, under ctx: what a Terraform
// action reports to the user as it runs.
func WithProgress(ctx context.Context, p Progress) context.Context {
	return context.WithValue(ctx, progressKey{}, p)
}

// progressed tells the Progress ctx carries, if any, that op finished.
func progressed(ctx context.Context, msg string, op engine.Operation) {
	if p, ok := ctx.Value(progressKey{}).(Progress); ok && p != nil {
		p(msg, op)
	}
}

type startedKey struct{}

// WithStarted has Execute note, under the returned context, that it started an operation on a
// member (Started), so that an error can say whether anything was done before it.
func WithStarted(ctx context.Context) context.Context {
	return context.WithValue(ctx, startedKey{}, new(atomic.Bool))
}

// Started reports whether Execute started an operation under ctx (see WithStarted); false when
// ctx carries no tracker.
func Started(ctx context.Context) bool {
	b, ok := ctx.Value(startedKey{}).(*atomic.Bool)
	return ok && b.Load()
}

// noteStarted tells the tracker ctx carries, if any, that an operation started.
func noteStarted(ctx context.Context) {
	if b, ok := ctx.Value(startedKey{}).(*atomic.Bool); ok {
		b.Store(true)
	}
}

// Warn is told what an apply did otherwise than its plan said, and why, for the user to see in
// Terraform's output (a live move libvirt refused, which went on cold); see WithWarnings.
type Warn func(summary, detail string)

type warnKey struct{}

// WithWarnings has Execute tell w, under ctx, what it did otherwise than planned.
func WithWarnings(ctx context.Context, w Warn) context.Context {
	return context.WithValue(ctx, warnKey{}, w)
}

func warned(ctx context.Context, summary, detail string) {
	if w, ok := ctx.Value(warnKey{}).(Warn); ok && w != nil {
		w(summary, detail)
	}
}

// logAction logs the start of an action's plan.
func logAction(ctx context.Context, s engine.GroupState, action engine.MemberAction, p engine.GroupPlan) {
	tflog.Info(ctx, "running an action on members of the group", map[string]any{
		"group": s.Group.Name, "action": action.String(), "waves": len(p.Waves), "operations": p.Ops(),
	})
}

// RunAction executes an action's plan (PlanAction) as Execute runs any plan, under the group's
// lease: wave after wave, stopping at the first failure, what was done marked on each member.
func (r *Reconciler) RunAction(ctx context.Context, s engine.GroupState, action engine.MemberAction, p engine.GroupPlan) error {
	logAction(ctx, s, action, p)
	// The action's objects are in the group's inventory as intents before it runs, and
	// confirmed after, as an apply's are (ApplyPlanned).
	if err := r.keepInventory(ctx, &s, p.Inventory); err != nil {
		return err
	}
	if err := r.Execute(ctx, s, p); err != nil {
		return err
	}
	return r.keepInventory(ctx, &s, p.FinalInventory)
}

// keepInventory writes the group's inventory to its record when it changed, and into s.
func (r *Reconciler) keepInventory(ctx context.Context, s *engine.GroupState, inv engine.Inventory) error {
	if s.Inventory.Equal(inv) {
		return nil
	}
	_, err := r.changeStored(ctx, s.Group.Name, s.Pool, nil, func(st *stored, exists bool) error {
		if !exists {
			// No record to keep it in, as place finds (PlacementNotNeeded).
			return errNoPlacement
		}
		st.Inventory = inv
		return nil
	}, true)
	switch {
	case errors.Is(err, errNoPlacement):
		return nil
	case err == nil:
		s.Inventory = inv
	}
	return err
}

// newUUID is a random (version 4) UUID for a new domain's definition.
func newUUID() string {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		// crypto/rand does not fail on the systems Go supports; libvirt then chooses one.
		return ""
	}
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}
