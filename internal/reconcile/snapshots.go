package reconcile

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// snapshots is the task's host's volume snapshots.
func (x *opRun) snapshots() backend.Snapshots { return x.backend }

// snapshotTask carries out a snapshot task (engine/snapshots.go decides which and when).
func (x *opRun) snapshotTask(ctx context.Context, t engine.Task) error {
	sn := t.Snapshot
	fields := map[string]any{"instance": x.op.Name, "volume": sn.Volume, "snapshot": sn.Tag, "revision": sn.Revision}
	switch t.Kind {
	case engine.TaskSnapshotRoom:
		return x.do("check the pool's room for the snapshots", x.snapshotRoom(ctx, t.Snapshots))
	case engine.TaskSnapshot:
		if err := x.snapshots().SnapshotVolume(ctx, x.s.Pool, sn.Volume, sn.Tag); err != nil {
			return x.do("snapshot volume "+sn.Volume, err)
		}
		tflog.Info(ctx, "volume snapshotted", fields)
		return nil
	case engine.TaskRevertSnapshot:
		err := x.snapshots().RevertVolume(ctx, x.s.Pool, sn.Volume, sn.Tag)
		if t.Optional && errors.Is(err, backend.ErrNotFound) {
			// The rollout stopped before it took the snapshot: it did not touch the disk.
			tflog.Info(ctx, "no snapshot to put back: the disk was not touched", fields)
			return nil
		}
		if err != nil {
			return x.do("put volume "+sn.Volume+" back to snapshot "+sn.Tag, err)
		}
		tflog.Info(ctx, "volume put back to its snapshot", fields)
		return nil
	case engine.TaskDeleteSnapshot:
		running := ""
		if t.Live {
			running = x.op.Name
		}
		if err := x.snapshots().DeleteVolumeSnapshot(ctx, x.s.Pool, sn.Volume, sn.Tag, running); err != nil {
			return x.do("delete snapshot "+sn.Tag+" of volume "+sn.Volume, err)
		}
		tflog.Info(ctx, "snapshot deleted", fields)
		return nil
	default:
		// task sends only the snapshot kinds here.
		return x.do("run", fmt.Errorf("not a snapshot task: %s", t.Kind))
	}
}

// snapshotRoom fails, before the member stops, when the pool has less room than every byte the
// snapshotted volumes hold now: once the new template runs, each of those bytes may be written
// again while the snapshot keeps the old one.
func (x *opRun) snapshotRoom(ctx context.Context, sns []engine.SnapshotOp) error {
	var need, free uint64
	var each []string
	for _, sn := range sns {
		sp, err := x.snapshots().VolumeSpace(ctx, x.s.Pool, sn.Volume)
		if err != nil {
			return err
		}
		need += sp.AllocationBytes
		free = sp.PoolAvailableBytes
		each = append(each, fmt.Sprintf("%s %s", sn.Volume, bytesText(sp.AllocationBytes)))
	}
	if free < need {
		return fmt.Errorf("pool %s has %s available, and the snapshots of this member need up to %s (%s: the bytes each volume holds now, which the new template may write again): nothing was stopped. Free space in the pool, or leave these disks out of update_policy.snapshot.disks", x.s.Pool, bytesText(free), bytesText(need), strings.Join(each, ", "))
	}
	return nil
}

// bytesText is a byte count in MiB, as the pool's numbers are read.
func bytesText(n uint64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// readSnapshotTags reads the tags of the volumes whose snapshots the group's inventory holds
// unsettled (engine's UnsettledSnapshots) on the hosts that answered, into o.SnapshotTags: what
// settles the snapshot intents of a run that was cut off (taken or not) and a snapshot deleted by
// hand (engine's Env.SnapshotTags). Only such volumes are read: none after an apply that
// succeeded. A volume whose read fails stays unread, and its snapshots stay as the record has
// them.
//
// Under the group's lease (an apply, not a plan), the helper domain a snapshot call on such a
// volume left when its run was cut off (a revert killed in a rollback leaves its snapshot
// unsettled) is undefined first: no later call on the volume may come to remove it (only one
// carrying our marker for that volume, see backend's DropSnapshotHelper).
func (r *Reconciler) readSnapshotTags(ctx context.Context, s engine.GroupState, o *Observation) {
	held := heldOf(ctx, s.Group.Name) != nil
	want := o.withInventory(s).Inventory.UnsettledSnapshots()
	type read struct{ h, v string }
	var reads []read
	for _, h := range o.Read {
		vols := want[engine.HostOf(h)]
		if _, down := o.Down[h]; down || len(vols) == 0 {
			continue
		}
		listed, ok := o.HostVolumes[h]
		in := make(map[string]bool, len(listed))
		for _, v := range listed {
			in[v] = true
		}
		for _, v := range vols {
			// Gone with its volume, as the listing says: nothing to read.
			if !ok || in[v] {
				reads = append(reads, read{h, v})
			}
		}
	}
	// The reads are independent: a rollout cut off before it settled its snapshots leaves one per
	// volume it meant to snapshot, so they share the fan-out's bound rather than run one by one.
	var mu sync.Mutex
	var g errgroup.Group
	g.SetLimit(r.workers())
	for _, rd := range reads {
		g.Go(func() error {
			if ctx.Err() != nil {
				return nil
			}
			// A host the provider does not have is read as down elsewhere; its snapshots stay
			// as recorded.
			b, herr := r.host(rd.h)
			if herr != nil {
				return nil
			}
			var tags []string
			err := readHost(ctx, rd.h, func(ctx context.Context) error {
				if held {
					if err := b.DropSnapshotHelper(ctx, s.Pool, rd.v); err != nil {
						tflog.Warn(ctx, "cannot undefine the snapshot helper domain a cut-off run left", map[string]any{"group": s.Group.Name, "host": rd.h, "volume": rd.v, "error": err.Error()})
					}
				}
				var err error
				tags, err = b.VolumeSnapshots(ctx, s.Pool, rd.v)
				return err
			})
			if err != nil {
				if ctx.Err() == nil {
					tflog.Warn(ctx, "cannot read a volume's snapshots: its unsettled snapshots stay as the record has them", map[string]any{"group": s.Group.Name, "host": rd.h, "volume": rd.v, "error": err.Error()})
				}
				return nil
			}
			mu.Lock()
			defer mu.Unlock()
			if o.SnapshotTags == nil {
				o.SnapshotTags = map[string]map[string][]string{}
			}
			if o.SnapshotTags[engine.HostOf(rd.h)] == nil {
				o.SnapshotTags[engine.HostOf(rd.h)] = map[string][]string{}
			}
			o.SnapshotTags[engine.HostOf(rd.h)][rd.v] = tags
			return nil
		})
	}
	_ = g.Wait() // every read reports its own failure
}
