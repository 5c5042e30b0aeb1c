package provider

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
			_, release, err := d.holdGroup(ctx, "db", nil)
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
			d := &ProviderData{Backend: b, Reconciler: reconcile.New(b)}
			if _, err := d.observe(ctx, s); err != nil {
				t.Fatal(err)
			}
			c.between(d)
			before := b.Calls["list"]
			if _, _, err := d.preview(ctx, c.state); err != nil {
				t.Fatal(err)
			}
			if got := b.Calls["list"] - before; got != c.lists {
				t.Errorf("the preview listed domains %d times, want %d", got, c.lists)
			}
		})
	}
}
