package provider

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccStatefulGroup_largestTemplateTextFits applies the largest template text the plan lets
// through (engine.MaxTemplateTextBytes of user_data) and the largest config metadata
// (engine.MaxConfigMetadataBytes), made of the characters that grow most on their way into a
// member's definition and the group record (control characters, <, " and &): libvirt takes them,
// the next plan is empty, and a change that replaces the members (when a member's record holds
// its template and the in-flight one) goes through. The bounds are there so that this fits in
// libvirt's 4 MiB RPC strings; one more byte is refused at plan (TestAccBadInput,
// TestCheckTextSize).
func TestAccStatefulGroup_largestTemplateTextFits(t *testing.T) {
	name := testPrefix + "bigtext"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	// Each unit is 4 bytes in the user_data: \u0001, <, " and &, written as HCL escapes.
	units := engine.MaxTemplateTextBytes / 4
	userData := strings.Repeat(`\u0001<\"&`, units)
	// And the largest config metadata, of the same characters, on member 1: "big" and 4,095 units.
	metadata := strings.Repeat(`\u0001<\"&`, (engine.MaxConfigMetadataBytes-len("big"))/4)
	config := func(last string) string {
		// The last unit differs between the two configurations: a change that replaces the
		// members, so that a record holds the old template and the in-flight new one at once.
		return groupConfig(name, 2, fmt.Sprintf("    cloud_init {\n      user_data = \"%s%s\"\n    }\n", userData[:len(userData)-len(`\u0001<\"&`)], last), "  running = false") +
			fmt.Sprintf(`
resource "virt_per_instance_config" "big" {
  group = virt_stateful_group.test.name
  name  = "%s-1"
  preserved_state {
    metadata = { big = "%s" }
  }
}
`, name, metadata)
	}
	cfg := config(`\u0001<\"&`)
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "STOPPED", name+"-1", name+"-2"), checkDefinitionHolds(t, name+"-1", engine.MaxTemplateTextBytes+engine.MaxConfigMetadataBytes)),
			},
			{
				Config:           cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: config(`\u0002<\"&`),
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "STOPPED", name+"-1", name+"-2"), checkDefinitionHolds(t, name+"-1", engine.MaxTemplateTextBytes+engine.MaxConfigMetadataBytes)),
			},
		},
	})
}

// checkDefinitionHolds checks that the domain's XML definition is at least bytes long: the text
// under test went through libvirt's RPC in it, not around it.
func checkDefinitionHolds(t *testing.T, domain string, bytes int) resource.TestCheckFunc {
	return func(*terraform.State) error {
		l := testLibvirt(t).Raw()
		dom, err := l.DomainLookupByName(domain)
		if err != nil {
			return err
		}
		xml, err := l.DomainGetXMLDesc(dom, 0)
		if err != nil {
			return err
		}
		if len(xml) < bytes {
			return fmt.Errorf("the definition of %s is %d bytes, less than the %d of the text it should hold", domain, len(xml), bytes)
		}
		t.Logf("the definition of %s is %d bytes", domain, len(xml))
		return nil
	}
}
