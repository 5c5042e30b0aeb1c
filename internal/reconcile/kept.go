package reconcile

import (
	"context"
	"errors"
	"fmt"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// The kept record of a group (engine/kept.go): written by a destroy that keeps volumes the group
// made, before the group record goes; read by the group's first record write, which takes its
// volumes into the new group's inventory, and removed after that write. It lives on the group's
// record host, beside the group records, as a record of its own name (engine.KeptRecordName).

// readKept reads the kept record of group on host h (nil when there is none), bounded as every
// read of a host is (readHost).
func readKept(ctx context.Context, h string, b backend.GroupRecords, group string) ([]engine.Made, int64, error) {
	var rec backend.GroupRecord
	err := readHost(ctx, h, func(ctx context.Context) error {
		var err error
		rec, err = readOtherRecord(ctx, b, engine.KeptRecordName(group))
		return err
	})
	switch {
	case errors.Is(err, backend.ErrNotFound):
		return nil, 0, nil
	case err != nil:
		return nil, 0, fmt.Errorf("read the kept volumes of group %s on host %s: %w", group, h, err)
	}
	kept, err := store.DecodeKept(rec.Data)
	if err != nil {
		return nil, 0, fmt.Errorf("kept volumes of group %s on host %s (generation %d): %w", group, h, rec.Generation, err)
	}
	return kept, rec.Generation, nil
}

// writeKept merges kept into the kept record of group on host h: what an earlier destroy of a
// group of that name kept stays listed. A writer that loses the generation reads again.
func writeKept(ctx context.Context, h string, b backend.GroupRecords, group, pool string, kept []engine.Made) error {
	if len(kept) == 0 {
		return nil
	}
	for attempt := 1; ; attempt++ {
		earlier, gen, err := readKept(ctx, h, b, group)
		if err != nil {
			return err
		}
		data, err := store.EncodeKept(engine.MergeKept(earlier, kept))
		if err != nil {
			return fmt.Errorf("encode the kept volumes of group %s: %w", group, err)
		}
		err = b.WriteGroupRecord(ctx, engine.KeptRecordName(group), backend.GroupRecord{Pool: pool, Generation: gen + 1, Data: data})
		if err == nil {
			tflog.Info(ctx, "kept volumes recorded for the next group of the name", map[string]any{"group": group, "host": h, "volumes": len(kept)})
			return nil
		}
		if !errors.Is(err, backend.ErrConflict) || attempt >= maxWriteAttempts {
			return fmt.Errorf("write the kept volumes of group %s on host %s: %w", group, h, err)
		}
		if err := backoff(ctx, attempt); err != nil {
			return err
		}
	}
}

// dropKept removes the kept record of group once the group's own record holds its volumes. A
// failure loses nothing: the record lists volumes the group's inventory holds too, and the
// group's destroy merges it again.
func dropKept(ctx context.Context, b backend.GroupRecords, group, pool string) {
	if err := b.DeleteGroupRecord(ctx, pool, engine.KeptRecordName(group)); err != nil {
		tflog.Warn(ctx, "cannot remove the kept record the group took over; its next destroy merges it", map[string]any{"group": group, "error": err.Error()})
	}
}
