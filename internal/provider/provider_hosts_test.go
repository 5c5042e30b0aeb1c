package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestVirtProvider_hostsPointAtTheAttribute: a host block refused for its name or its uri points
// at that attribute, not at the block.
func TestVirtProvider_hostsPointAtTheAttribute(t *testing.T) {
	t.Parallel()
	notYet := "A host block's name or uri depends on a value known only after apply, and the provider does not plan against another host in its place. Apply what it depends on first (terraform apply -target=<that resource>), then plan again."
	uri := types.StringValue("qemu:///system")
	cases := map[string]struct {
		blocks []hostModel
		want   []string
	}{
		"name not known yet": {
			blocks: []hostModel{{Name: types.StringValue("h2"), URI: uri}, {Name: types.StringUnknown(), URI: uri}},
			want:   []string{"Error|host[1].name|Host not known yet|" + notYet},
		},
		"uri not known yet": {
			blocks: []hostModel{{Name: types.StringValue("h2"), URI: types.StringUnknown()}},
			want:   []string{"Error|host[0].uri|Host not known yet|" + notYet},
		},
		"neither known yet: the name": {
			blocks: []hostModel{{Name: types.StringUnknown(), URI: types.StringUnknown()}},
			want:   []string{"Error|host[0].name|Host not known yet|" + notYet},
		},
		"named twice": {
			blocks: []hostModel{{Name: types.StringValue("h2"), URI: uri}, {Name: types.StringValue("h2"), URI: uri}},
			want:   []string{`Error|host[1].name|Host named twice|host "h2" is given by more than one host block; each name may be used once.`},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			// backends set: the known hosts are not connected to.
			p := &virtProvider{backends: map[string]backend.Backend{}}
			var diags diag.Diagnostics
			p.hosts(c.blocks, &diags)
			if d := cmp.Diff(c.want, diagnosticTexts(diags)); d != "" {
				t.Errorf("diagnostics (-want +got):\n%s", d)
			}
		})
	}
}
