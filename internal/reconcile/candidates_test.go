package reconcile

import (
	"context"
	"slices"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestObserve_readsOnlyWhatCanBeAMember: a group that keeps where its members are reads only
// the domains that can be members, a member whose config was destroyed without removing it
// included; a record from before groups kept that reads every domain, and its next apply
// writes it.
func TestObserve_readsOnlyWhatCanBeAMember(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, legacy := range []bool{false, true} {
		name := "placement kept"
		if legacy {
			name = "record without placement"
		}
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			r := New(b)
			b.AddUnmanaged(backend.DomainSpec{Name: "legacy", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
			b.AddUnmanaged(backend.DomainSpec{Name: "other-1", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
			s, err := r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error {
				*st = spec(2)
				st.Configs = map[string]engine.ConfigEntry{"legacy": engine.DefaultConfigEntry()}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := r.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
			// The config goes and leaves its member; an older provider kept no placement.
			s, err = r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error {
				delete(st.Configs, "legacy")
				if legacy {
					st.Placement, st.Placed = nil, false
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			o, err := r.Observe(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			var members []string
			for _, m := range o.Observed {
				members = append(members, m.Name)
			}
			if want := []string{"legacy", "db-1", "db-2"}; !slices.Equal(members, want) {
				t.Fatalf("observed members %v, want %v", members, want)
			}
			if _, read := o.All["other-1"]; read != legacy {
				t.Fatalf("a domain that cannot be a member was read: %v, want %v", read, legacy)
			}
			if err := r.Apply(ctx, s); err != nil {
				t.Fatal(err)
			}
			s, err = r.Load(ctx, "db")
			if err != nil {
				t.Fatal(err)
			}
			if _, kept := s.Placement["legacy"]; !kept || len(s.Placement) != 3 || !s.Placed {
				t.Fatalf("placement after the apply %v (placed %v), want db-1, db-2 and legacy, placed", s.Placement, s.Placed)
			}
		})
	}
}

// TestObserve_emptyGroupReadsOnlyItsScheme: a group with no members reads only the domains that
// could be its next ones, from the write that makes its record; a record from before groups kept
// their placement reads every domain until an apply, even one that changes nothing, writes it.
func TestObserve_emptyGroupReadsOnlyItsScheme(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	r := New(b)
	b.AddUnmanaged(backend.DomainSpec{Name: "other-1", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
	b.AddUnmanaged(backend.DomainSpec{Name: "db-9", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
	reads := func(s engine.GroupState) []string {
		t.Helper()
		o, err := r.Observe(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		var read []string
		for n := range o.All {
			read = append(read, n)
		}
		slices.Sort(read)
		return read
	}
	s, err := r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error {
		*st = spec(0)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !s.Placed {
		t.Fatal("a new group's record does not say that it keeps its placement")
	}
	if got, want := reads(s), []string{"db-9"}; !slices.Equal(got, want) {
		t.Fatalf("a new empty group read %v, want %v", got, want)
	}
	// As an older provider wrote it.
	s, err = r.Change(ctx, "db", "p", func(st *engine.GroupState, _ bool) error {
		st.Placed = false
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := reads(s), []string{"db-9", "other-1"}; !slices.Equal(got, want) {
		t.Fatalf("an empty group with a record from before read %v, want %v", got, want)
	}
	if err := r.Apply(ctx, s); err != nil {
		t.Fatal(err)
	}
	if s, err = r.Load(ctx, "db"); err != nil {
		t.Fatal(err)
	}
	if got, want := reads(s), []string{"db-9"}; !slices.Equal(got, want) || !s.Placed {
		t.Fatalf("after an apply, the empty group read %v (placed %v), want %v", got, s.Placed, want)
	}
}
