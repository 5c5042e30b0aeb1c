package provider

import (
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TestAccPerInstanceConfig_statusWhenTheGroupResizesInTheSameApply: a config created in the same
// apply as the scale-out that makes its instance, or changed in the same apply as the scale-in
// that removes it, plans its status as known after apply (the group's apply, which runs first,
// decides it), so that Terraform never finds the apply's plan differing from the approved one
// ("Provider produced inconsistent final plan ... bug in the provider", seen before with a
// planned WAITING that the apply's own plan made EFFECTIVE). After apply the status is the one
// the group left.
func TestAccPerInstanceConfig_statusWhenTheGroupResizesInTheSameApply(t *testing.T) {
	name := testPrefix + "cfgsize"
	addr := "virt_per_instance_config.c"
	third := name + "-3"
	status := func(want string) statecheck.StateCheck {
		return statecheck.ExpectKnownValue(addr, tfjsonpath.New("status"), knownvalue.StringExact(want))
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: groupConfig(name, 1, "", "")},
			{
				Config: groupConfig(name, 3, "", "") + pic("c", third, nil, map[string]string{"k": "v1"}, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectUnknownValue(addr, tfjsonpath.New("status")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{status("EFFECTIVE")},
				Check:             checkMembers(t, name, "RUNNING", name+"-1", name+"-2", third),
			},
			{
				Config:            groupConfig(name, 2, "", "") + pic("c", third, nil, map[string]string{"k": "v2"}, ""),
				ConfigStateChecks: []statecheck.StateCheck{status("WAITING")},
				Check:             checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
			},
			{
				// Nothing changes: the status stays as it was, with an empty plan.
				Config: groupConfig(name, 2, "", "") + pic("c", third, nil, map[string]string{"k": "v2"}, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
				ConfigStateChecks: []statecheck.StateCheck{status("WAITING")},
			},
		},
	})
}
