package reconcile

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// maxWriteAttempts bounds how often Change re-reads and re-applies its mutation after losing a
// race with another writer of the same group record.
const maxWriteAttempts = 20

// ErrGroupNotFound is wrapped when a group has no record on the host.
var ErrGroupNotFound = backend.ErrNotFound

// Load reads the group's record.
func (r *Reconciler) Load(ctx context.Context, group string) (engine.GroupState, error) {
	st, _, err := r.load(ctx, group)
	return st.GroupState, err
}

// LoadRecord reads the group's record, with who owns the group and who is changing it.
func (r *Reconciler) LoadRecord(ctx context.Context, group string) (engine.GroupState, Meta, error) {
	st, _, err := r.load(ctx, group)
	return st.GroupState, Meta{Owner: st.Owner, Lease: st.Lease}, err
}

func (r *Reconciler) load(ctx context.Context, group string) (stored, backend.GroupRecord, error) {
	for attempt := 1; ; attempt++ {
		rec, err := r.Backend.ReadGroupRecord(ctx, group)
		if errors.Is(err, backend.ErrConflict) && attempt < maxWriteAttempts {
			// The record changed while it was being read: read it again.
			if err := backoff(ctx, attempt); err != nil {
				return stored{}, rec, err
			}
			continue
		}
		if err != nil {
			return stored{}, rec, err
		}
		var s stored
		if err := json.Unmarshal(rec.Data, &s); err != nil {
			return stored{}, rec, fmt.Errorf("group record of %s (generation %d) cannot be decoded: %w", group, rec.Generation, err)
		}
		return s, rec, nil
	}
}

// Change applies mutate to the group's record and stores the result as a new generation. When
// another writer stored a generation first, the record is read again and mutate applied to the
// new one, so no writer's change is lost. exists is false when the group has no record yet; the
// record is then created in pool. Every change takes (or renews) the group's lease for the
// reconciler's Holder, and fails with a *LeaseError, changing nothing, while another apply holds
// it.
func (r *Reconciler) Change(ctx context.Context, group, pool string, mutate func(s *engine.GroupState, exists bool) error) (engine.GroupState, error) {
	return r.ChangeAs(ctx, group, pool, nil, mutate)
}

// ChangeAs is Change made by a group resource under its ownership claim: the group's owner is
// checked (an *OwnerError or *ExistsError changes nothing) and recorded.
func (r *Reconciler) ChangeAs(ctx context.Context, group, pool string, claim *Claim, mutate func(s *engine.GroupState, exists bool) error) (engine.GroupState, error) {
	st, err := r.changeStored(ctx, group, pool, claim, func(st *stored, exists bool) error {
		return mutate(&st.GroupState, exists)
	}, true)
	return st.GroupState, err
}

// changeStored is the one writer of group records. lease makes the write take the group's
// lease (refused while another apply holds it) and claim, when not nil, check its owner.
func (r *Reconciler) changeStored(ctx context.Context, group, pool string, claim *Claim, mutate func(st *stored, exists bool) error, lease bool) (stored, error) {
	for attempt := 1; ; attempt++ {
		st, rec, err := r.load(ctx, group)
		exists := true
		switch {
		case errors.Is(err, backend.ErrNotFound):
			exists, st, rec = false, stored{}, backend.GroupRecord{Pool: pool}
		case err != nil:
			return st, err
		}
		now := r.now()
		if lease {
			l, err := takeLease(group, st.Lease, r.me(), now, r.leaseTTL(), r.HolderGone)
			if err != nil {
				return st, err
			}
			st.Lease = l
		}
		if claim != nil {
			o, err := claimOwner(group, st.Owner, exists, *claim, now)
			if err != nil {
				return st, err
			}
			st.Owner = o
		}
		if err := mutate(&st, exists); err != nil {
			return st, err
		}
		data, err := json.MarshalIndent(st, "", "  ")
		if err != nil {
			return st, fmt.Errorf("encode group record of %s: %w", group, err)
		}
		err = r.Backend.WriteGroupRecord(ctx, group, backend.GroupRecord{Pool: rec.Pool, Generation: rec.Generation + 1, Data: data})
		if err == nil {
			tflog.Debug(ctx, "group record written", map[string]any{"group": group, "generation": rec.Generation + 1, "attempt": attempt})
			return st, nil
		}
		if !errors.Is(err, backend.ErrConflict) || attempt >= maxWriteAttempts {
			return st, err
		}
		tflog.Info(ctx, "group record changed by another writer; retrying", map[string]any{"group": group, "attempt": attempt})
		if err := backoff(ctx, attempt); err != nil {
			return st, err
		}
	}
}

// backoff waits a little longer after each lost race, with jitter so that two writers that
// collided do not collide again in step.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(10*min(attempt, 10)) * time.Millisecond
	d += time.Duration(rand.Int64N(int64(d)))
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
