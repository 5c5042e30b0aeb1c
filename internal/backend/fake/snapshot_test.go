package fake

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestSnapshots: the fake's snapshots hold the volume's Data as it was; a revert puts it back
// and keeps the snapshot; taking one again replaces it; a deletion of a missing one, or on a
// missing volume, is not an error; a missing snapshot is ErrNotFound; a raw volume and a
// volume a running domain uses are refused as libvirt refuses them; a deleted volume takes its
// snapshots with it.
func TestSnapshots(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := New()
	b.Volumes["p/d.qcow2"] = &Volume{SizeMiB: 10, Data: "v1"}
	b.Volumes["p/seed.img"] = &Volume{Data: "seed"}
	data := func() string { v, _ := b.VolumeNow("p", "d.qcow2"); return v.Data }
	setData := func(s string) { b.mu.Lock(); b.Volumes["p/d.qcow2"].Data = s; b.mu.Unlock() }

	if err := b.SnapshotVolume(ctx, "p", "d.qcow2", "r1"); err != nil {
		t.Fatal(err)
	}
	setData("v2")
	if err := b.SnapshotVolume(ctx, "p", "d.qcow2", "r2"); err != nil {
		t.Fatal(err)
	}
	setData("v3")
	if err := b.RevertVolume(ctx, "p", "d.qcow2", "r1"); err != nil || data() != "v1" {
		t.Fatalf("revert to r1: %v, data %q", err, data())
	}
	if diff := cmp.Diff([]string{"r1", "r2"}, b.SnapshotTags("p", "d.qcow2")); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}
	// Taken again: it holds the bytes of now.
	if err := b.SnapshotVolume(ctx, "p", "d.qcow2", "r2"); err != nil {
		t.Fatal(err)
	}
	setData("v4")
	if err := b.RevertVolume(ctx, "p", "d.qcow2", "r2"); err != nil || data() != "v1" {
		t.Fatalf("revert to r2 taken again: %v, data %q", err, data())
	}
	if err := b.DeleteVolumeSnapshot(ctx, "p", "d.qcow2", "r1", ""); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ what, pool, volume, tag string }{{"a deleted snapshot", "p", "d.qcow2", "r1"}, {"a missing volume", "p", "none.qcow2", "r1"}} {
		if err := b.DeleteVolumeSnapshot(ctx, tc.pool, tc.volume, tc.tag, ""); err != nil {
			t.Errorf("delete %s: %v", tc.what, err)
		}
	}
	if err := b.RevertVolume(ctx, "p", "d.qcow2", "r1"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("revert to a deleted snapshot: %v", err)
	}
	if err := b.SnapshotVolume(ctx, "p", "seed.img", "r1"); err == nil || !strings.Contains(err.Error(), "only qcow2") {
		t.Errorf("snapshot of a raw volume: %v", err)
	}

	// A running member: snapshot and revert are refused, deletion through it works.
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: "m-0", Disks: []backend.Disk{{DeviceName: "data", Pool: "p", Volume: "d.qcow2"}}}); err != nil {
		t.Fatal(err)
	}
	if err := b.StartDomain(ctx, "m-0"); err != nil {
		t.Fatal(err)
	}
	if err := b.SnapshotVolume(ctx, "p", "d.qcow2", "r3"); err == nil {
		t.Error("snapshot of a running member's volume succeeded")
	}
	if err := b.RevertVolume(ctx, "p", "d.qcow2", "r2"); err == nil {
		t.Error("revert of a running member's volume succeeded")
	}
	if err := b.DeleteVolumeSnapshot(ctx, "p", "d.qcow2", "r2", ""); err == nil {
		t.Error("deletion without the running domain succeeded")
	}
	if err := b.DeleteVolumeSnapshot(ctx, "p", "d.qcow2", "r2", "m-0"); err != nil {
		t.Errorf("deletion through the running domain: %v", err)
	}
	if tags := b.SnapshotTags("p", "d.qcow2"); len(tags) != 0 {
		t.Errorf("tags left: %v", tags)
	}

	b.SetPoolAvailable("p", 5<<30)
	space, err := b.VolumeSpace(ctx, "p", "d.qcow2")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(backend.VolumeSpace{PoolAvailableBytes: 5 << 30, AllocationBytes: 2, CapacityBytes: 10 << 20}, space); diff != "" {
		t.Errorf("space (-want +got):\n%s", diff)
	}
	if _, err := b.VolumeSpace(ctx, "p", "none.qcow2"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("space of a missing volume: %v", err)
	}

	if err := b.StopDomain(ctx, "m-0"); err != nil {
		t.Fatal(err)
	}
	if err := b.SnapshotVolume(ctx, "p", "d.qcow2", "r4"); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteVolume(ctx, "p", "d.qcow2"); err != nil {
		t.Fatal(err)
	}
	b.Volumes["p/d.qcow2"] = &Volume{SizeMiB: 10}
	if tags := b.SnapshotTags("p", "d.qcow2"); len(tags) != 0 {
		t.Errorf("a volume made again after its deletion has the old one's snapshots: %v", tags)
	}
}
