package provider

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestHostMap: every host is reached by its name through the one host map, the default host
// too, and a name the provider does not have is an error, never another host.
func TestHostMap(t *testing.T) {
	t.Parallel()
	def, h2 := fake.New(), fake.New()
	rec := reconcile.New(def)
	rec.Hosts = map[string]backend.Backend{"h2": h2}
	d := &providerdata.ProviderData{Reconciler: rec}
	type result struct {
		Backend backend.Backend
		Unknown bool
	}
	cases := map[string]struct {
		host string
		want result
	}{
		"the default host by its name": {host: engine.DefaultHost, want: result{Backend: def}},
		"another host by its name":     {host: "h2", want: result{Backend: h2}},
		"a name the provider lacks":    {host: "h9", want: result{Unknown: true}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, err := d.Host(c.host)
			var unknown *reconcile.UnknownHostError
			got := result{Backend: b, Unknown: errors.As(err, &unknown)}
			if diff := cmp.Diff(c.want, got, cmp.Comparer(func(x, y backend.Backend) bool { return x == y })); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if d.DefaultHost() != backend.Backend(def) {
		t.Error("defaultHost is not the provider's own uri")
	}
}
