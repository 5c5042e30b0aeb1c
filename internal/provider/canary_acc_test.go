package provider

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// canaryConfig is a group of size stopped members on image (no guest needs to boot for a
// replacement), with update_policy.canary when canary is not "", and the data source.
func canaryConfig(name string, size int, image, canary string) string {
	policy := "  running = false\n  update_policy {\n    max_unavailable = \"1\"\n"
	if canary != "" {
		policy += fmt.Sprintf("    canary          = %q\n", canary)
	}
	policy += "  }\n"
	return groupConfig(name, size, fmt.Sprintf(`
    boot_disk {
      source_image = %q
      size_mib     = 16
    }`, image), policy) + `
data "virt_managed_instances" "test" {
  group      = virt_stateful_group.test.name
  depends_on = [virt_stateful_group.test]
}
`
}

// checkReplaced checks that exactly the members named in replaced have another UUID than
// before recorded, and records the UUIDs now.
func checkReplaced(t *testing.T, base string, before memberState, all []string, replaced ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now := members(t, base)
		for _, n := range all {
			d, ok := now[n]
			if !ok {
				return fmt.Errorf("%s is gone", n)
			}
			want := !slices.Contains(replaced, n)
			if same := d.UUID == before[n][0]; same != want {
				return fmt.Errorf("%s has UUID %s, was %s: replaced %t, want %t", n, d.UUID, before[n][0], !same, !want)
			}
			before[n] = [2]string{d.UUID, fmt.Sprint(d.ID)}
		}
		return nil
	}
}

// checkCanaryView checks the data source's size members: those at the indices in onNew (0-based)
// are on the group's template_revision and not held back, the others on another revision and held
// back.
func checkCanaryView(size int, onNew ...int) resource.TestCheckFunc {
	return func(s *terraform.State) error {
		ds, ok := s.RootModule().Resources[dsAddr]
		if !ok {
			return fmt.Errorf("%s is not in the state", dsAddr)
		}
		a := ds.Primary.Attributes
		group := a["template_revision"]
		if group == "" {
			return fmt.Errorf("%s has no template_revision", dsAddr)
		}
		if got := a["instances.#"]; got != fmt.Sprint(size) {
			return fmt.Errorf("%s lists %s members, want %d", dsAddr, got, size)
		}
		for i := range size {
			rev, held := a[fmt.Sprintf("instances.%d.template_revision", i)], a[fmt.Sprintf("instances.%d.held_back", i)]
			name := a[fmt.Sprintf("instances.%d.name", i)]
			wantNew := false
			for _, j := range onNew {
				wantNew = wantNew || i == j
			}
			if (rev == group) != wantNew || held != fmt.Sprint(!wantNew) {
				return fmt.Errorf("%s: template_revision %s (group's %s), held_back %s; want on the group's template %t", name, rev, group, held, wantNew)
			}
		}
		return nil
	}
}

// TestAccStatefulGroup_canary holds a rollout after one member of four: a boot image change
// (REPLACE) with update_policy.canary = "1" replaces only the lowest index, the plan after the
// apply is empty, the data source shows one member on the group's revision and three held back on
// the old one; an apply with the same configuration changes nothing; a held member whose domain is
// undefined is built again on the old image; a scale-out to 5 builds the new member on the old
// image, held back; "50%" (of 5, rounded up: 3) replaces two more; removing the
// hold replaces the last two. Each member's UUID says whether it was replaced, and each boot
// volume's backing file which image it runs.
func TestAccStatefulGroup_canary(t *testing.T) {
	name := testPrefix + "canary"
	n := []string{name + "-1", name + "-2", name + "-3", name + "-4", name + "-5"}
	imageA, imageB := testImage(t, testPrefix+"img-canary-a.qcow2"), testImage(t, testPrefix+"img-canary-b.qcow2")
	before := memberState{}
	held := func(i int) plancheck.PlanCheck { return expectPlanned(i, "NONE: "+engine.CanaryHeldWhy) }
	replace := func(i int) plancheck.PlanCheck { return expectPlanned(i, "REPLACE: boot image changed") }
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: canaryConfig(name, 4, imageA, ""),
				Check:  resource.ComposeTestCheckFunc(before.record(t, name), checkBacking(t, imageA, n[:4]...), checkMembers(t, name, "STOPPED", n[:4]...)),
			},
			{
				Config: canaryConfig(name, 4, imageB, "1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						replace(0), held(1), held(2), held(3),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkReplaced(t, name, before, n[:4], n[0]),
					checkBacking(t, imageB, n[0]), checkBacking(t, imageA, n[1:4]...),
					checkCanaryView(4, 0),
				),
			},
			{
				// The hold is the desired state: the same configuration applies nothing.
				Config: canaryConfig(name, 4, imageB, "1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply:             []plancheck.PlanCheck{plancheck.ExpectEmptyPlan(), held(1), held(2), held(3)},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(checkReplaced(t, name, before, n[:4]), checkCanaryView(4, 0)),
			},
			{
				// A held member whose domain is gone (its record with it) is built again on the
				// held members' image, not on the new one.
				PreConfig: func() { virsh(t, "undefine", n[2]) },
				Config:    canaryConfig(name, 4, imageB, "1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						expectPlanned(0, "NONE"), held(1), expectPlanned(2, "CREATE: "+engine.CanaryCreatedWhy), held(3),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkReplaced(t, name, before, n[:4], n[2]),
					checkBacking(t, imageB, n[0]), checkBacking(t, imageA, n[1:4]...),
					checkMembers(t, name, "STOPPED", n[:4]...),
					checkCanaryView(4, 0),
				),
			},
			{
				// A member created while the hold is full is built from the held members' image.
				Config: canaryConfig(name, 5, imageB, "1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						expectPlanned(0, "NONE"), held(1), held(2), held(3), expectPlanned(4, "CREATE: "+engine.CanaryCreatedWhy),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkReplaced(t, name, before, n[:4]), before.record(t, name),
					checkBacking(t, imageB, n[0]), checkBacking(t, imageA, n[1:]...),
					checkMembers(t, name, "STOPPED", n...),
					checkCanaryView(5, 0),
				),
			},
			{
				// 50% of 5 is 3 (rounded up): two more.
				Config: canaryConfig(name, 5, imageB, "50%"),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						expectPlanned(0, "NONE"), replace(1), replace(2), held(3), held(4),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkReplaced(t, name, before, n, n[1], n[2]),
					checkBacking(t, imageB, n[:3]...), checkBacking(t, imageA, n[3:]...),
					checkCanaryView(5, 0, 1, 2),
				),
			},
			{
				// Without the hold the rollout goes through the rest.
				Config: canaryConfig(name, 5, imageB, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						replace(3), replace(4),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					checkReplaced(t, name, before, n, n[3], n[4]),
					checkBacking(t, imageB, n...), checkMembers(t, name, "STOPPED", n...),
					checkCanaryView(5, 0, 1, 2, 3, 4),
				),
			},
		},
	})
}
