package provider

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TestAccStatefulGroup_defaultDomainType: a template that leaves domain_type out gets the
// domain type the provider judges the host can run (engine.HostVirt, read from the harness
// host's capabilities and CPU), in the state and in the member's definition. On the test
// machine libvirt lists no kvm, so that is qemu; on a host whose KVM runs guests it is kvm.
func TestAccStatefulGroup_defaultDomainType(t *testing.T) {
	name := testPrefix + "hvdefault"
	v, err := testLibvirt(t).HostVirt(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := v.DefaultDomainType()
	t.Logf("the host: %+v: an unset domain_type is %s", v, want)
	config := groupConfig(name, 1, "", "  running = false\n")
	if !strings.Contains(config, "    domain_type = \"qemu\"\n") {
		t.Fatal("groupConfig no longer sets domain_type: this test must leave it out itself")
	}
	config = strings.Replace(config, "    domain_type = \"qemu\"\n", "", 1)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config: config,
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("template").AtMapKey("domain_type"), knownvalue.StringExact(want)),
			},
			Check: func(*terraform.State) error {
				d, ok := members(t, name)[name+"-1"]
				if !ok {
					return fmt.Errorf("no member %s-1", name)
				}
				if d.Type != want {
					return fmt.Errorf("member %s-1 is a %s domain, want %s", name, d.Type, want)
				}
				return nil
			},
		}},
	})
}
