package provider

import (
	"fmt"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// plannedMembers checks the planned `instances`: these members, in this order, each with the
// planned action given.
func plannedMembers(action string, names ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(names))
	for i, n := range names {
		checks[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name":           knownvalue.StringExact(n),
			"planned_action": knownvalue.StringExact(action),
		})
	}
	return inMemberOrder{knownvalue.ListExact(checks)}
}

// TestAccStatefulGroup_plansReadAsWhatTheyDo: through the CLI, a create plan shows each member's
// name and CREATE; the boot disk of an image with no size_mib is the image's virtual size; an
// import plan (import block, in a state that did not create the group) shows the members as they
// are, not "known after apply"; and a change over most_disruptive_allowed_action is one error
// naming both members.
func TestAccStatefulGroup_plansReadAsWhatTheyDo(t *testing.T) {
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	name := testPrefix + "readable"
	image := testPrefix + "ext-readable-image.qcow2"
	extVolumeSized(t, image, 40)
	boot := fmt.Sprintf("\n    boot_disk {\n      source_image = %q\n    }\n", volumePath(t, image))
	group := groupConfig(name, 2, boot, "")
	n1, n2 := name+"-1", name+"-2"
	sizeMiB := tfjsonpath.New("template").AtMapKey("boot_disk").AtMapKey("size_mib")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: group,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionCreate),
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), plannedMembers("CREATE", n1, n2)),
					plancheck.ExpectKnownValue(groupAddr, sizeMiB, knownvalue.Int64Exact(40)),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), instanceNames(n1, n2)),
					statecheck.ExpectKnownValue(groupAddr, sizeMiB, knownvalue.Int64Exact(40)),
				},
				Check: checkMembers(t, name, "RUNNING", n1, n2),
			},
			{
				// An import block in a working directory of its own: this state takes the group
				// over, and its plan shows the members as they are.
				ResourceName:       groupAddr,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithID,
				ImportStateId:      name,
				ExpectNonEmptyPlan: true,
				Config:             group,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), plannedMembers("NONE: "+engine.TakenOverWhy, n1, n2)),
					plancheck.ExpectKnownValue(groupAddr, sizeMiB, knownvalue.Int64Exact(40)),
				}},
			},
			{
				Config: groupConfig(name, 2, "    vcpu = 2\n"+boot, "  update_policy {\n    most_disruptive_allowed_action = \"REFRESH\"\n  }\n"),
				ExpectError: regexp.MustCompile(`(?s)Change not allowed by the most disruptive allowed action.*2 instances need\s+more\s+than\s+their\s+most\s+disruptive\s+allowed\s+action:\s+` +
					n1 + `\s+needs\s+RESTART.*` + n2 + `\s+needs\s+RESTART.*Nothing\s+was\s+changed`),
			},
			{
				// A boot disk of 1024 MiB, as every group created before the image's size was
				// the default has: grown live.
				Config: groupConfig(name, 2, strings.Replace(boot, "    }\n", "      size_mib     = 1024\n    }\n", 1), ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(groupAddr, sizeMiB, knownvalue.Int64Exact(1024)),
				}},
			},
			{
				// size_mib left out again: the image is smaller, and the disks never shrink, so
				// the plan is empty.
				Config: group,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, sizeMiB, knownvalue.Int64Exact(1024)),
				},
			},
		},
	})
}

// TestAccStatefulGroup_missingImageWithHostPaths: with allow_host_paths, an image path that does
// not exist (a typo) fails at plan, naming the path and saying that it does not exist.
func TestAccStatefulGroup_missingImageWithHostPaths(t *testing.T) {
	name := testPrefix + "missimg"
	typo := "/srv/" + testPrefix + "missimg-typo.qcow2"
	config := groupConfig(name, 1, fmt.Sprintf("\n    boot_disk {\n      source_image = %q\n    }\n", typo), "") +
		"\nprovider \"virt\" {\n  allow_host_paths = true\n}\n"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config:      config,
			ExpectError: regexp.MustCompile(`Invalid source_image(?s:.*)"` + regexp.QuoteMeta(typo) + `"\s+does\s+not\s+exist`),
		}},
	})
}
