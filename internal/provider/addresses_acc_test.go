package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// Stable addresses on the harness's network "default" (192.168.122.0/24, DHCP .2-.254). Pins
// use 192.168.122.241-.249, which no other test uses; the hand-made foreign entry is at .246.
const (
	addrPin     = "192.168.122.241"
	addrForeign = "192.168.122.246"
	macForeign  = "02:7f:ac:c0:fe:01" // locally administered: no guest of any test has it
)

// hostEntries reads the "default" network's DHCP host entries, MAC -> address.
func hostEntries(t *testing.T) map[string]string {
	t.Helper()
	n, err := testLibvirt(t).DHCPNetwork(context.Background(), "default")
	if err != nil {
		t.Fatalf("read network default: %v", err)
	}
	out := map[string]string{}
	for _, h := range n.Hosts {
		out[strings.ToLower(h.MAC)] = h.IP
	}
	return out
}

// virshNet runs virsh net-update on "default", live and persistent.
func virshNet(t *testing.T, command, xml string) {
	t.Helper()
	out, err := exec.Command("virsh", "-c", "qemu:///system", "net-update", "default", command, "ip-dhcp-host", xml, "--live", "--config").CombinedOutput()
	if err != nil {
		t.Fatalf("virsh net-update %s: %v: %s", command, err, out)
	}
}

// dataSourceIPs are the data source's ip_addresses of the named member.
func dataSourceIPs(s *terraform.State, member string) []string {
	attrs := s.RootModule().Resources[managedAddr].Primary.Attributes
	for i := 0; ; i++ {
		name, ok := attrs[fmt.Sprintf("instances.%d.name", i)]
		if !ok {
			return nil
		}
		if name != member {
			continue
		}
		var ips []string
		for j := 0; ; j++ {
			ip, ok := attrs[fmt.Sprintf("instances.%d.ip_addresses.%d", i, j)]
			if !ok {
				return ips
			}
			ips = append(ips, ip)
		}
	}
}

// TestAccStatefulGroup_reservedAddresses boots three tiny guests with address = "reserved" and
// checks, in the network's XML, the data source and the guests' own console logs (udhcpc prints
// the address it was given): each member gets a host entry by its MAC and the address in it; a
// replacement of all keeps each member's address; a pin from a per-instance config restarts its
// member, which then has the pinned address; a pin on an address a hand-made entry holds, and
// one outside the subnet, are refused at plan with nothing changed; the scale-in releases the
// removed members' entries, the destroy the rest, and the hand-made entry is never touched.
func TestAccStatefulGroup_reservedAddresses(t *testing.T) {
	name := testPrefix + "addr"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	image := tinyGuestImage(t, testPrefix+"image-addr.qcow2")
	image2 := tinyGuestImage(t, testPrefix+"image-addr2.qcow2")
	members3 := []string{name + "-1", name + "-2", name + "-3"}
	macs := map[string]string{}
	for _, m := range members3 {
		macs[m] = engine.MACAddress(name, m, 0)
		logFile := filepath.Join(consoleLogDir, m+".console.log")
		_ = os.Remove(logFile)
		t.Cleanup(func() { _ = os.Remove(logFile) })
	}
	virshNet(t, "add-last", fmt.Sprintf("<host mac='%s' ip='%s'/>", macForeign, addrForeign))
	t.Cleanup(func() { virshNet(t, "delete", fmt.Sprintf("<host mac='%s' ip='%s'/>", macForeign, addrForeign)) })

	config := func(img string, size int, pins string) string {
		body := fmt.Sprintf(`    memory_mib = 128
    boot_disk {
      source_image = %q
      size_mib     = 64
    }
    network_interface {
      network = "default"
      address = "reserved"
    }
    console_log_dir = %q
`, img, consoleLogDir)
		after := ""
		if pins != "" {
			// Read once the config's change is applied.
			after = "  depends_on = [virt_per_instance_config.pin]\n"
		}
		return strings.Replace(groupConfig(name, size, body, ""), "memory_mib  = 64\n", "", 1) + `
data "virt_managed_instances" "test" {
  group = virt_stateful_group.test.name
` + after + `}
` + pins
	}
	pin := func(member, address string) string {
		return fmt.Sprintf(`
resource "virt_per_instance_config" "pin" {
  group = virt_stateful_group.test.name
  name  = %q
  preserved_state {
    network_ip {
      interface = "nic0"
      address   = %q
    }
  }
}
`, member, address)
	}
	held := map[string]string{} // member -> address, from the first step
	// guestHas waits until the member's console shows it was given ip n times.
	guestHas := func(member, ip string, n int) error {
		re := regexp.MustCompile(`(?s)(TINYGUEST net eth0=` + regexp.QuoteMeta(ip) + `\n.*){` + fmt.Sprint(n) + `}`)
		return waitConsole(member, re)
	}
	foreignUntouched := func(*terraform.State) error {
		if got := hostEntries(t)[macForeign]; got != addrForeign {
			return fmt.Errorf("the hand-made entry for %s is at %q, want %s", macForeign, got, addrForeign)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			entries := hostEntries(t)
			for m, mac := range macs {
				if ip, ok := entries[mac]; ok {
					return fmt.Errorf("the destroy left %s's entry (%s %s)", m, mac, ip)
				}
			}
			if err := foreignUntouched(s); err != nil {
				return err
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: config(image, 3, ""),
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						entries := hostEntries(t)
						seen := map[string]string{}
						for _, m := range members3 {
							ip, ok := entries[macs[m]]
							if !ok {
								return fmt.Errorf("no host entry for %s's MAC %s: %v", m, macs[m], entries)
							}
							if other, dup := seen[ip]; dup {
								return fmt.Errorf("%s and %s both have %s", m, other, ip)
							}
							seen[ip], held[m] = m, ip
							if got := dataSourceIPs(s, m); len(got) == 0 || got[0] != ip {
								return fmt.Errorf("the data source shows %v for %s, want %s first", got, m, ip)
							}
						}
						return nil
					},
					func(*terraform.State) error {
						for _, m := range members3 {
							if err := guestHas(m, held[m], 1); err != nil {
								return err
							}
						}
						return nil
					},
					foreignUntouched,
				),
			},
			{
				// A new boot image replaces every member: each keeps its entry, and its guest,
				// booted anew, is given the same address again.
				Config: config(image2, 3, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REPLACE: boot image changed")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						entries := hostEntries(t)
						for _, m := range members3 {
							if entries[macs[m]] != held[m] {
								return fmt.Errorf("after the replacement %s's entry is %q, want %s", m, entries[macs[m]], held[m])
							}
							if got := dataSourceIPs(s, m); len(got) == 0 || got[0] != held[m] {
								return fmt.Errorf("after the replacement the data source shows %v for %s, want %s first", got, m, held[m])
							}
						}
						return nil
					},
					func(*terraform.State) error {
						for _, m := range members3 {
							if err := waitConsole(m, regexp.MustCompile(`(?s)(TINYGUEST ready.*){2}`)); err != nil {
								return err
							}
							if err := guestHas(m, held[m], 2); err != nil {
								return err
							}
						}
						return nil
					},
				),
			},
			{
				// A pin restarts its member (the guest must ask again), whose guest then has it.
				Config: config(image2, 3, pin(members3[0], addrPin)),
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						if got := hostEntries(t)[macs[members3[0]]]; got != addrPin {
							return fmt.Errorf("%s's entry is %q, want the pin %s", members3[0], got, addrPin)
						}
						if got := dataSourceIPs(s, members3[0]); len(got) == 0 || got[0] != addrPin {
							return fmt.Errorf("the data source shows %v for %s, want %s first", got, members3[0], addrPin)
						}
						if got := s.RootModule().Resources[managedAddr].Primary.Attributes["instances.0.preserved_state_from_config.network_ip.nic0"]; got != addrPin {
							return fmt.Errorf("the data source's preserved_state_from_config.network_ip.nic0 is %q, want %s", got, addrPin)
						}
						return guestHas(members3[0], addrPin, 1)
					},
					foreignUntouched,
				),
			},
			{
				// An address a hand-made entry holds for another MAC is refused at plan.
				Config:      config(image2, 3, pin(members3[0], addrForeign)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "` + regexp.QuoteMeta(addrForeign) + `" is reserved.*` + macForeign),
			},
			{
				// An address outside the network's subnet is refused at plan, saying what is
				// allowed.
				Config:      config(image2, 3, pin(members3[0], "10.1.2.3")),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "10\.1\.2\.3": outside the network's subnet.*192\.168\.122\.0/24`),
			},
			{
				// Nothing changed by the refused plans.
				Config: config(image2, 3, pin(members3[0], addrPin)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectEmptyPlan(),
				}},
			},
			{
				// The scale-in releases the removed members' entries and no other.
				Config: config(image2, 1, pin(members3[0], addrPin)),
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						entries := hostEntries(t)
						for _, m := range members3[1:] {
							if ip, ok := entries[macs[m]]; ok {
								return fmt.Errorf("the scale-in left %s's entry at %s", m, ip)
							}
						}
						if got := entries[macs[members3[0]]]; got != addrPin {
							return fmt.Errorf("the scale-in changed the kept member's entry to %q", got)
						}
						return nil
					},
					foreignUntouched,
				),
			},
		},
	})
}

// TestAccStatefulGroup_reservationOfARunningMember: address = "reserved" added to a running
// member reserves the address its guest leased, live (REFRESH, the same boot); its entry deleted
// by hand is drift, put back at the same address; removing address releases it live.
func TestAccStatefulGroup_reservationOfARunningMember(t *testing.T) {
	name := testPrefix + "addrlive"
	member := name + "-1"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	image := tinyGuestImage(t, testPrefix+"image-addrlive.qcow2")
	logFile := filepath.Join(consoleLogDir, member+".console.log")
	_ = os.Remove(logFile)
	t.Cleanup(func() { _ = os.Remove(logFile) })
	mac := engine.MACAddress(name, member, 0)
	config := func(address string) string {
		return strings.Replace(groupConfig(name, 1, fmt.Sprintf(`    memory_mib = 128
    boot_disk {
      source_image = %q
      size_mib     = 64
    }
    network_interface {
      network = "default"%s
    }
    console_log_dir = %q
`, image, address, consoleLogDir), ""), "memory_mib  = 64\n", "", 1)
	}
	reserved := "\n      address = \"reserved\""
	leased := regexp.MustCompile(`TINYGUEST net eth0=(\S+)\n`)
	var ip string
	var id int32
	sameBoot := func(*terraform.State) error {
		if d := members(t, name)[member]; d.ID != id {
			return fmt.Errorf("%s was restarted: id %d -> %d", member, id, d.ID)
		}
		return nil
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if got, ok := hostEntries(t)[mac]; ok {
				return fmt.Errorf("the destroy left the entry at %s", got)
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: config(""),
				Check: func(*terraform.State) error {
					if err := waitConsole(member, leased); err != nil {
						return err
					}
					ip = leased.FindStringSubmatch(consoleLog(member))[1]
					id = members(t, name)[member].ID
					if got, ok := hostEntries(t)[mac]; ok {
						return fmt.Errorf("a dynamic address has an entry at %s", got)
					}
					return nil
				},
			},
			{
				Config: config(reserved),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: network_interface[0].address reserved")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got := hostEntries(t)[mac]; got != ip {
							return fmt.Errorf("the running member's entry is %q, want the address it leased, %s", got, ip)
						}
						return nil
					},
					sameBoot,
				),
			},
			{
				// The entry deleted by hand is drift: put back at the same address, live.
				PreConfig: func() { virshNet(t, "delete", fmt.Sprintf("<host mac='%s' ip='%s'/>", mac, ip)) },
				Config:    config(reserved),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: drift: network_interface[0].address reserved")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got := hostEntries(t)[mac]; got != ip {
							return fmt.Errorf("the entry put back is %q, want %s", got, ip)
						}
						return nil
					},
					sameBoot,
				),
			},
			{
				Config: config(""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: network_interface[0].address reservation released")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got, ok := hostEntries(t)[mac]; ok {
							return fmt.Errorf("the entry is still there at %s", got)
						}
						return nil
					},
					sameBoot,
				),
			},
		},
	})
}

// TestAccPerInstanceConfig_pinsOfANewGroup: per-instance configs created in the same apply as
// their group have their pinned addresses checked at plan, against the group's planned template
// and the host's network, as they are once the group exists: outside the subnet, held by
// another MAC's entry, pinned by two configs, on an interface the template lacks; all refused
// with no group, domain or entry made. A good pin then gets its member that address in the
// apply that creates the group, and the destroy releases it.
func TestAccPerInstanceConfig_pinsOfANewGroup(t *testing.T) {
	name := testPrefix + "newpin"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	const (
		good       = "192.168.122.242"
		foreign    = "192.168.122.247"
		foreignMAC = "02:7f:ac:c0:fe:02"
	)
	virshNet(t, "add-last", fmt.Sprintf("<host mac='%s' ip='%s'/>", foreignMAC, foreign))
	t.Cleanup(func() { virshNet(t, "delete", fmt.Sprintf("<host mac='%s' ip='%s'/>", foreignMAC, foreign)) })
	member1, member2 := name+"-1", name+"-2"
	pin := func(res, member, iface, address string) string {
		return fmt.Sprintf(`
resource "virt_per_instance_config" %q {
  group = virt_stateful_group.test.name
  name  = %q
  preserved_state {
    network_ip {
      interface = %q
      address   = %q
    }
  }
}
`, res, member, iface, address)
	}
	config := func(pins string) string {
		return groupConfig(name, 2, `    network_interface {
      network = "default"
    }
`, "") + pins
	}
	nothingMade := func() {
		if left := leftovers(t, name+"-"); len(left) > 0 {
			t.Fatalf("a refused plan left %v", left)
		}
		for _, m := range []string{member1, member2} {
			if ip, ok := hostEntries(t)[engine.MACAddress(name, m, 0)]; ok {
				t.Fatalf("a refused plan made %s's entry at %s", m, ip)
			}
		}
	}
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if ip, ok := hostEntries(t)[engine.MACAddress(name, member1, 0)]; ok {
				return fmt.Errorf("the destroy left %s's entry at %s", member1, ip)
			}
			if got := hostEntries(t)[foreignMAC]; got != foreign {
				return fmt.Errorf("the hand-made entry for %s is at %q, want %s", foreignMAC, got, foreign)
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config:      config(pin("a", member1, "nic0", "10.1.2.3")),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "10\.1\.2\.3": outside the network's subnet.*192\.168\.122\.0/24`),
			},
			{
				PreConfig:   nothingMade,
				Config:      config(pin("a", member1, "nic0", foreign)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "` + regexp.QuoteMeta(foreign) + `" is reserved.*` + foreignMAC),
			},
			{
				PreConfig:   nothingMade,
				Config:      config(pin("a", member1, "nic0", good) + pin("b", member2, "nic0", good)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "` + regexp.QuoteMeta(good) + `" is pinned already for\s+instance\s+"` + name + `-[12]"`),
			},
			{
				PreConfig:   nothingMade,
				Config:      config(pin("a", member1, "nic1", good)),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip interface = "nic1", but the group's template has 1\s+network_interface blocks.*nic0 to nic0`),
			},
			{
				PreConfig: nothingMade,
				Config:    config(pin("a", member1, "nic0", good)),
				Check: func(*terraform.State) error {
					if got := hostEntries(t)[engine.MACAddress(name, member1, 0)]; got != good {
						return fmt.Errorf("%s's entry is %q, want the pin %s", member1, got, good)
					}
					return nil
				},
			},
		},
	})
}
