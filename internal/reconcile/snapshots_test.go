package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// firstBootRewrites makes the new image's first boot rewrite the member's data disk, as a
// database migrating its files does, before its probe fails: every probe of a member on another
// image than good writes "migrated" into its data volume.
func firstBootRewrites(b *fake.Backend, good string, members ...string) {
	b.Probes = map[string]func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error){}
	for _, n := range members {
		b.Probes[n] = func(context.Context, backend.ProbeSpec) (backend.ProbeResult, error) {
			if v, ok := b.VolumeNow("p", n+"-boot.qcow2"); ok && v.Backing == good {
				return backend.ProbeResult{OK: true}, nil
			}
			b.GuestWrites("p", n+"-data.qcow2", "migrated")
			return backend.ProbeResult{Reason: "exit status 1: db: cannot read migrated files"}, nil
		}
	}
}

// TestApply_rollbackPutsTheDataBack: 2 running members with a preserved data disk, a REPLACE to
// an image whose first boot rewrites the data disk and then fails its check, on_failure =
// "ROLLBACK". With update_policy.snapshot the rolled-back member has its data from before the
// rollout, its snapshot kept in the volume and in the inventory; without it, the rewritten data
// comes back with the old image (what the snapshot is for). A pool without room for the
// snapshot stops the rollout before the member is stopped, with the numbers.
func TestApply_rollbackPutsTheDataBack(t *testing.T) {
	t.Parallel()
	members := []string{"db-1", "db-2"}
	cases := []struct {
		name     string
		snapshot *engine.SnapshotPolicy
		room     uint64
		want     map[string]string
		// stopped is false when the rollout must not stop db-1 at all.
		stopped   bool
		mentions  []string
		snapshots int
	}{
		{name: "snapshot: the data goes back with the image", snapshot: &engine.SnapshotPolicy{}, stopped: true,
			want: map[string]string{"db-1": "precious", "db-2": "also precious"}, mentions: []string{"Rolled back: db-1"}, snapshots: 1},
		{name: "no snapshot: the rewritten data stays", stopped: true,
			want: map[string]string{"db-1": "migrated", "db-2": "also precious"}, mentions: []string{"Rolled back: db-1"}},
		{name: "no room for the snapshot: nothing stopped", snapshot: &engine.SnapshotPolicy{}, room: 1,
			want: map[string]string{"db-1": "precious", "db-2": "also precious"}, mentions: []string{"pool p has 0.0 MiB available", "nothing was stopped"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			policy := func(image string) engine.GroupState {
				s := withHealthCheck(imageChange(2, image), engine.OnFailureRollback)
				s.Group.Policy.Snapshot = c.snapshot
				return s
			}
			firstBootRewrites(b, "/images/a.qcow2", members...)
			if err := onClock(b).Apply(context.Background(), policy("/images/a.qcow2")); err != nil {
				t.Fatal(err)
			}
			b.Volumes["p/db-1-data.qcow2"].Data = "precious"
			b.Volumes["p/db-2-data.qcow2"].Data = "also precious"
			if c.room > 0 {
				b.SetPoolAvailable("p", c.room)
			}
			before := snap(b)
			err := onClock(b).Apply(context.Background(), policy("/images/b.qcow2"))
			if err == nil {
				t.Fatal("the rollout succeeded")
			}
			for _, m := range c.mentions {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q does not mention %q", err, m)
				}
			}
			var rb *RollbackError
			if c.stopped && (!errors.As(err, &rb) || !rb.Completed()) {
				t.Fatalf("not a completed rollback: %v", err)
			}
			got := map[string]string{}
			for _, n := range members {
				got[n] = b.Volumes["p/"+n+"-data.qcow2"].Data
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("data after the apply (-want +got):\n%s", diff)
			}
			after := snap(b)
			if after["db-2"] != before["db-2"] {
				t.Errorf("db-2 was touched: %v -> %v", before["db-2"], after["db-2"])
			}
			if !c.stopped && after["db-1"] != before["db-1"] {
				t.Errorf("db-1 was touched though the pool had no room: %v -> %v", before["db-1"], after["db-1"])
			}
			if got := len(b.SnapshotTags("p", "db-1-data.qcow2")); got != c.snapshots {
				t.Errorf("db-1's data volume holds %d snapshots, want %d", got, c.snapshots)
			}
		})
	}
}

// TestApply_failedRolloutKeepsItsSnapshot: a rollout with on_failure = "STOP" whose new image
// rewrites db-1's data disk and fails leaves db-1 with the rewritten data, its pre-rollout data
// only in the snapshot. The next rollout (to an image that works) takes its own snapshot and keeps
// that one: deleting it would lose the data from before the failed upgrade. Its success settles
// both (their retention counts from then). A snapshot the failed run meant to take and never took
// (its call failed) is dropped from the inventory by the next plan, which reads the volume.
func TestApply_failedRolloutKeepsItsSnapshot(t *testing.T) {
	t.Parallel()
	members := []string{"db-1", "db-2"}
	b := fake.New()
	r := onClock(b)
	// policy writes the group's record with the image, as the provider does before an apply:
	// what the group placed and made stays.
	policy := func(image string) engine.GroupState {
		s := withHealthCheck(imageChange(2, image), engine.OnFailureStop)
		s.Group.Policy.Snapshot = &engine.SnapshotPolicy{Retention: time.Hour}
		got, err := r.Change(context.Background(), s.Group.Name, s.Pool, func(st *engine.GroupState, _ bool) error {
			placement, placed, inv := st.Placement, st.Placed, st.Inventory
			*st = s
			st.Placement, st.Placed, st.Inventory = placement, placed, inv
			return nil
		})
		if err != nil {
			t.Fatalf("write record: %v", err)
		}
		return got
	}
	firstBootRewrites(b, "/images/a.qcow2", members...)
	if err := r.Apply(context.Background(), policy("/images/a.qcow2")); err != nil {
		t.Fatal(err)
	}
	b.Volumes["p/db-1-data.qcow2"].Data = "precious"
	if err := r.Apply(context.Background(), policy("/images/b.qcow2")); err == nil {
		t.Fatal("the rollout to b succeeded")
	}
	if got := b.Volumes["p/db-1-data.qcow2"].Data; got != "migrated" {
		t.Fatalf("db-1's data after the failed rollout is %q, want the new image's %q", got, "migrated")
	}
	failed := b.SnapshotTags("p", "db-1-data.qcow2")
	if len(failed) != 1 {
		t.Fatalf("db-1's data volume holds snapshots %v after the failed rollout, want one", failed)
	}
	// db-2's snapshot was an intent the failed run wrote before it started: its wave was never
	// reached, so the record keeps no intent of it (a plan would otherwise read db-2's volume
	// until an apply succeeds: at 5,000 members, 5,000 reads per plan).
	for _, m := range reloaded(t, r, imageChange(2, "/images/b.qcow2")).Inventory.Items {
		if m.Kind == engine.MadeSnapshot && m.Name == "db-2-data.qcow2" {
			t.Errorf("the record keeps %+v, a snapshot of an operation that never ran", m)
		}
	}
	// A plan reads the volume of the unsettled snapshot and changes nothing; an apply also
	// undefines the helper domain a cut-off snapshot call may have left there.
	b.Log = nil
	if _, _, err := r.Preview(context.Background(), policy("/images/b.qcow2")); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"volume-snapshots p/db-1-data.qcow2"}, snapshotCalls(b.Log)); diff != "" {
		t.Errorf("a plan's snapshot calls (-want +got):\n%s", diff)
	}
	b.Log = nil
	leased, release, err := r.Hold(context.Background(), "db", nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(leased, policy("/images/b.qcow2")); err == nil {
		t.Fatal("the rollout to b succeeded on its second apply")
	}
	release(true)
	want := []string{"drop-snapshot-helper p/db-1-data.qcow2", "volume-snapshots p/db-1-data.qcow2"}
	if calls := snapshotCalls(b.Log); len(calls) < len(want) || !cmp.Equal(want, calls[:len(want)]) {
		t.Errorf("an apply's first snapshot calls are %v, want %v: each helper dropped, then the volume read", calls, want)
	}

	// Image c works; db-2's snapshot call fails once, so the rollout fails there, its intent
	// left in the record and no snapshot in db-2's volume.
	probeByImage(b, "/images/c.qcow2", members...)
	b.Hook = func(op, obj string) error {
		if op == "snapshot-volume" && strings.HasPrefix(obj, "p/db-2-data.qcow2@") {
			return errors.New("injected fault")
		}
		return nil
	}
	if err := r.Apply(context.Background(), policy("/images/c.qcow2")); err == nil {
		t.Fatal("the rollout to c succeeded though db-2's snapshot failed")
	}
	b.Hook = nil
	if err := r.Apply(context.Background(), policy("/images/c.qcow2")); err != nil {
		t.Fatal(err)
	}
	if d, ok := b.SnapshotData("p", "db-1-data.qcow2", failed[0]); !ok || d != "precious" {
		t.Errorf("db-1's snapshot %s of before the failed rollout: %q (there: %v), want %q", failed[0], d, ok, "precious")
	}
	st := reloaded(t, r, imageChange(2, "/images/c.qcow2"))
	var held []string
	for _, m := range st.Inventory.Items {
		if m.Kind != engine.MadeSnapshot {
			continue
		}
		held = append(held, m.Name+"@"+m.Tag)
		if !m.Confirmed || m.ReadyAt == 0 {
			t.Errorf("snapshot %s@%s is not settled after the apply that succeeded: %+v", m.Name, m.Tag, m)
		}
		if _, ok := b.SnapshotData("p", m.Name, m.Tag); !ok {
			t.Errorf("the inventory holds snapshot %s@%s, which its volume does not", m.Name, m.Tag)
		}
	}
	var inVolumes []string
	for _, n := range members {
		for _, tag := range b.SnapshotTags("p", n+"-data.qcow2") {
			inVolumes = append(inVolumes, n+"-data.qcow2@"+tag)
		}
	}
	slices.Sort(held)
	if diff := cmp.Diff(inVolumes, held); diff != "" {
		t.Errorf("inventory's snapshots against the volumes' (-volumes +inventory):\n%s", diff)
	}
	if n := len(b.SnapshotTags("p", "db-1-data.qcow2")); n != 2 {
		t.Errorf("db-1's data volume holds %d snapshots, want 2 (the failed rollout's and the last one's)", n)
	}
}

// snapshotCalls are the fake's calls of the log that read a volume's snapshots or drop a helper.
func snapshotCalls(log []string) []string {
	var out []string
	for _, l := range log {
		if strings.HasPrefix(l, "volume-snapshots ") || strings.HasPrefix(l, "drop-snapshot-helper ") {
			out = append(out, l)
		}
	}
	return out
}
