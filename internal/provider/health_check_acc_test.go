package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// TestAccStatefulGroup_healthCheckBadInput: through the terraform CLI, a health check or update
// policy that the checks refuse stops at validate, naming the attribute, the value and what is
// allowed, and nothing is made. (TestCheckHealthCheck and TestHealthCheckAttributeValidators
// cover every case by direct call; this shows the diagnostics reach the user.)
func TestAccStatefulGroup_healthCheckBadInput(t *testing.T) {
	name := testPrefix + "badhc"
	steps := []struct{ config, err string }{
		{groupConfig(name, 1, `
    health_check {
      guest_agent {}
      tcp {
        port = 22
      }
    }`, ""), `(?s)template.health_check.*has 2 probe blocks \(guest_agent and\s+tcp\).*exactly one probe block`},
		{groupConfig(name, 1, `
    health_check {
      exec {
        command = ["/bin/tiny-service", "status"]
      }
      interval = "2s"
    }`, ""), `(?s)template.health_check.interval = "2s",\s+template.health_check.timeout = "5s":\s+timeout 5s is longer\s+than\s+interval 2s`},
		{groupConfig(name, 1, "", `  update_policy {
    on_failure = "RETRY"
  }`), `(?s)update_policy.on_failure.*\["STOP" "ROLLBACK"\],\s+got: "RETRY"`},
	}
	var ts []resource.TestStep
	for _, s := range steps {
		ts = append(ts, resource.TestStep{PreConfig: checkUntouched(t, name), Config: s.config, ExpectError: regexp.MustCompile(s.err)})
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    ts,
	})
}

// TestAccStatefulGroup_healthCheckConfig: a group with a health check and the update policy's new
// attributes applies and imports with all of them (import rebuilds the configuration from the
// group record), and a change of the health check alone updates the group in place with no
// member touched. The members are stopped: no probe runs, so the test needs no guest agent.
func TestAccStatefulGroup_healthCheckConfig(t *testing.T) {
	name := testPrefix + "hccfg"
	policy := func(onFailure string) string {
		return fmt.Sprintf("  running = false\n  update_policy {\n    min_ready     = \"30s\"\n    ready_timeout = \"10m\"\n    on_failure    = %q\n  }", onFailure)
	}
	exec := `
    health_check {
      exec {
        command = ["/bin/tiny-service", "status"]
      }
      interval            = "15s"
      unhealthy_threshold = 2
    }`
	http := `
    health_check {
      http {
        port = 8080
      }
    }`
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, exec, policy("ROLLBACK")),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("template").AtMapKey("health_check"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"guest_agent": knownvalue.Null(), "tcp": knownvalue.Null(), "http": knownvalue.Null(),
						"exec":              knownvalue.ObjectExact(map[string]knownvalue.Check{"command": knownvalue.ListExact([]knownvalue.Check{knownvalue.StringExact("/bin/tiny-service"), knownvalue.StringExact("status")})}),
						"interval":          knownvalue.StringExact("15s"),
						"timeout":           knownvalue.StringExact("5s"),
						"healthy_threshold": knownvalue.Int64Exact(1), "unhealthy_threshold": knownvalue.Int64Exact(2),
					})),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("update_policy").AtMapKey("on_failure"), knownvalue.StringExact("ROLLBACK")),
				},
				Check: checkMembers(t, name, "STOPPED", name+"-1", name+"-2"),
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				// The create's state keeps the planned CREATE of each member until a refresh.
				ImportStateVerifyIgnore: []string{"instances." + name + "-1.planned_action", "instances." + name + "-2.planned_action"},
			},
			{
				Config: groupConfig(name, 2, http, policy("STOP")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("template").AtMapKey("health_check").AtMapKey("http"), knownvalue.ObjectExact(map[string]knownvalue.Check{
						"port": knownvalue.Int64Exact(8080), "path": knownvalue.StringExact("/"), "expect_status": knownvalue.Int64Exact(200),
					})),
					expectMemberPlan(groupAddr, 0, "planned_action", knownvalue.StringExact("NONE")),
					expectMemberPlan(groupAddr, 1, "planned_action", knownvalue.StringExact("NONE")),
				}},
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
			},
		},
	})
}
