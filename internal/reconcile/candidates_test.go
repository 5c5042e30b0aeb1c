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
	ctx := context.Background()
	for _, legacy := range []bool{false, true} {
		name := "placement kept"
		if legacy {
			name = "record without placement"
		}
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			r := New(b)
			b.AddUnmanaged(backend.DomainSpec{Name: "legacy", Type: "qemu", VCPU: 1, MemoryMiB: 64})
			b.AddUnmanaged(backend.DomainSpec{Name: "other-1", Type: "qemu", VCPU: 1, MemoryMiB: 64})
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
					st.Placement = nil
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
			if _, kept := s.Placement["legacy"]; !kept || len(s.Placement) != 3 {
				t.Fatalf("placement after the apply %v, want db-1, db-2 and legacy", s.Placement)
			}
		})
	}
}
