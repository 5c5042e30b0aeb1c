package reconcile

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// TestHeldRecord: under a lease, changes start from the record as the holder last wrote it (no
// read), and a record changed behind the holder's back is caught by the write's generation
// check and read again, so that no change is lost.
func TestHeldRecord(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	type result struct {
		Reads, Writes int
		Target        int
	}
	cases := map[string]struct {
		behind bool // another writer stores a generation while the lease is held
		want   result
	}{
		"changes under the lease read nothing": {
			want: result{Reads: 1, Writes: 3, Target: 3},
		},
		"a write behind the holder's back is read again, and kept": {
			behind: true,
			// The hold reads, the change reads again after its conflict, and the release reads
			// nothing: it starts from what the change wrote.
			want: result{Reads: 2, Writes: 4, Target: 7},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b := fake.New()
			r := New(b)
			r.Holder = "me"
			if _, err := r.Change(ctx, "db", "p", func(s *engine.GroupState, _ bool) error {
				s.Group = engine.Group{Name: "db", Base: "db", TargetSize: 1}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			reads, writes := b.Calls["read-group"], b.Calls["write-group"]
			held, release, err := r.Hold(ctx, "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			if c.behind {
				// Another writer (one that ignores leases) adds 4 to the target size.
				rec, err := b.ReadGroupRecord(ctx, "db")
				if err != nil {
					t.Fatal(err)
				}
				st, err := store.DecodeGroup(rec.Data)
				if err != nil {
					t.Fatal(err)
				}
				st.Group.TargetSize += 4
				data, err := store.EncodeGroup(st)
				if err != nil {
					t.Fatal(err)
				}
				rec.Generation++
				rec.Data = data
				if err := b.WriteGroupRecord(ctx, "db", rec); err != nil {
					t.Fatal(err)
				}
				reads, writes = reads+1, writes+1 // not counted: the other writer's own calls
			}
			if _, err := r.Change(held, "db", "", func(s *engine.GroupState, _ bool) error {
				s.Group.TargetSize += 2
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			release(true)
			s, err := r.Load(ctx, "db")
			if err != nil {
				t.Fatal(err)
			}
			got := result{Reads: b.Calls["read-group"] - reads - 1, Writes: b.Calls["write-group"] - writes, Target: s.Group.TargetSize}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
