package providerdata

import (
	"context"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestPreviewUsesWhatReadObserved counts the listings of domains a plan makes: the plans that
// follow a Read in the same process start from what it observed, while a change this process
// begins, or a state the observation does not fit (another set of configs, which can name a
// domain to adopt), reads the host again.
func TestPreviewUsesWhatReadObserved(t *testing.T) {
	ctx := context.Background()
	s := engine.GroupState{Group: engine.Group{Name: "db", Base: "db", TargetSize: 1, Running: true}, Pool: "default"}
	withAdoption := s
	withAdoption.Configs = map[string]engine.ConfigEntry{"legacy": engine.DefaultConfigEntry()}
	cases := map[string]struct {
		between func(d *ProviderData)
		state   engine.GroupState
		lists   int // listings by the preview after the Read
	}{
		"right after Read": {between: func(*ProviderData) {}, state: s, lists: 0},
		"after a change began": {between: func(d *ProviderData) {
			_, release, err := d.HoldGroup(ctx, "db", nil)
			if err != nil {
				t.Fatal(err)
			}
			release(true)
		}, state: s, lists: 1},
		"with another set of names": {between: func(*ProviderData) {}, state: withAdoption, lists: 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			d := &ProviderData{Reconciler: reconcile.New(b)}
			if _, err := d.Observe(ctx, s); err != nil {
				t.Fatal(err)
			}
			c.between(d)
			before := b.Calls["list"]
			if _, _, err := d.Preview(ctx, c.state); err != nil {
				t.Fatal(err)
			}
			if got := b.Calls["list"] - before; got != c.lists {
				t.Errorf("the preview listed domains %d times, want %d", got, c.lists)
			}
		})
	}
}

// TestApplyUsesThePlansObservation counts the listings of an apply that follows the group's plan
// in the same process (Terraform plans each resource again just before applying it): it starts
// from the members that plan observed when the group record is the one the plan read, and reads
// them again when anything wrote the record in between, or when the observation came without the
// record's generation.
func TestApplyUsesThePlansObservation(t *testing.T) {
	ctx := context.Background()
	s := engine.GroupState{Group: engine.Group{Name: "db", Base: "db", TargetSize: 2, Running: true, Policy: engine.DefaultUpdatePolicy(),
		Template: engine.Template{Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, BootDisk: engine.BootDisk{SizeMiB: 64}}}, Pool: "p"}
	keep := func(*engine.GroupState, bool) error { return nil }
	accept := func(engine.GroupPlan) error { return nil }
	cases := map[string]struct {
		observe func(d *ProviderData, s engine.GroupState, gen int64)
		between func(d *ProviderData)
		lists   int // listings by the apply
	}{
		"record unchanged": {
			observe: func(d *ProviderData, s engine.GroupState, gen int64) { mustPreview(t, d, s, gen) },
			between: func(*ProviderData) {}, lists: 0},
		"record written in between": {
			observe: func(d *ProviderData, s engine.GroupState, gen int64) { mustPreview(t, d, s, gen) },
			between: func(d *ProviderData) {
				other := &ProviderData{Reconciler: reconcile.New(d.DefaultHost())}
				if _, _, err := other.ChangeAndApply(ctx, "db", "p", false, keep); err != nil {
					t.Fatal(err)
				}
			}, lists: 1},
		"observed by a Read": {
			observe: func(d *ProviderData, s engine.GroupState, _ int64) {
				if _, err := d.Observe(ctx, s); err != nil {
					t.Fatal(err)
				}
			},
			between: func(*ProviderData) {}, lists: 1},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			b := fake.New()
			d := &ProviderData{Reconciler: reconcile.New(b)}
			if _, _, err := d.ChangeAndApply(ctx, "db", "p", true, func(st *engine.GroupState, _ bool) error { *st = s; return nil }); err != nil {
				t.Fatal(err)
			}
			// The plan observes the group as its record has it, placement included.
			rec, meta, found, err := d.LoadGroupRecord(ctx, "db")
			if err != nil || !found || meta.Generation == 0 {
				t.Fatalf("record: found %v, generation %d, %v", found, meta.Generation, err)
			}
			c.observe(d, rec, meta.Generation)
			c.between(d)
			before := b.Calls["list"]
			if _, _, err := d.Run(ctx, GroupChange{Group: "db", Pool: "p", Apply: true, Mutate: keep, Check: accept}); err != nil {
				t.Fatal(err)
			}
			if got := b.Calls["list"] - before; got != c.lists {
				t.Errorf("the apply listed domains %d times, want %d", got, c.lists)
			}
		})
	}
}

func mustPreview(t *testing.T, d *ProviderData, s engine.GroupState, gen int64) {
	t.Helper()
	if _, _, err := d.PreviewAt(context.Background(), s, gen, nil); err != nil {
		t.Fatal(err)
	}
}
