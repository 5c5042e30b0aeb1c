package provider

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/compare"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// identityImport is the feature TestAccIdentity_importByIdentity needs.
var identityImport = needsTerraform{min: "1.12.0", feature: "Import by resource identity (import { identity = {...} })"}

// TestAccIdentity_importByIdentity: the group, its policy and a per-instance config carry their
// identities from creation on; each imports by an `import { identity }` block to the same
// identity (the policy and the config with an empty plan, the group with the takeover an import
// of a group always plans, changing no member); and all three, forgotten by the state and
// imported by identity blocks in one apply, are the same objects (members not restarted) and plan
// clean after.
func TestAccIdentity_importByIdentity(t *testing.T) {
	name := testPrefix + "ident"
	n1 := name + "-1"
	const configAddr = "virt_per_instance_config.test"
	// The policy's disk goes with the group's destroy (NEVER would keep it).
	base := groupConfig(name, 1, diskBlocks(8, "data"), "") + `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
` + pic("test", n1, nil, map[string]string{"role": "db"}, "")
	identities := []statecheck.StateCheck{
		statecheck.ExpectIdentity(groupAddr, map[string]knownvalue.Check{"name": knownvalue.StringExact(name)}),
		statecheck.ExpectIdentity(policyAddr, map[string]knownvalue.Check{"group": knownvalue.StringExact(name)}),
		statecheck.ExpectIdentity(configAddr, map[string]knownvalue.Check{"group": knownvalue.StringExact(name), "name": knownvalue.StringExact(n1)}),
		statecheck.ExpectIdentityValueMatchesState(groupAddr, tfjsonpath.New("name")),
		statecheck.ExpectIdentityValueMatchesState(policyAddr, tfjsonpath.New("group")),
		statecheck.ExpectIdentityValueMatchesStateAtPath(configAddr, tfjsonpath.New("name"), tfjsonpath.New("name")),
	}
	// The state's IDs are the same before the state forgets the three and after their import.
	gid, pid, cid := statecheck.CompareValue(compare.ValuesSame()), statecheck.CompareValue(compare.ValuesSame()), statecheck.CompareValue(compare.ValuesSame())
	checks := func() []statecheck.StateCheck {
		return slices.Concat(identities, []statecheck.StateCheck{
			gid.AddStateValue(groupAddr, tfjsonpath.New("id")),
			pid.AddStateValue(policyAddr, tfjsonpath.New("id")),
			cid.AddStateValue(configAddr, tfjsonpath.New("id")),
		})
	}
	forget := fmt.Sprintf(`
removed {
  from = %s
  lifecycle {
    destroy = false
  }
}
removed {
  from = %s
  lifecycle {
    destroy = false
  }
}
removed {
  from = %s
  lifecycle {
    destroy = false
  }
}
`, groupAddr, policyAddr, configAddr)
	importAll := base + fmt.Sprintf(`
import {
  to       = %s
  identity = { name = %q }
}
import {
  to       = %s
  identity = { group = %q }
}
import {
  to       = %s
  identity = { group = %q, name = %q }
}
`, groupAddr, name, policyAddr, name, configAddr, name, n1)
	domains := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		TerraformVersionChecks:   []tfversion.TerraformVersionCheck{identityImport},
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config:            base,
				ConfigStateChecks: checks(),
				Check:             domains.record(t, name),
			},
			// Each imported by an identity block in a working directory of its own, from the
			// identity its state has: the same identity again, and nothing to change.
			{
				ResourceName:     policyAddr,
				ImportState:      true,
				ImportStateKind:  resource.ImportBlockWithResourceIdentity,
				Config:           base,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:     configAddr,
				ImportState:      true,
				ImportStateKind:  resource.ImportBlockWithResourceIdentity,
				Config:           base,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				// The group's import takes it over (its owner in the group record changes at the
				// next apply), as an import by ID does: an update that changes no member.
				ResourceName:       groupAddr,
				ImportState:        true,
				ImportStateKind:    resource.ImportBlockWithResourceIdentity,
				ExpectNonEmptyPlan: true,
				Config:             base,
				ImportPlanChecks: resource.ImportPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), plannedMembers("NONE: "+engine.TakenOverWhy, n1)),
				}},
			},
			// The state forgets all three; they stay on the host.
			{
				Config: forget,
				Check:  domains.same(t, name),
			},
			// Imported by identity blocks and applied: the same objects, identities and IDs, and
			// the plan after the apply is empty (terraform-plugin-testing plans again after every
			// apply, and the next step says it too).
			{
				Config: importAll,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), plannedMembers("NONE: "+engine.TakenOverWhy, n1)),
					plancheck.ExpectResourceAction(policyAddr, plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction(configAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: checks(),
				Check:             domains.same(t, name),
			},
			{
				Config:           base,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
