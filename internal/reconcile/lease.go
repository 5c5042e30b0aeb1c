package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultLeaseTTL is how long a lease lasts without renewal. A holder renews it every quarter of
// that while it works, so a holder killed with SIGKILL blocks other writers for at most this long.
const DefaultLeaseTTL = 60 * time.Second

// Lease says which apply is changing a group, since when, and until when it may do so without
// renewing. It is kept in the group record, so that every Terraform run on every machine sees it.
type Lease struct {
	Holder string `json:"holder"`
	// Host and PID are the machine and process of the holder's provider, so that a holder that
	// died on the machine of the next apply is recognised at once rather than at expiry.
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
}

// Owner names the Terraform state a group belongs to: the one that created it, or the last one
// that imported it.
type Owner struct {
	ID    string    `json:"id"`
	Since time.Time `json:"since"`
	// Creating is set until the apply that created the group has finished, so that the next
	// create of the same group finishes a creation that failed half-way instead of refusing it.
	Creating bool `json:"creating,omitempty"`
}

// Meta is what the group record says about who may change the group.
type Meta struct {
	Owner *Owner
	Lease *Lease
	// Generation is the record's generation: every write makes a new one, and every change a
	// provider makes to a group's members happens between two writes (taking and giving back
	// the lease).
	Generation int64
}

// Claim is what a group resource knows of its ownership.
type Claim struct {
	// ID is the owner ID kept in the resource's Terraform state.
	ID string
	// TakeoverFrom is the owner ID the group had when this state imported it: the group is taken
	// over from that owner at the next change.
	TakeoverFrom string
	// Create is set by the apply that creates the group.
	Create bool
	// Basis is the generation of the group record that the plan this apply runs was made from
	// (what the refresh read); 0 when not known. Taking the group's lease is refused when the
	// record has moved on since: another apply changed the group after the plan was made, and
	// the plan is not run over its change.
	Basis int64
}

// StalePlanError is a plan made before another apply changed the group.
type StalePlanError struct {
	Group      string
	Basis, Now int64
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("group %s was changed by another apply since this plan was made (its record was at generation %d when the plan's refresh read it, and another terraform run wrote it up to generation %d since). Nothing was changed; run terraform apply again (with refresh) to plan from what the host has now", e.Group, e.Basis, e.Now)
}

// stored is the group record's storage format: the engine's group state, and beside it who owns
// the group and who is changing it. The engine never sees the latter two.
type stored struct {
	engine.GroupState
	Owner *Owner `json:"owner,omitempty"`
	Lease *Lease `json:"lease,omitempty"`
	// Writes are the last record writes, oldest first: which run wrote which generation, so that
	// an apply can tell its own writes since its plan from another's (Claim.Basis).
	Writes []Write `json:"writes,omitempty"`
}

// Write is one record write: the generation and the run that wrote it.
type Write struct {
	Generation int64  `json:"generation"`
	Run        string `json:"run"`
}

// keptWrites bounds stored.Writes: more than one apply writes between its plan and its hold.
const keptWrites = 64

// wrote adds the write of generation gen by run to the history.
func (st *stored) wrote(gen int64, run string) {
	st.Writes = append(st.Writes, Write{Generation: gen, Run: run})
	if len(st.Writes) > keptWrites {
		st.Writes = slices.Clone(st.Writes[len(st.Writes)-keptWrites:])
	}
}

// changedBy reports whether a run other than run wrote the record after generation basis, up
// to generation now; a history that does not reach back to basis cannot tell, which counts as
// changed.
func (st stored) changedBy(basis, now int64, run string) bool {
	seen := map[int64]bool{}
	for _, w := range st.Writes {
		if w.Generation <= basis || w.Generation > now {
			continue
		}
		if w.Run != run {
			return true
		}
		seen[w.Generation] = true
	}
	return int64(len(seen)) < now-basis
}

// LeaseError is returned when another apply holds the group's lease.
type LeaseError struct {
	Group string
	Lease Lease
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("group %s is being changed by another apply (%s) since %s; its lease runs until %s unless renewed. Nothing was changed: wait for that apply to finish, or, if it was killed, until the lease expires, then apply again",
		e.Group, e.Lease.Holder, e.Lease.Since.UTC().Format(time.RFC3339), e.Lease.Expires.UTC().Format(time.RFC3339))
}

// ExistsError is returned when a create finds the group already there.
type ExistsError struct {
	Group string
	// Why says what was found: the group's record, or members without one.
	Why string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("group %s already exists on this libvirt host (%s). Nothing was changed. To manage it from this Terraform state, import it: terraform import virt_stateful_group.<name> %s (or an import block); to make a new group, choose another name",
		e.Group, e.Why, e.Group)
}

// OwnerError is returned when a state changes a group that belongs to another state.
type OwnerError struct {
	Group string
	Owner Owner
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("group %s belongs to another Terraform state (owner %s since %s: it was created or imported there). Nothing was changed. To manage it from this state, import it again (terraform import); to stop managing it here without touching it, terraform state rm it",
		e.Group, e.Owner.ID, e.Owner.Since.UTC().Format(time.RFC3339))
}

// takeLease returns the lease me writes at now: a new one when the group is free, its lease
// expired or its holder is gone (a process of this machine that no longer runs), the same one
// renewed when me has it already. Another live holder is a *LeaseError.
func takeLease(group string, cur *Lease, me Lease, now time.Time, ttl time.Duration, gone func(Lease) bool) (*Lease, error) {
	me.Since, me.Expires = now, now.Add(ttl)
	switch {
	case cur == nil || !now.Before(cur.Expires):
		return &me, nil
	case cur.Holder == me.Holder:
		me.Since = cur.Since
		return &me, nil
	case gone != nil && gone(*cur):
		return &me, nil
	default:
		return nil, &LeaseError{Group: group, Lease: *cur}
	}
}

// claimOwner returns the owner a change made under claim c leaves in the record. A group whose
// record has no owner (written before owners existed) is claimed by the first state that changes
// it; a create finds the group free, or a creation that failed half-way (and finishes it).
func claimOwner(group string, cur *Owner, exists bool, c Claim, now time.Time) (*Owner, error) {
	switch {
	case c.Create && !exists:
		return &Owner{ID: c.ID, Since: now, Creating: true}, nil
	case cur != nil && cur.ID == c.ID:
		return cur, nil
	case c.Create && cur != nil && cur.Creating:
		return &Owner{ID: c.ID, Since: now, Creating: true}, nil
	case c.Create:
		return nil, &ExistsError{Group: group, Why: "its group record is there"}
	case cur == nil || cur.ID == "" || cur.ID == c.TakeoverFrom:
		return &Owner{ID: c.ID, Since: now}, nil
	default:
		return nil, &OwnerError{Group: group, Owner: *cur}
	}
}

// CheckClaim tells, without writing anything, whether a change made now under c would be
// refused by the group's record (m, exists): the plan-time twin of what every write checks.
func (r *Reconciler) CheckClaim(group string, m Meta, exists bool, c Claim) error {
	_, err := claimOwner(group, m.Owner, exists, c, r.now())
	return err
}

// CheckLease tells, without writing anything, whether another apply holds the group's lease now.
func (r *Reconciler) CheckLease(group string, m Meta) error {
	_, err := takeLease(group, m.Lease, r.me(), r.now(), r.leaseTTL(), r.HolderGone)
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
func (r *Reconciler) me() Lease {
	return Lease{Holder: r.Holder, Host: r.HolderHost, PID: r.HolderPID}
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

// Hold takes the group's lease for this reconciler's Holder and keeps renewing it until release
// is called; claim, when not nil, is checked and recorded as the group's owner. A group without a
// record gets its lease with the first change that creates the record. The returned context ends
// when the lease is lost (another apply took it after it expired unrenewed), so that the work
// done under it stops. release(finished) gives the lease back; finished also marks a creation
// as complete.
func (r *Reconciler) Hold(ctx context.Context, group string, claim *Claim) (context.Context, func(finished bool), error) {
	held, release, _, err := r.HoldFrom(ctx, group, claim)
	return held, release, err
}

// HoldFrom is Hold that also tells the generation of the group record the lease was taken on (0:
// the group has no record yet). When it is the generation an observation of the members was made
// under (Meta.Generation), no provider changed them in between.
func (r *Reconciler) HoldFrom(ctx context.Context, group string, claim *Claim) (context.Context, func(finished bool), int64, error) {
	return r.holdFrom(ctx, group, claim, existing)
}

// HoldToDestroy is HoldFrom for the group's destroy: the write that takes the lease also marks
// this run's release unfinished (engine.GroupState.DestroyBegins), so that from the moment the
// destroy holds the group, a cut-off leaves the release for the next destroy to honour.
func (r *Reconciler) HoldToDestroy(ctx context.Context, group string, claim *Claim) (context.Context, func(finished bool), int64, error) {
	return r.holdFrom(ctx, group, claim, func(st *stored, exists bool) error {
		if err := existing(st, exists); err != nil {
			return err
		}
		st.DestroyBegins(r.Env.Run)
		return nil
	})
}

func (r *Reconciler) holdFrom(ctx context.Context, group string, claim *Claim, mutate func(st *stored, exists bool) error) (context.Context, func(finished bool), int64, error) {
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
				var lost *LeaseError
				var owner *OwnerError
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
		// wait for its expiry.
		rctx := context.WithoutCancel(ctx)
		_, err := r.changeStored(rctx, group, "", nil, func(st *stored, _ bool) error {
			if st.Lease == nil || st.Lease.Holder != r.Holder {
				return errNoRecord
			}
			st.Lease = nil
			if finished {
				st.FinishRelease(r.Env.Run)
			}
			if finished && claim != nil && st.Owner != nil && st.Owner.ID == claim.ID {
				st.Owner.Creating = false
				st.Applied()
			}
			return nil
		}, false)
		if err != nil && !errors.Is(err, errNoRecord) {
			tflog.Warn(ctx, "cannot give the group lease back; it expires by itself", map[string]any{"group": group, "error": err.Error()})
		}
	}
	if basis != 0 && from != basis && held.Err() == nil {
		// The plan read the record at basis. Writes since by this run (a config or policy
		// of the group applied before it, in this apply) are part of the plan; another run's
		// are not: the lease is given back at once, nothing else was written.
		st, _, err := r.load(ctx, group)
		if err != nil || st.changedBy(basis, from, r.Env.Run) {
			release(false)
			return ctx, func(bool) {}, 0, &StalePlanError{Group: group, Basis: basis, Now: from}
		}
	}
	return held, release, from, nil
}
