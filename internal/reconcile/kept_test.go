package reconcile

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// Kept volumes by record (engine/kept.go) on fake hosts: a group destroyed with NEVER data
// disks, created again under its name, moves its members back and forth with every byte and no
// volume left behind; killed between any two record writes, the next destroy or create converges.

// keptGroup is a group of two running members over h2 and default with NEVER data disks, whose
// data volumes hold bytes of their own, on hosts that reach each other.
func keptGroup(t *testing.T) (*Reconciler, map[string]*fake.Backend, engine.GroupState) {
	t.Helper()
	r, fakes, _ := movedGroup(t)
	// movedGroup made a group of four; this one is its own.
	for _, f := range fakes {
		f.Domains, f.Volumes = map[string]*fake.Domain{}, map[string]*fake.Volume{}
		_ = f.DeleteGroupRecord(context.Background(), "p", "db")
	}
	s := spec(2)
	s.Group.Hosts = []string{"h2", "default"}
	s.Policy = &engine.Policy{Disks: []engine.PolicyDisk{{DeviceName: "data", DeleteRule: engine.DeleteNever}}}
	s = create(t, r, s)
	for _, f := range fakes {
		for key, v := range f.Volumes {
			if strings.HasSuffix(key, "-data.qcow2") {
				v.Data = "the bytes of " + key
			}
		}
	}
	return r, fakes, s
}

// create writes the group's first record from s and applies it, as a group resource's create.
func create(t *testing.T, r *Reconciler, s engine.GroupState) engine.GroupState {
	t.Helper()
	st, err := r.Change(context.Background(), s.Group.Name, s.Pool, func(st *engine.GroupState, exists bool) error {
		if exists {
			return errors.New("the group exists")
		}
		*st = s
		return nil
	})
	if err != nil {
		t.Fatalf("create's record write: %v", err)
	}
	// What the write returned is what the host keeps: an apply under the group's lease plans
	// from the record, not from the returned state.
	if d := cmp.Diff(st.Inventory, reloaded(t, r, st).Inventory); d != "" {
		t.Fatalf("the first record keeps another inventory than the write returned (-returned +kept):\n%s", d)
	}
	if err := r.Apply(context.Background(), st); err != nil {
		t.Fatalf("create's apply: %v", err)
	}
	return reloaded(t, r, st)
}

// reconfigure changes the group's record (keeping what it holds of its own) and applies it.
func reconfigure(t *testing.T, r *Reconciler, mutate func(g *engine.Group)) engine.GroupState {
	t.Helper()
	st, err := r.Change(context.Background(), "db", "p", func(st *engine.GroupState, _ bool) error {
		mutate(&st.Group)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := r.Apply(context.Background(), st); err != nil {
		t.Fatalf("apply: %v", err)
	}
	return reloaded(t, r, st)
}

// dataOf is each host's data volumes and their bytes.
func dataOf(fakes map[string]*fake.Backend) map[string]string {
	out := map[string]string{}
	for h, f := range fakes {
		for key, v := range f.Volumes {
			if strings.HasSuffix(key, "-data.qcow2") {
				out[h+"/"+strings.TrimPrefix(key, "p/")] = v.Data
			}
		}
	}
	return out
}

// keptRecordOn is the kept record of db on the fake host, nil when there is none.
func keptRecordOn(t *testing.T, f *fake.Backend) []engine.Made {
	t.Helper()
	rec, err := f.ReadGroupRecord(context.Background(), engine.KeptRecordName("db"))
	if errors.Is(err, backend.ErrNotFound) {
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	kept, err := store.DecodeKept(rec.Data)
	if err != nil {
		t.Fatal(err)
	}
	return kept
}

func made(host, name string) engine.Made {
	return engine.Made{Kind: engine.MadeVolume, Host: host, Name: name, Confirmed: true}
}

// bytesOf is the data of each member's data volume, wherever it is.
func bytesOf(fakes map[string]*fake.Backend) map[string]string {
	out := map[string]string{}
	for k, v := range dataOf(fakes) {
		_, name, _ := strings.Cut(k, "/")
		out[name] = v
	}
	return out
}

func TestKept_reusedNeverDisksMoveBackAndForth(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	r, fakes, s := keptGroup(t)
	data := dataOf(fakes)
	bytes := bytesOf(fakes)
	if len(data) != 2 {
		t.Fatalf("data volumes %v", data)
	}
	if err := r.Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(data, dataOf(fakes)); d != "" {
		t.Fatalf("the destroy did not keep the NEVER disks (-want +got):\n%s", d)
	}
	wantKept := []engine.Made{made("default", "db-2-data.qcow2"), made("h2", "db-1-data.qcow2")}
	if d := cmp.Diff(wantKept, keptRecordOn(t, fakes["h2"])); d != "" {
		t.Fatalf("kept record on the record host h2 (-want +got):\n%s", d)
	}
	if groups, _ := fakes["h2"].ListGroups(ctx); len(groups) != 0 {
		t.Errorf("groups listed after the destroy: %v", groups)
	}

	s2 := spec(2)
	s2.Group.Hosts = []string{"h2", "default"}
	s2 = create(t, r, s2)
	if got := keptRecordOn(t, fakes["h2"]); got != nil {
		t.Errorf("the kept record stays after the create took it: %v", got)
	}
	for _, m := range wantKept {
		if !slices.ContainsFunc(s2.Inventory.Items, func(i engine.Made) bool { return i.Host == m.Host && i.Name == m.Name && i.Reclaimed }) {
			t.Errorf("%s on %s is not in the new group's inventory, Reclaimed: %v", m.Name, m.Host, s2.Inventory.Items)
		}
	}
	for _, drained := range []string{"default", "h2", "default"} {
		s2 = reconfigure(t, r, func(g *engine.Group) { g.Drain = []string{drained} })
		if got := domainsOn(fakes[drained]); got != "" {
			t.Errorf("drain %s: it still defines %q", drained, got)
		}
		if d := cmp.Diff(bytes, bytesOf(fakes)); d != "" {
			t.Errorf("drain %s: data (-want +got):\n%s", drained, d)
		}
		if l := leftovers(fakes[drained]); len(l) > 0 {
			t.Errorf("drain %s: volumes left on it: %v", drained, l)
		}
		if p, _, err := r.Preview(ctx, s2); err != nil || p.Ops() != 0 || len(p.Blocked) > 0 {
			t.Errorf("drain %s: the next plan has %d operations, blocked %v (%v)", drained, p.Ops(), p.Blocked, err)
		}
	}
	// No policy: the mark keeps the reclaimed disks through the destroy, into the kept record.
	if err := r.Destroy(ctx, s2); err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(bytes, bytesOf(fakes)); d != "" {
		t.Errorf("the second destroy: data (-want +got):\n%s", d)
	}
	if got := keptRecordOn(t, fakes["h2"]); len(got) != 2 {
		t.Errorf("kept record after the second destroy: %v", got)
	}
}

// TestKept_killedBetweenWrites: a destroy or create that fails at each write of the kept record
// or the group record converges on the next run, and no kept volume ever goes.
func TestKept_killedBetweenWrites(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		// destroyFails and createFails are the fake's calls that fail once, in the destroy and
		// in the create.
		destroyFails, createFails string
	}{
		{name: "destroy: the kept record's write", destroyFails: "write-group db.kept"},
		{name: "destroy: the group record's deletion, after the kept record", destroyFails: "delete-group db"},
		{name: "create: the kept record's read", createFails: "read-group db.kept"},
		{name: "create: the group record's first write", createFails: "write-group db"},
		{name: "create: the kept record's removal, after the group record", createFails: "delete-group db.kept"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			r, fakes, s := keptGroup(t)
			bytes := bytesOf(fakes)
			h2 := fakes["h2"]
			failOnce := func(call string) {
				if call != "" {
					h2.FailOn[call] = errors.New("killed")
				}
			}
			failOnce(tt.destroyFails)
			if err := r.Destroy(ctx, s); err != nil {
				if tt.destroyFails == "" {
					t.Fatal(err)
				}
				delete(h2.FailOn, tt.destroyFails)
				// Terraform keeps the group in its state: the next destroy reads its record.
				if err := r.Destroy(ctx, reloaded(t, r, s)); err != nil {
					t.Fatalf("the destroy again: %v", err)
				}
			}
			if d := cmp.Diff(bytes, bytesOf(fakes)); d != "" {
				t.Fatalf("after the destroy: data (-want +got):\n%s", d)
			}
			if got := keptRecordOn(t, h2); len(got) != 2 {
				t.Fatalf("kept record %v", got)
			}
			s2 := spec(2)
			s2.Group.Hosts = []string{"h2", "default"}
			failOnce(tt.createFails)
			st, err := r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error { *st = s2; return nil })
			if err != nil {
				delete(h2.FailOn, tt.createFails)
				if _, lerr := r.Load(ctx, "db"); !errors.Is(lerr, ErrGroupNotFound) {
					t.Fatalf("a failed first write left a record: %v", lerr)
				}
				st, err = r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error { *st = s2; return nil })
			}
			if err != nil {
				t.Fatal(err)
			}
			delete(h2.FailOn, tt.createFails)
			if err := r.Apply(ctx, st); err != nil {
				t.Fatal(err)
			}
			st = reconfigure(t, r, func(g *engine.Group) { g.Drain = []string{"default"} })
			if d := cmp.Diff(bytes, bytesOf(fakes)); d != "" {
				t.Errorf("after the move: data (-want +got):\n%s", d)
			}
			if l := leftovers(fakes["default"]); len(l) > 0 {
				t.Errorf("volumes left on default: %v", l)
			}
			// A kept record left by the cut-off removal is merged by the next destroy.
			if err := r.Destroy(ctx, st); err != nil {
				t.Fatal(err)
			}
			if d := cmp.Diff(bytes, bytesOf(fakes)); d != "" {
				t.Errorf("after the last destroy: data (-want +got):\n%s", d)
			}
			if got := keptRecordOn(t, h2); len(got) < 2 {
				t.Errorf("kept record after the last destroy: %v", got)
			}
		})
	}
}
