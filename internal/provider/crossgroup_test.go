package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// otherGroupConfig renders a second group, virt_stateful_group.other, on the same pool as the
// test group, and optionally a per-instance config of it for the instance named config.
func otherGroupConfig(name string, config string) string {
	out := fmt.Sprintf(`
resource "virt_stateful_group" "other" {
  name             = %q
  pool             = %q
  target_size      = 1
  shutdown_timeout = "0s"
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
  }
}
`, name, testPool())
	if config != "" {
		out += fmt.Sprintf(`
resource "virt_per_instance_config" "theirs" {
  group = virt_stateful_group.other.name
  name  = %q
}
`, config)
	}
	return out
}

// TestAccPerInstanceConfig_anotherGroupsMemberIsRefused: a per-instance config of group b that
// names a member of group a on the same host and pool is refused at plan, naming a, whether b
// is created in the same apply or exists already; a's member keeps its domain (same UUID) and
// the bytes of its boot and data volumes.
func TestAccPerInstanceConfig_anotherGroupsMemberIsRefused(t *testing.T) {
	a, b := testPrefix+"xga", testPrefix+"xgb"
	member := a + "-1"
	boot, data := member+"-boot.qcow2", member+"-data.qcow2"
	// a's member is stopped, so that the test can write its volumes (a running domain holds
	// them locked).
	groupA := groupConfig(a, 1, diskBlocks(8, "data"), "  running = false\n")
	sums := checksums{}
	var uuid string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if err := checkNothingLeft(t, a)(s); err != nil {
				return err
			}
			return checkNothingLeft(t, b)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: groupA,
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, a, "STOPPED", member),
					func(*terraform.State) error {
						sums.write(t, boot, 0x5a)
						sums.write(t, data, 0xa5)
						uuid = members(t, a)[member].UUID
						return nil
					},
				),
			},
			{
				// b does not exist yet: the config's plan checks the name on the host.
				Config:      groupA + otherGroupConfig(b, member),
				ExpectError: regexp.MustCompile(`(?s)Name belongs to another group.*` + regexp.QuoteMeta(member) + `.*belongs to\s+group\s+"` + a + `"`),
			},
			{
				Config: groupA + otherGroupConfig(b, ""),
				Check:  checkMembers(t, b, "RUNNING", b+"-1"),
			},
			{
				// b exists: its plan, which observes a's domain under the config's name, refuses it.
				Config:      groupA + otherGroupConfig(b, member),
				ExpectError: regexp.MustCompile(`(?s)` + regexp.QuoteMeta(member) + `: the name belongs to\s+group\s+"` + a + `"`),
			},
			{
				Config: groupA + otherGroupConfig(b, ""),
				Check: resource.ComposeTestCheckFunc(
					sums.same(t, boot),
					sums.same(t, data),
					checkMembers(t, a, "STOPPED", member),
					func(*terraform.State) error {
						if got := members(t, a)[member].UUID; got != uuid {
							return fmt.Errorf("%s has domain UUID %s, had %s: it was replaced", member, got, uuid)
						}
						return nil
					},
				),
			},
		},
	})
}
