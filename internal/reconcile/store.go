package reconcile

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
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
	st, rec, err := r.load(ctx, group)
	return st.GroupState, Meta{Owner: st.Owner, Lease: st.Lease, Generation: rec.Generation}, err
}

// Record is a group record as read from its host, kept as stored so that each use decodes its
// own copy: a refresh's read of it serves the plans made after it in the same process.
type Record struct {
	group string
	rec   backend.GroupRecord
}

// ReadRecord reads the group's record (ErrGroupNotFound when it has none).
func (r *Reconciler) ReadRecord(ctx context.Context, group string) (Record, error) {
	_, rec, err := r.load(ctx, group)
	return Record{group: group, rec: rec}, err
}

// Decode is the record as LoadRecord returns it.
func (rec Record) Decode() (engine.GroupState, Meta, error) {
	st, err := store.DecodeGroup(rec.rec.Data)
	if err != nil {
		return engine.GroupState{}, Meta{}, fmt.Errorf("group record of %s (generation %d) cannot be decoded: %w", rec.group, rec.rec.Generation, err)
	}
	return st.GroupState, Meta{Owner: st.Owner, Lease: st.Lease, Generation: rec.rec.Generation}, nil
}

// findRecord reads the group's record from the host that keeps it: the default host first, then
// the others by name. The record is made on the group's first host and stays there. When no
// host that answered has it and one did not answer, that host's error is returned: the record
// may be there.
func (r *Reconciler) findRecord(ctx context.Context, group string) (backend.GroupRecord, backend.GroupRecords, error) {
	var down, missing error
	for _, h := range r.HostNames() {
		b, err := r.host(h)
		if err != nil {
			return backend.GroupRecord{}, nil, err
		}
		processCounts.recordReads.Add(1)
		var rec backend.GroupRecord
		err = readHost(ctx, h, func(ctx context.Context) error {
			var err error
			rec, err = b.ReadGroupRecord(ctx, group)
			return err
		})
		switch {
		case err == nil || errors.Is(err, backend.ErrConflict):
			return rec, b, err
		case errors.Is(err, backend.ErrNotFound):
			if missing == nil {
				missing = err
			}
			continue
		case len(r.Hosts) == 0 || ctx.Err() != nil:
			return backend.GroupRecord{}, b, err
		}
		if down == nil {
			down = &RecordHostError{Group: group, Host: h, Err: err}
		}
	}
	if down != nil {
		return backend.GroupRecord{}, nil, down
	}
	return backend.GroupRecord{}, nil, missing
}

// RecordHostError is a group record that cannot be read because a host that may keep it does not
// answer: the group cannot be changed until it does, though its other hosts can still be read.
type RecordHostError struct {
	Group, Host string
	Err         error
}

func (e *RecordHostError) Error() string {
	return fmt.Sprintf("the record of group %s cannot be read: host %q, which may keep it, cannot be reached (%v). The group cannot be changed until that host answers", e.Group, e.Host, e.Err)
}

func (e *RecordHostError) Unwrap() error { return e.Err }

// recordBackend is the host that keeps the group's record, or, when no host has one yet, the
// host it is to be made on.
func (r *Reconciler) recordBackend(ctx context.Context, group, fresh string) (backend.GroupRecords, error) {
	_, b, err := r.findRecord(ctx, group)
	if errors.Is(err, backend.ErrNotFound) {
		return r.host(fresh)
	}
	return b, err
}

// recordHost is recordBackend with the name of its host.
func (r *Reconciler) recordHost(ctx context.Context, group, fresh string) (string, backend.GroupRecords, error) {
	b, err := r.recordBackend(ctx, group, fresh)
	if err != nil {
		return "", nil, err
	}
	for _, h := range r.HostNames() {
		if hb, herr := r.host(h); herr == nil && hb == b {
			return h, b, nil
		}
	}
	return fresh, b, nil
}

func (r *Reconciler) load(ctx context.Context, group string) (stored, backend.GroupRecord, error) {
	st, rec, _, err := r.loadFrom(ctx, group)
	return st, rec, err
}

// loadFrom is load with the host the record was read from (nil when it has none).
func (r *Reconciler) loadFrom(ctx context.Context, group string) (stored, backend.GroupRecord, backend.GroupRecords, error) {
	held := heldOf(ctx, group)
	for attempt := 1; ; attempt++ {
		rec, b, cached := held.get()
		var err error
		if !cached {
			rec, b, err = r.findRecord(ctx, group)
		}
		if errors.Is(err, backend.ErrConflict) && attempt < maxWriteAttempts {
			// The record changed while it was being read: read it again.
			if err := backoff(ctx, attempt); err != nil {
				return stored{}, rec, b, err
			}
			continue
		}
		if err != nil {
			return stored{}, rec, b, err
		}
		s, err := store.DecodeGroup(rec.Data)
		if err != nil {
			held.drop()
			return stored{}, rec, b, fmt.Errorf("group record of %s (generation %d) cannot be decoded: %w", group, rec.Generation, err)
		}
		if !cached {
			held.set(rec, b)
		}
		return s, rec, b, nil
	}
}

// Change applies mutate to the group's record and stores the result as a new generation. When
// another writer stored a generation first, the record is read again and mutate applied to the
// new one, so no writer's change is lost. exists is false when the group has no record yet; the
// record is then created in pool. Every change takes (or renews) the group's lease for the
// reconciler's Holder, and fails with a *engine.LeaseError, changing nothing, while another apply holds
// it.
func (r *Reconciler) Change(ctx context.Context, group, pool string, mutate func(s *engine.GroupState, exists bool) error) (engine.GroupState, error) {
	return r.ChangeAs(ctx, group, pool, nil, mutate)
}

// ChangeAs is Change made by a group resource under its ownership claim: the group's owner is
// checked (an *engine.OwnerError or *engine.ExistsError changes nothing) and recorded.
func (r *Reconciler) ChangeAs(ctx context.Context, group, pool string, claim *engine.Claim, mutate func(s *engine.GroupState, exists bool) error) (engine.GroupState, error) {
	st, err := r.changeStored(ctx, group, pool, claim, func(st *stored, exists bool) error {
		return mutate(&st.GroupState, exists)
	}, true)
	return st.GroupState, err
}

// changeStored is the one writer of group records. lease makes the write take the group's
// lease (refused while another apply holds it) and claim, when not nil, check its owner.
func (r *Reconciler) changeStored(ctx context.Context, group, pool string, claim *engine.Claim, mutate func(st *stored, exists bool) error, lease bool) (stored, error) {
	st, _, err := r.changeStoredFrom(ctx, group, pool, claim, mutate, lease)
	return st, err
}

// changeStoredFrom is changeStored that also tells the generation it wrote over (0: there was no
// record).
func (r *Reconciler) changeStoredFrom(ctx context.Context, group, pool string, claim *engine.Claim, mutate func(st *stored, exists bool) error, lease bool) (stored, int64, error) {
	for attempt := 1; ; attempt++ {
		st, rec, b, err := r.loadFrom(ctx, group)
		exists := true
		switch {
		case errors.Is(err, backend.ErrNotFound):
			exists, st, rec = false, stored{}, backend.GroupRecord{Pool: pool}
		case err != nil:
			return st, 0, err
		}
		w := engine.Writer{Me: r.me(), Now: r.now(), TTL: r.leaseTTL(), Gone: r.HolderGone}
		if err := st.Admit(group, exists, w, lease, claim); err != nil {
			return st, 0, err
		}
		if err := mutate(&st, exists); err != nil {
			return st, 0, err
		}
		if !exists {
			// A group made now keeps where its members go from the start (place): until it has
			// any, it has none, anywhere.
			st.Placed = true
		}
		var taken bool
		if !exists {
			// A new group's record is made on its first host.
			h := st.Group.RecordHost()
			if b, err = r.host(h); err != nil {
				return st, 0, err
			}
			// The volumes a destroyed group of this name kept are this group's: its first
			// record holds them (engine/kept.go), and their kept record goes after it.
			kept, _, err := readKept(ctx, h, b, group)
			if err != nil {
				return st, 0, err
			}
			if len(kept) > 0 {
				st.Inventory, taken = st.Inventory.TakeOver(kept), true
			}
		}
		st.Wrote(rec.Generation+1, r.Env.Run)
		data, err := store.EncodeGroup(st)
		if err != nil {
			return st, 0, fmt.Errorf("encode group record of %s: %w", group, err)
		}
		processCounts.recordWrites.Add(1)
		written := backend.GroupRecord{Pool: rec.Pool, Generation: rec.Generation + 1, Data: data}
		err = b.WriteGroupRecord(ctx, group, written)
		if err == nil {
			heldOf(ctx, group).set(written, b)
			if taken {
				dropKept(ctx, b, group, rec.Pool)
			}
			tflog.Debug(ctx, "group record written", map[string]any{"group": group, "generation": rec.Generation + 1, "attempt": attempt})
			return st, rec.Generation, nil
		}
		// What this writer knew of the record is not what the host has (or the write failed
		// half-way): the next attempt, and every read after it, reads the host.
		heldOf(ctx, group).drop()
		if !errors.Is(err, backend.ErrConflict) || attempt >= maxWriteAttempts {
			return st, 0, err
		}
		tflog.Info(ctx, "group record changed by another writer; retrying", map[string]any{"group": group, "attempt": attempt})
		if err := backoff(ctx, attempt); err != nil {
			return st, 0, err
		}
	}
}

// backoff waits a little longer after each lost race, with jitter so that two writers that
// collided do not collide again in step.
func backoff(ctx context.Context, attempt int) error {
	d := time.Duration(10*min(attempt, 10)) * time.Millisecond
	d += time.Duration(rand.Int64N(int64(d)))
	return waitFor(ctx, time.After(d))
}
