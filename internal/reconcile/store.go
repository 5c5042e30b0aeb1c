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
	s, _, err := r.load(ctx, group)
	return s, err
}

func (r *Reconciler) load(ctx context.Context, group string) (engine.GroupState, backend.GroupRecord, error) {
	for attempt := 1; ; attempt++ {
		rec, err := r.Backend.ReadGroupRecord(ctx, group)
		if errors.Is(err, backend.ErrConflict) && attempt < maxWriteAttempts {
			// The record changed while it was being read: read it again.
			if err := backoff(ctx, attempt); err != nil {
				return engine.GroupState{}, rec, err
			}
			continue
		}
		if err != nil {
			return engine.GroupState{}, rec, err
		}
		var s engine.GroupState
		if err := json.Unmarshal(rec.Data, &s); err != nil {
			return engine.GroupState{}, rec, fmt.Errorf("group record of %s (generation %d) cannot be decoded: %w", group, rec.Generation, err)
		}
		return s, rec, nil
	}
}

// Change applies mutate to the group's record and stores the result as a new generation. When
// another writer stored a generation first, the record is read again and mutate applied to the
// new one, so no writer's change is lost. exists is false when the group has no record yet; the
// record is then created in pool.
func (r *Reconciler) Change(ctx context.Context, group, pool string, mutate func(s *engine.GroupState, exists bool) error) (engine.GroupState, error) {
	for attempt := 1; ; attempt++ {
		s, rec, err := r.load(ctx, group)
		exists := true
		switch {
		case errors.Is(err, backend.ErrNotFound):
			exists, s, rec = false, engine.GroupState{}, backend.GroupRecord{Pool: pool}
		case err != nil:
			return s, err
		}
		if err := mutate(&s, exists); err != nil {
			return s, err
		}
		data, err := json.MarshalIndent(s, "", "  ")
		if err != nil {
			return s, fmt.Errorf("encode group record of %s: %w", group, err)
		}
		err = r.Backend.WriteGroupRecord(ctx, group, backend.GroupRecord{Pool: rec.Pool, Generation: rec.Generation + 1, Data: data})
		if err == nil {
			tflog.Debug(ctx, "group record written", map[string]any{"group": group, "generation": rec.Generation + 1, "attempt": attempt})
			return s, nil
		}
		if !errors.Is(err, backend.ErrConflict) || attempt >= maxWriteAttempts {
			return s, err
		}
		tflog.Info(ctx, "group record changed by another writer; retrying", map[string]any{"group": group, "attempt": attempt})
		if err := backoff(ctx, attempt); err != nil {
			return s, err
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
