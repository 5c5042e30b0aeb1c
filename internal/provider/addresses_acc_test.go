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
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// The three tests here change DHCP host entries, each on a NAT network of its own (testNet)
// rather than on the harness's network "default", so that they run in parallel with the others:
// no other test reads or writes their networks' host tables. Each network is 192.168.<octet>.0/24
// with DHCP over .2-.254, as "default" has; pins and the hand-made foreign entries sit at fixed
// host numbers of it (.241 and .242 pinned, .246 and .247 foreign), as they did on "default".
const macForeign = "02:7f:ac:c0:fe:01" // locally administered: no guest of any test has it

// testNet is a test's own libvirt NAT network on the system daemon.
type testNet struct {
	name   string // testPrefix + "<short>-net": the sweep removes one a killed run left
	bridge string // at most 15 characters, the kernel's limit for an interface name
	octet  int    // the third octet of its 192.168.<octet>.0/24, which nothing else on this machine uses
}

var (
	netAddr     = testNet{name: testPrefix + "addr-net", bridge: "virbr-tfa1", octet: 131}
	netAddrLive = testNet{name: testPrefix + "addrlive-net", bridge: "virbr-tfa2", octet: 132}
	netNewPin   = testNet{name: testPrefix + "newpin-net", bridge: "virbr-tfa3", octet: 133}
)

// ip is the address of host number h on the network.
func (n testNet) ip(h int) string { return fmt.Sprintf("192.168.%d.%d", n.octet, h) }

// subnet is the network's subnet as the provider's diagnostics print it.
func (n testNet) subnet() string { return fmt.Sprintf("192.168.%d.0/24", n.octet) }

// start defines and starts the network, after removing one of its name that a killed run left,
// and removes it at the test's end (after the test case's destroy), failing the test if it is
// still there then. It is persistent (net-define, net-start), not transient (net-create): the
// backend changes host entries live and in the persistent definition (AffectConfig), which
// libvirt refuses for a transient network, as it refuses virshNet's --config.
func (n testNet) start(t *testing.T) {
	t.Helper()
	uri := connectionURI(providerdata.NullString())
	if err := removeNetwork(uri, n.name); err != nil {
		t.Fatalf("remove the network %s an earlier run left: %v", n.name, err)
	}
	doc := fmt.Sprintf(`<network>
  <name>%s</name>
  <forward mode='nat'/>
  <bridge name='%s' stp='on' delay='0'/>
  <ip address='%s' netmask='255.255.255.0'>
    <dhcp>
      <range start='%s' end='%s'/>
    </dhcp>
  </ip>
</network>
`, n.name, n.bridge, n.ip(1), n.ip(2), n.ip(254))
	file := filepath.Join(t.TempDir(), n.name+".xml")
	if err := os.WriteFile(file, []byte(doc), 0o644); err != nil {
		t.Fatalf("write the network's XML: %v", err)
	}
	if out, err := exec.Command("virsh", "-c", uri, "net-define", file).CombinedOutput(); err != nil {
		t.Fatalf("virsh net-define %s: %v: %s", n.name, err, out)
	}
	t.Cleanup(func() {
		if err := removeNetwork(uri, n.name); err != nil {
			t.Errorf("remove the network %s: %v", n.name, err)
			return
		}
		if out, err := exec.Command("virsh", "-c", uri, "net-info", n.name).CombinedOutput(); err == nil {
			t.Errorf("the network %s is still there after its removal:\n%s", n.name, out)
		}
	})
	if out, err := exec.Command("virsh", "-c", uri, "net-start", n.name).CombinedOutput(); err != nil {
		t.Fatalf("virsh net-start %s: %v: %s", n.name, err, out)
	}
}

// removeNetwork stops and undefines the network name on uri; one that is not there, or not
// running, is no error.
func removeNetwork(uri, name string) error {
	if out, err := exec.Command("virsh", "-c", uri, "net-destroy", name).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "not found") && !strings.Contains(string(out), "not active") {
		return fmt.Errorf("virsh net-destroy %s: %v: %s", name, err, out)
	}
	if out, err := exec.Command("virsh", "-c", uri, "net-undefine", name).CombinedOutput(); err != nil &&
		!strings.Contains(string(out), "not found") {
		return fmt.Errorf("virsh net-undefine %s: %v: %s", name, err, out)
	}
	return nil
}

// sweepNetworks removes the networks on uri named testPrefix... (the backend lists none), with
// virsh, and says how many.
func sweepNetworks(uri string) (int, error) {
	out, err := exec.Command("virsh", "-c", uri, "net-list", "--all", "--name").CombinedOutput()
	if err != nil {
		return 0, fmt.Errorf("virsh net-list: %v: %s", err, out)
	}
	n := 0
	for _, name := range strings.Fields(string(out)) {
		if !strings.HasPrefix(name, testPrefix) {
			continue
		}
		if err := removeNetwork(uri, name); err != nil {
			return n, err
		}
		n++
	}
	return n, nil
}

// hostEntries reads the network's DHCP host entries, MAC -> address.
func hostEntries(t *testing.T, network string) map[string]string {
	t.Helper()
	n, err := testLibvirt(t).DHCPNetwork(context.Background(), network)
	if err != nil {
		t.Fatalf("read network %s: %v", network, err)
	}
	out := map[string]string{}
	for _, h := range n.Hosts {
		out[strings.ToLower(h.MAC)] = h.IP
	}
	return out
}

// virshNet runs virsh net-update of the network's DHCP host entries, live and persistent.
func virshNet(t *testing.T, network, command, xml string) {
	t.Helper()
	out, err := exec.Command("virsh", "-c", connectionURI(providerdata.NullString()), "net-update", network, command, "ip-dhcp-host", xml, "--live", "--config").CombinedOutput()
	if err != nil {
		t.Fatalf("virsh net-update %s %s: %v: %s", network, command, err, out)
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
// removed members' entries, the destroy the rest, and the hand-made entry is never touched. On a
// network of its own (netAddr), in parallel with the other tests.
func TestAccStatefulGroup_reservedAddresses(t *testing.T) {
	name := testPrefix + "addr"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	net := netAddr
	addrPin, addrForeign := net.ip(241), net.ip(246)
	net.start(t)
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
	// Removed with the network at the end.
	virshNet(t, net.name, "add-last", fmt.Sprintf("<host mac='%s' ip='%s'/>", macForeign, addrForeign))

	config := func(img string, size int, pins string) string {
		body := fmt.Sprintf(`    memory_mib = 128
    boot_disk {
      source_image = %q
      size_mib     = 64
    }
    network_interface {
      network = %q
      address = "reserved"
    }
    console_log_dir = %q
`, img, net.name, consoleLogDir)
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
		if got := hostEntries(t, net.name)[macForeign]; got != addrForeign {
			return fmt.Errorf("the hand-made entry for %s is at %q, want %s", macForeign, got, addrForeign)
		}
		return nil
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			entries := hostEntries(t, net.name)
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
						entries := hostEntries(t, net.name)
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
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("planned_action"),
						knownvalue.StringExact("REPLACE: boot image changed")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(s *terraform.State) error {
						entries := hostEntries(t, net.name)
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
						if got := hostEntries(t, net.name)[macs[members3[0]]]; got != addrPin {
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
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "10\.1\.2\.3": outside the network's subnet.*` + regexp.QuoteMeta(net.subnet())),
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
						entries := hostEntries(t, net.name)
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
// by hand is drift, put back at the same address; removing address releases it live. On a
// network of its own (netAddrLive), in parallel with the other tests.
func TestAccStatefulGroup_reservationOfARunningMember(t *testing.T) {
	name := testPrefix + "addrlive"
	member := name + "-1"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	net := netAddrLive
	net.start(t)
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
      network = %q%s
    }
    console_log_dir = %q
`, image, net.name, address, consoleLogDir), ""), "memory_mib  = 64\n", "", 1)
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
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if got, ok := hostEntries(t, net.name)[mac]; ok {
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
					if got, ok := hostEntries(t, net.name)[mac]; ok {
						return fmt.Errorf("a dynamic address has an entry at %s", got)
					}
					return nil
				},
			},
			{
				Config: config(reserved),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("planned_action"),
						knownvalue.StringExact("REFRESH: network_interface[0].address reserved")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got := hostEntries(t, net.name)[mac]; got != ip {
							return fmt.Errorf("the running member's entry is %q, want the address it leased, %s", got, ip)
						}
						return nil
					},
					sameBoot,
				),
			},
			{
				// The entry deleted by hand is drift: put back at the same address, live.
				PreConfig: func() { virshNet(t, net.name, "delete", fmt.Sprintf("<host mac='%s' ip='%s'/>", mac, ip)) },
				Config:    config(reserved),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("planned_action"),
						knownvalue.StringExact("REFRESH: drift: network_interface[0].address reserved")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got := hostEntries(t, net.name)[mac]; got != ip {
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
					plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("planned_action"),
						knownvalue.StringExact("REFRESH: network_interface[0].address reservation released")),
				}},
				Check: resource.ComposeTestCheckFunc(
					func(*terraform.State) error {
						if got, ok := hostEntries(t, net.name)[mac]; ok {
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
// apply that creates the group, and the destroy releases it. On a network of its own
// (netNewPin), in parallel with the other tests.
func TestAccPerInstanceConfig_pinsOfANewGroup(t *testing.T) {
	name := testPrefix + "newpin"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	net := netNewPin
	good, foreign := net.ip(242), net.ip(247)
	const foreignMAC = "02:7f:ac:c0:fe:02"
	net.start(t)
	// Removed with the network at the end.
	virshNet(t, net.name, "add-last", fmt.Sprintf("<host mac='%s' ip='%s'/>", foreignMAC, foreign))
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
		return groupConfig(name, 2, fmt.Sprintf(`    network_interface {
      network = %q
    }
`, net.name), "") + pins
	}
	nothingMade := func() {
		if left := leftovers(t, name+"-"); len(left) > 0 {
			t.Fatalf("a refused plan left %v", left)
		}
		for _, m := range []string{member1, member2} {
			if ip, ok := hostEntries(t, net.name)[engine.MACAddress(name, m, 0)]; ok {
				t.Fatalf("a refused plan made %s's entry at %s", m, ip)
			}
		}
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if ip, ok := hostEntries(t, net.name)[engine.MACAddress(name, member1, 0)]; ok {
				return fmt.Errorf("the destroy left %s's entry at %s", member1, ip)
			}
			if got := hostEntries(t, net.name)[foreignMAC]; got != foreign {
				return fmt.Errorf("the hand-made entry for %s is at %q, want %s", foreignMAC, got, foreign)
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config:      config(pin("a", member1, "nic0", "10.1.2.3")),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)network_ip nic0 address = "10\.1\.2\.3": outside the network's subnet.*` + regexp.QuoteMeta(net.subnet())),
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
					if got := hostEntries(t, net.name)[engine.MACAddress(name, member1, 0)]; got != good {
						return fmt.Errorf("%s's entry is %q, want the pin %s", member1, got, good)
					}
					return nil
				},
			},
		},
	})
}
