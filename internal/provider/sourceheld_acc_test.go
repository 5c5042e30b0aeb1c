package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// heldGroupConfig renders group name as virt_stateful_group.holder: one member with a data disk,
// running or not.
func heldGroupConfig(name string, running bool) string {
	return fmt.Sprintf(`
resource "virt_stateful_group" "holder" {
  name             = %q
  pool             = %q
  target_size      = 1
  running          = %t
  shutdown_timeout = "0s"
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
`, name, testPool(), running)
}

// TestAccPerInstanceConfig_sourceHeldByAnotherDomainIsRefused: a per-instance config whose disk
// source is the data volume of another group's running member is refused at plan, naming the
// attribute, the value, the file and the domain that has it; both groups stay as they were (the
// volume's bytes, both domains' UUIDs and ids: neither restarted).
func TestAccPerInstanceConfig_sourceHeldByAnotherDomainIsRefused(t *testing.T) {
	a, b := testPrefix+"hlda", testPrefix+"hldb"
	aMember, bMember := a+"-1", b+"-1"
	data := aMember + "-data.qcow2"
	mine := groupConfig(b, 1, "", "")
	sums := checksums{}
	seen := map[string][2]string{} // name -> UUID, id
	note := func(*terraform.State) error {
		for base, n := range map[string]string{a: aMember, b: bMember} {
			d := members(t, base)[n]
			seen[n] = [2]string{d.UUID, fmt.Sprint(d.ID)}
		}
		return nil
	}
	unchanged := func(*terraform.State) error {
		for base, n := range map[string]string{a: aMember, b: bMember} {
			d := members(t, base)[n]
			if got := [2]string{d.UUID, fmt.Sprint(d.ID)}; got != seen[n] {
				return fmt.Errorf("domain %s has UUID and id %v, had %v: it was changed", n, got, seen[n])
			}
		}
		return nil
	}
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
				// Stopped, so that the test can write the volume (a running domain locks it).
				Config: heldGroupConfig(a, false) + mine,
				Check:  func(*terraform.State) error { sums.write(t, data, 0x5a); return nil },
			},
			{
				Config: heldGroupConfig(a, true) + mine,
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, a, "RUNNING", aMember), note),
			},
			{
				Config: heldGroupConfig(a, true) + mine + pic("test", bMember, []string{"logs=" + data}, nil, ""),
				ExpectError: regexp.MustCompile(`(?s)Disk source used by another domain.*preserved_state\.disk\s+"logs"\s+source\s+=\s+"` +
					regexp.QuoteMeta(data) + `".*is\s+a\s+disk\s+of\s+domain\s+` + regexp.QuoteMeta(aMember) + `.*no\s+other\s+domain\s+uses`),
			},
			{
				Config: heldGroupConfig(a, true) + mine,
				Check:  resource.ComposeTestCheckFunc(unchanged, checkMembers(t, b, "RUNNING", bMember)),
			},
			{
				// Stopped again to read the volume's bytes as they were written.
				Config: heldGroupConfig(a, false) + mine,
				Check:  sums.same(t, data),
			},
		},
	})
}
