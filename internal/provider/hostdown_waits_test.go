// This file holds the acceptance tests of scale-in, destroy and drain with a host down (issue 42,
// items 4 and 7): a change that waits for its host is shown, and nothing is done in its place.

package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// h3Nowhere is a uri for h3 where no daemon answers. The tests point h3 at it rather than stop
// h3's daemon: another acceptance run, starting meanwhile, starts every stopped harness host
// again (sweepHosts), which a stopped daemon cannot be kept from.
const h3Nowhere = "qemu+unix:///session?socket=/nonexistent/tfacc-h3-sock"

// hostsProviderH3 is hostsProvider with h3 at uri.
func hostsProviderH3(uri string) string {
	return fmt.Sprintf(`
provider "virt" {
  host {
    name = "h2"
    uri  = %q
  }
  host {
    name = "h3"
    uri  = %q
  }
}
`, testHostH2URI, uri)
}

// dataPolicy preserves the data disk until its member is deleted for good.
const dataPolicy = `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
`

// keptPolicyConfig is a group of size stopped members over the default host and h3, with a data
// disk its policy keeps for ever (NEVER), and a per-instance config of member 1.
func keptPolicyConfig(name string, size int, h3 string) string {
	return hostsProviderH3(h3) + fmt.Sprintf(`
resource "virt_per_instance_config" "one" {
  group = virt_stateful_group.test.name
  name  = "%s-1"
}
`, name) + `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}
` + groupConfig(name, size, diskBlocks(8, "data"), `
  running = false
  distribution_policy {
    hosts = ["default", "h3"]
  }
`)
}

// keptDataOnly is CheckDestroy for keptPolicyConfig's group: no domain and no group record is
// left, and the data volumes the NEVER rule keeps are there with their bytes (sums); they are
// then deleted, as the user would once they no longer want them.
func keptDataOnly(t *testing.T, group string, sums hostSums) func(*terraform.State) error {
	return func(s *terraform.State) error {
		if err := sums.same(t)(s); err != nil {
			return err
		}
		for k := range sums {
			host, vol, _ := strings.Cut(k, "/")
			if err := hostConn(t, host).DeleteVolume(context.Background(), harnessPool(host), vol); err != nil {
				return fmt.Errorf("delete the kept volume %s on %s: %w", vol, host, err)
			}
		}
		return checkNothingLeftOnHosts(t, group)(s)
	}
}

// TestAccStatefulGroup_hostDownScaleInAndDestroy is issue 42's items 4 and 7 on real libvirt.
// Members 1 on the default host and 2 on h3, h3 stopped: the scale-in 2 -> 1 picks member 2 (the
// highest index) as it would with h3 up; its deletion waits for h3, member 1 is untouched, and
// every plan while h3 is down shows the wait. A destroy with h3 down fails, and its policy and
// per-instance config stay in the state. Once h3 answers, member 2 goes (its NEVER data volume kept), and the destroy
// completes, keeping both data volumes byte for byte.
func TestAccStatefulGroup_hostDownScaleInAndDestroy(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "hdscale"
	m1, m2 := name+"-1", name+"-2"
	sums := hostSums{}
	waits := "NONE: scale-in waits for host h3, which cannot be reached"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             keptDataOnly(t, name, sums),
		Steps: []resource.TestStep{
			{
				Config: keptPolicyConfig(name, 2, testHostH3URI),
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {m1}, "h3": {m2}}),
					func(*terraform.State) error {
						sums.write(t, testHostDefault, m1+"-data.qcow2", 0x1d)
						sums.write(t, testHostH3, m2+"-data.qcow2", 0x2d)
						return nil
					},
				),
			},
			{
				// h3 stops; the scale-in's pick is member 2, on h3: it waits, member 1 stays.
				Config: keptPolicyConfig(name, 1, h3Nowhere),
				// The plan after the apply shows the wait again.
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					memberActions{want: map[string]string{m1: "NONE", m2: waits}},
				}},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {m1}}),
					placementOf(t, name, m2, testHostH3),
				),
			},
			{
				// While h3 is down, the wait is shown: the plan is not empty.
				Config:             keptPolicyConfig(name, 1, h3Nowhere),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				// A destroy with h3 down fails before anything of the group goes: its policy and
				// its config refuse first (Terraform destroys them before the group).
				Config:      keptPolicyConfig(name, 1, h3Nowhere),
				Destroy:     true,
				ExpectError: regexp.MustCompile(`(?s)cannot be destroyed now.*` + m2),
			},
			{
				// h3 is back: the policy is still in the state, and the waiting pick goes now,
				// its data volume kept by NEVER.
				Config: keptPolicyConfig(name, 1, testHostH3URI),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_stateful_policy.test", plancheck.ResourceActionNoop),
					plancheck.ExpectResourceAction("virt_per_instance_config.one", plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_stateful_policy.test", tfjsonpath.New("group"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue("virt_per_instance_config.one", tfjsonpath.New("name"), knownvalue.StringExact(m1)),
				},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {m1}, "h3": nil}),
					placementOf(t, name, m2, ""),
					sums.same(t),
				),
			},
			{
				Config:   keptPolicyConfig(name, 1, testHostH3URI),
				PlanOnly: true,
			},
		},
	})
}

// TestAccMove_drainSourceDown is issue 42's item 7 for a drain: member 2 on h3, h3 stopped, and
// drain = ["h3"]: the plan is not empty, member 2's planned action is the move that waits, and
// nothing moves; once h3 answers, the move runs.
func TestAccMove_drainSourceDown(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "hddrain"
	m1, m2 := name+"-1", name+"-2"
	hosts := `    hosts = ["default", "h3"]`
	drained := hosts + "\n    drain = [\"h3\"]"
	cfg := func(policy, h3 string) string {
		return hostsProviderH3(h3) + dataPolicy + groupConfig(name, 2, diskBlocks(8, "data"), fmt.Sprintf(`
  running = false
  distribution_policy {
%s
  }
`, policy))
	}
	waits := "MOVE: h3 -> default waits: host h3 cannot be reached"
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: cfg(hosts, testHostH3URI),
				Check:  onHosts(t, name, map[string][]string{"default": {m1}, "h3": {m2}}),
			},
			{
				Config: cfg(drained, h3Nowhere),
				// The plan after the apply shows the move that waits again.
				ExpectNonEmptyPlan: true,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					memberActions{want: map[string]string{m1: "NONE", m2: waits}},
				}},
				Check: onHosts(t, name, map[string][]string{"default": {m1}}),
			},
			{
				// The drain is applied and h3 is still down: the pending move keeps the plan
				// from being empty.
				Config:             cfg(drained, h3Nowhere),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			{
				Config: cfg(drained, testHostH3URI),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					memberActions{want: map[string]string{m1: "NONE", m2: "MOVE: h3 -> default (cold)"}},
				}},
				Check: onHosts(t, name, map[string][]string{"default": {m1, m2}, "h3": nil}),
			},
			{
				Config:   cfg(drained, testHostH3URI),
				PlanOnly: true,
			},
		},
	})
}
