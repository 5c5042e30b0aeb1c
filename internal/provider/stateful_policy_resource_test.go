package provider

import (
	"fmt"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

const policyAddr = "virt_stateful_policy.test"

// twoDataDisks is a template body with two data disks besides the boot disk.
var twoDataDisks = diskBlocks(8, "data", "logs")

// TestAccStatefulPolicy_policyOnly is the reference document's first example: a stateful policy and
// no per-instance configs. Creating and changing the policy is bookkeeping only (no restart);
// removing a disk from it leaves the disk attached but no longer preserved. Then the policy is
// imported by group name, and moving it to another group replaces it.
func TestAccStatefulPolicy_policyOnly(t *testing.T) {
	name := testPrefix + "pol"
	other := name + "-other"
	n1, n2 := name+"-1", name+"-2"
	vol := func(instance, dev string) string { return instance + "-" + dev + ".qcow2" }
	ids := domainIDs{}
	otherGroup := fmt.Sprintf(`
resource "virt_stateful_group" "other" {
  name        = %q
  pool        = %q
  target_size = 0
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    disk {
      device_name = "data"
      size_mib    = 8
    }
  }
}
`, other, testPool())
	attached := map[string]string{
		n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={}", vol(n1, "data"), vol(n1, "logs")),
		n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={}", vol(n2, "data"), vol(n2, "logs")),
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, name)(s); err != nil {
				return err
			}
			return checkNothingLeft(t, other)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: stack(name, 2, twoDataDisks, "", ""),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={}", n2: "policy=[] config=[] meta={}"}),
				),
			},
			{
				Config: stack(name, 2, twoDataDisks, "", policyConfig("data")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(policyAddr, plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(policyAddr, tfjsonpath.New("id"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(policyAddr, tfjsonpath.New("disk").AtSliceIndex(0).AtMapKey("delete_rule"), knownvalue.Null()),
				},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n1, "data")),
						n2: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n2, "data")),
					}),
					checkDomains(t, name, attached),
					checkRecord(t, name, func(rec *backend.Record) error {
						if len(rec.Instance.PreservedFromPolicy.Disks) != 1 {
							return fmt.Errorf("preserved from policy on the host: %+v", rec.Instance.PreservedFromPolicy)
						}
						return nil
					}),
				),
			},
			{
				Config: stack(name, 2, twoDataDisks, "", policyConfig("data", "logs")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(policyAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n1, "data"), vol(n1, "logs")),
						n2: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n2, "data"), vol(n2, "logs")),
					}),
				),
			},
			// Removal from the policy: logs leaves every instance's preserved state and stays attached.
			{
				Config: stack(name, 2, twoDataDisks, "", policyConfig("data")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(policyAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n1, "data")),
						n2: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n2, "data")),
					}),
					checkDomains(t, name, attached),
				),
			},
			{
				ResourceName:      policyAddr,
				ImportState:       true,
				ImportStateId:     name,
				ImportStateVerify: true,
			},
			// Moving the policy to another group replaces it.
			{
				Config: stack(name, 2, twoDataDisks, "", otherGroup+`
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.other.name
  disk {
    device_name = "data"
  }
}
`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(policyAddr, plancheck.ResourceActionDestroyBeforeCreate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={}", n2: "policy=[] config=[] meta={}"}),
					checkDomains(t, name, attached),
				),
			},
		},
	})
}
