package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccStatefulGroup_updateTimeout gives a rolling replace of running members one second: the
// first member's graceful stop waits for a guest that never honours ACPI (shutdown_timeout 60s),
// so the update runs out of time there. The error says the update timed out, after how long, under
// which limit, and that the next apply finishes; the next apply, with room to finish, does: every
// member at the new image, one domain per identity, and an empty plan after it.
func TestAccStatefulGroup_updateTimeout(t *testing.T) {
	name := testPrefix + "timeout"
	n1, n2 := name+"-1", name+"-2"
	imageA, imageB := testImage(t, testPrefix+"img-timeout-a.qcow2"), testImage(t, testPrefix+"img-timeout-b.qcow2")
	// The finishing apply powers members off at once, so that the test does not wait a minute
	// per member for a guest that ignores the ACPI request.
	config := func(image, shutdown, update string) string {
		return groupConfig(name, 2, fmt.Sprintf(`
    boot_disk {
      source_image = %q
      size_mib     = 16
    }`, image), fmt.Sprintf(`
  shutdown_timeout = %q
  timeouts {
    update = %q
  }`, shutdown, update))
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config(imageA, "60s", "10m"),
				Check:  checkBacking(t, imageA, n1, n2),
			},
			{
				Config: config(imageB, "60s", "1s"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectPlanned(1, "REPLACE: boot image changed"),
				}},
				ExpectError: regexp.MustCompile(`(?s)Cannot apply group ` + name + `: update timed out after 1s.*` +
					`The update of group ` + name + ` did not finish within its time limit\s+\(timeouts.update = "1s"\).*` +
					`(context deadline exceeded|time ran out).*next\s+apply`),
			},
			{
				Config: config(imageB, "0s", "10m"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkBacking(t, imageB, n1, n2),
					func(*terraform.State) error {
						if got := len(members(t, name)); got != 2 {
							return fmt.Errorf("%d member domains after the finishing apply, want 2", got)
						}
						return nil
					},
				),
			},
		},
	})
}
