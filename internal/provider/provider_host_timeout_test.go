package provider

import (
	"fmt"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestProvider_badHostTimeout: a host_timeout the rule refuses is refused at validate, with the
// attribute, the value and what is allowed, before the provider connects anywhere.
func TestProvider_badHostTimeout(t *testing.T) {
	t.Setenv("LIBVIRT_DEFAULT_URI", "qemu:///system?socket=/nonexistent/must-not-be-dialled")
	allowed := `Allowed:\s+a\s+duration\s+of\s+at\s+least\s+1s\s+and\s+at\s+most\s+1h`
	for value, want := range map[string]string{
		"10":    `host_timeout\s+=\s+"10":\s+"10"\s+is\s+not\s+a\s+duration.*` + allowed,
		"500ms": `host_timeout\s+=\s+"500ms":\s+"500ms"\s+is\s+too\s+short:\s+the\s+least\s+allowed\s+is\s+1s.*` + allowed,
		"2h":    `host_timeout\s+=\s+"2h":\s+"2h"\s+is\s+too\s+long:\s+the\s+most\s+allowed\s+is\s+1h.*` + allowed,
	} {
		t.Run(value, func(t *testing.T) {
			resource.UnitTest(t, resource.TestCase{
				ProtoV6ProviderFactories: testAccProviders,
				Steps: []resource.TestStep{{
					Config: fmt.Sprintf(`
provider "virt" {
  host_timeout = %q
}

data "virt_managed_instances" "x" {
  group = "tfacc-host-timeout"
}
`, value),
					ExpectError: regexp.MustCompile(`(?s)Invalid value.*` + want),
				}},
			})
		})
	}
}

func TestHostTimeout(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   types.String
		want time.Duration
	}{
		"left out: the default": {types.StringNull(), 10 * time.Second},
		"not known yet":         {types.StringUnknown(), 10 * time.Second},
		"given":                 {types.StringValue("90s"), 90 * time.Second},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var diags diag.Diagnostics
			if got := hostTimeout(tt.in, &diags); got != tt.want || diags.HasError() {
				t.Fatalf("hostTimeout(%v) = %v, %v; want %v", tt.in, got, diags, tt.want)
			}
		})
	}
}
