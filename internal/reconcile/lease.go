package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultLeaseTTL is how long a lease lasts without renewal. A holder renews it every quarter of
// that while it works, so a holder killed with SIGKILL blocks other writers for at most this long.
const DefaultLeaseTTL = 60 * time.Second

// stored is the group record as reconcile reads and writes it, through store.DecodeGroup and
// store.EncodeGroup.
type stored = engine.GroupRecord

// Meta is what the group record says about who may change the group.
type Meta struct {
	Owner *engine.Owner
	Lease *engine.Lease
	// Generation is the record's generation: every write makes a new one, and every change a
	// provider makes to a group's members happens between two writes (taking and giving back
	// the lease).
	Generation int64
}

// CheckClaim tells, without writing anything, whether a change made now under c would be
// refused by the group's record (m, exists): the plan-time twin of what every write checks.
func (r *Reconciler) CheckClaim(group string, m Meta, exists bool, c engine.Claim) error {
	_, err := engine.ClaimOwner(group, m.Owner, exists, c, r.now())
	return err
}

// CheckLease tells, without writing anything, whether another apply holds the group's lease now.
func (r *Reconciler) CheckLease(group string, m Meta) error {
	_, err := engine.TakeLease(group, m.Lease, r.me(), r.now(), r.leaseTTL(), r.HolderGone)
	return err
}

// now is the reconciler's clock.
func (r *Reconciler) now() time.Time {
	if r.Now != nil {
		return r.Now()
	}
	return time.Now()
}

// me is the lease this reconciler takes, undated.
func (r *Reconciler) me() engine.Lease {
	return engine.Lease{Holder: r.Holder, Host: r.HolderHost, PID: r.HolderPID}
}

func (r *Reconciler) leaseTTL() time.Duration {
	if r.LeaseTTL > 0 {
		return r.LeaseTTL
	}
	return DefaultLeaseTTL
}

// errNoRecord stops a lease renewal of a group that has no record (yet, or any more).
var errNoRecord = errors.New("no group record")

// existing is the change that only takes the lease: it writes nothing where there is no record.
func existing(_ *stored, exists bool) error {
	if !exists {
		return errNoRecord
	}
	return nil
}

// ReleaseBound is the most giving a lease back waits for its host. It is shorter than the grace
// the plugin gives its calls in flight when Terraform is gone (main.go), so that an apply cut off
// then still gives its lease back before the plugin exits.
const ReleaseBound = 20 * time.Second

// Hold takes the group's lease for this reconciler's Holder and keeps renewing it until release
// is called; claim, when not nil, is checked and recorded as the group's owner. A group without a
// record gets its lease with the first change that creates the record. The returned context ends
// when the lease is lost (another apply took it after it expired unrenewed), so that the work
// done under it stops. release(finished) gives the lease back; finished also marks a creation
// as complete.
func (r *Reconciler) Hold(ctx context.Context, group string, claim *engine.Claim) (context.Context, func(finished bool), error) {
	held, release, _, err := r.HoldFrom(ctx, group, claim)
	return held, release, err
}

// HoldFrom is Hold that also tells the generation of the group record the lease was taken on (0:
// the group has no record yet). When it is the generation an observation of the members was made
// under (Meta.Generation), no provider changed them in between.
func (r *Reconciler) HoldFrom(ctx context.Context, group string, claim *engine.Claim) (context.Context, func(finished bool), int64, error) {
	return r.holdFrom(ctx, group, claim, existing)
}

// HoldToDestroy is HoldFrom for the group's destroy: the write that takes the lease also marks
// this run's release unfinished (engine.GroupState.DestroyBegins), so that from the moment the
// destroy holds the group, a cut-off leaves the release for the next destroy to honour.
func (r *Reconciler) HoldToDestroy(ctx context.Context, group string, claim *engine.Claim) (context.Context, func(finished bool), int64, error) {
	return r.holdFrom(ctx, group, claim, func(st *stored, exists bool) error {
		if err := existing(st, exists); err != nil {
			return err
		}
		st.DestroyBegins(r.Env.Run)
		return nil
	})
}

func (r *Reconciler) holdFrom(ctx context.Context, group string, claim *engine.Claim, mutate func(st *stored, exists bool) error) (context.Context, func(finished bool), int64, error) {
	// Everything done under the lease (its renewal and release included) starts from the
	// record as this holder last wrote it, rather than reading it again (heldRecord).
	ctx = withHeld(ctx, &heldRecord{group: group})
	var basis int64
	if claim != nil && claim.Basis != 0 {
		// Only the hold is judged against the plan's basis: the writes under it move the
		// record on.
		c := *claim
		basis, c.Basis = c.Basis, 0
		claim = &c
	}
	_, from, err := r.changeStoredFrom(ctx, group, "", claim, mutate, true)
	if err != nil && !errors.Is(err, errNoRecord) {
		return ctx, func(bool) {}, 0, err
	}
	held, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		t := time.NewTicker(r.leaseTTL() / 4)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_, err := r.changeStored(held, group, "", claim, existing, true)
				var lost *engine.LeaseError
				var owner *engine.OwnerError
				switch {
				case errors.As(err, &lost), errors.As(err, &owner):
					cancel(fmt.Errorf("lost the lease of group %s: %w", group, err))
					return
				case err != nil && !errors.Is(err, errNoRecord):
					// Renewal is retried at the next tick; the lease outlives a few failures.
					tflog.Warn(ctx, "cannot renew the group lease", map[string]any{"group": group, "error": err.Error()})
				}
			}
		}
	}()
	release := func(finished bool) {
		close(done)
		<-stopped
		cancel(nil)
		// The lease is given back even when ctx has ended, so that the next apply need not
		// wait for its expiry; a host that does not answer the release is left within
		// ReleaseBound (the lease then expires by itself), so that an apply always returns.
		rctx, rcancel := context.WithTimeout(context.WithoutCancel(ctx), ReleaseBound)
		defer rcancel()
		_, err := r.changeStored(rctx, group, "", nil, func(st *stored, _ bool) error {
			if !st.GiveBack(r.Holder, r.Env.Run, finished, claim) {
				return errNoRecord
			}
			return nil
		}, false)
		if err != nil && !errors.Is(err, errNoRecord) {
			tflog.Warn(ctx, "cannot give the group lease back; it expires by itself", map[string]any{"group": group, "error": err.Error()})
		}
	}
	if basis != 0 && from != basis && held.Err() == nil {
		// The plan read the record at basis. Writes since by this run are part of the plan;
		// another run's are not: the lease is given back at once, nothing else was written.
		st, _, err := r.load(ctx, group)
		if err == nil {
			err = st.CheckBasis(group, basis, from, r.Env.Run)
		}
		if err != nil {
			release(false)
			var stale *engine.StalePlanError
			if !errors.As(err, &stale) {
				err = &engine.StalePlanError{Group: group, Basis: basis, Now: from}
			}
			return ctx, func(bool) {}, 0, err
		}
	}
	return held, release, from, nil
}
