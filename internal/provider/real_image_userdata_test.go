package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccReal_userDataWO boots the cloud image with its user data given write-only
// (cloud_init.user_data_wo): cloud-init in the guest runs it (its runcmd writes a marker the test
// reads through the guest agent), while no attribute of the state holds a byte of it. A new
// user_data_wo_version with new user data replaces the member (a new UUID), and the new guest's
// cloud-init runs the new user data (the console log, appended across boots, shows its second
// final stage).
func TestAccReal_userDataWO(t *testing.T) {
	name := testPrefix + "realwo"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realwo.qcow2")
	freshConsoleLog(t, member)
	userData := func(marker string) string {
		return "#cloud-config\nruncmd:\n  - [sh, -c, 'echo " + marker + " > /run/tfacc-user-data-wo']\n"
	}
	config := func(marker string, version int) string {
		return realGroup(name, image, 1, fmt.Sprintf(`    network_interface {
      type = "user"
    }
    cloud_init {
      user_data_wo         = %q
      user_data_wo_version = %d
    }
`, userData(marker), version), "") + realInstances
	}
	ran := func(marker string, boots int) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			if err := checkNoCloud(t, member, boots, nil); err != nil {
				return err
			}
			if out, err := guestOutput(member, "/bin/cat", "/run/tfacc-user-data-wo"); err != nil || out != marker+"\n" {
				return fmt.Errorf("cloud-init in %s did not run the write-only user data: /run/tfacc-user-data-wo is %q (%v), want %s", member, out, err, marker)
			}
			for addr, r := range s.RootModule().Resources {
				for k, v := range r.Primary.Attributes {
					if strings.Contains(v, marker) || strings.Contains(v, "tfacc-user-data-wo") {
						return fmt.Errorf("the state's %s.%s holds the write-only user data: %q", addr, k, v)
					}
				}
			}
			return nil
		}
	}
	uuids := domainUUIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config("tfacc-wo-one", 1),
				Check:  resource.ComposeTestCheckFunc(ran("tfacc-wo-one", 1), uuids.record(t, name)),
			},
			{
				Config: config("tfacc-wo-two", 2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REPLACE: cloud_init user_data_wo_version 1 -> 2")),
				}},
				Check: resource.ComposeTestCheckFunc(uuids.check(t, name, member, false), ran("tfacc-wo-two", 2)),
			},
		},
	})
}
