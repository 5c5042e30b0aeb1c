// The real-image tests of the template's features (firmware, cpu, graphics, rng, virtiofs
// shares, reserved addresses): the real cloud image boots with each, and the guest shows it.
// make testacc-real runs them with the rest of TestAccReal.

package provider

import (
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// realCPUModel and realCPUModel2 are CPU models libvirt lists as usable for TCG (domain_type =
// "qemu") with QEMU 7.2; /proc/cpuinfo's model name carries the word.
const (
	realCPUModel  = "Nehalem"
	realCPUModel2 = "Westmere"
)

// TestAccReal_efi boots the cloud image with firmware = "efi" (OVMF; systemd-boot on the image's
// EFI system partition): the guest runs under UEFI (/sys/firmware/efi) and cloud-init took its
// NoCloud seed as under BIOS.
func TestAccReal_efi(t *testing.T) {
	name := testPrefix + "realefi"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realefi.qcow2")
	freshConsoleLog(t, member)
	config := realGroup(name, image, 1, `    firmware = "efi"
    network_interface {
      type = "user"
    }
    metadata = { role = "efi" }
    cloud_init {}
`, "") + realInstances
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				if err := checkNoCloud(t, member, 1, map[string]string{"role": "efi"}); err != nil {
					return err
				}
				if _, err := guestOutput(member, "/usr/bin/test", "-d", "/sys/firmware/efi"); err != nil {
					return fmt.Errorf("%s did not boot under UEFI (no /sys/firmware/efi): %v", member, err)
				}
				return nil
			},
		}},
	})
}

// TestAccReal_cpu boots the cloud image with a custom CPU model: the guest sees the model; a cpu
// change restarts the member (a new boot of the same disk: a file written before is still there)
// and the guest sees the new model.
func TestAccReal_cpu(t *testing.T) {
	name := testPrefix + "realcpu"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realcpu.qcow2")
	freshConsoleLog(t, member)
	config := func(model string) string {
		return realGroup(name, image, 1, fmt.Sprintf(`    cpu {
      mode  = "custom"
      model = %q
    }
    network_interface {
      type = "user"
    }
    cloud_init {}
`, model), "") + realInstances
	}
	cpuinfoHas := func(model string) error {
		out, err := guestOutput(member, "/bin/grep", "-m1", "^model name", "/proc/cpuinfo")
		if err != nil {
			return err
		}
		if !strings.Contains(out, model) {
			return fmt.Errorf("%s's CPU is %q, want the %s model", member, strings.TrimSpace(out), model)
		}
		return nil
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config(realCPUModel),
				Check: func(*terraform.State) error {
					if err := checkNoCloud(t, member, 1, nil); err != nil {
						return err
					}
					if err := cpuinfoHas(realCPUModel); err != nil {
						return err
					}
					// A file on the boot disk, to find again after the restart.
					_, err := guestOutput(member, "/bin/sh", "-c", "echo kept > /var/tmp/tfacc-marker && sync")
					return err
				},
			},
			{
				Config: config(realCPUModel2),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^RESTART: .*cpu`))),
				}},
				Check: func(*terraform.State) error {
					if _, err := waitCloudInit(t, member, 2); err != nil {
						return err
					}
					if err := cpuinfoHas(realCPUModel2); err != nil {
						return err
					}
					out, err := guestOutput(member, "/bin/cat", "/var/tmp/tfacc-marker")
					if err != nil || out != "kept\n" {
						return fmt.Errorf("the file written before the restart reads %q (%v) in %s", out, err, member)
					}
					return nil
				},
			},
		},
	})
}

// TestAccReal_graphicsRng boots the cloud image with VNC graphics and a virtio-rng device: the
// guest's hardware RNG is the virtio one, and the data source has the member's VNC port.
func TestAccReal_graphicsRng(t *testing.T) {
	name := testPrefix + "realdev"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realdev.qcow2")
	freshConsoleLog(t, member)
	config := realGroup(name, image, 1, `    graphics {
      type = "vnc"
    }
    rng {}
    network_interface {
      type = "user"
    }
    cloud_init {}
`, "") + realInstances
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config: config,
			Check: resource.ComposeTestCheckFunc(
				func(*terraform.State) error {
					if err := checkNoCloud(t, member, 1, nil); err != nil {
						return err
					}
					out, err := guestOutput(member, "/bin/cat", "/sys/class/misc/hw_random/rng_current")
					if err != nil || !strings.HasPrefix(out, "virtio_rng") {
						return fmt.Errorf("%s's hardware RNG is %q (%v), want virtio_rng", member, strings.TrimSpace(out), err)
					}
					return nil
				},
				func(s *terraform.State) error {
					// The data source was read at apply, when the member was already running.
					port := s.RootModule().Resources[managedAddr].Primary.Attributes["instances.0.graphics_port"]
					if p, err := strconv.Atoi(port); err != nil || p < 5900 {
						return fmt.Errorf("the data source's graphics_port for %s is %q, want a VNC port (5900 or more)", member, port)
					}
					return nil
				},
			),
		}},
	})
}

// TestAccReal_virtiofsShare shares a host directory with the member (filesystem, virtiofs) and
// mounts it in the guest from cloud-init's runcmd: the guest reads the host's file and the host
// reads the guest's.
func TestAccReal_virtiofsShare(t *testing.T) {
	name := testPrefix + "realfs"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realfs.qcow2")
	freshConsoleLog(t, member)
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "from-host"), []byte("hello from the host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	userData := "#cloud-config\nruncmd:\n  - [mkdir, -p, /mnt/share]\n  - [mount, -t, virtiofs, share, /mnt/share]\n"
	config := "\nprovider \"virt\" {\n  allow_host_paths = true\n}\n" + realGroup(name, image, 1, fmt.Sprintf(`    filesystem {
      source = %q
      target = "share"
    }
    network_interface {
      type = "user"
    }
    cloud_init {
      user_data = %q
    }
`, dir, userData), "") + realInstances
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{{
			Config: config,
			Check: func(*terraform.State) error {
				if err := checkNoCloud(t, member, 1, nil); err != nil {
					return err
				}
				out, err := guestOutput(member, "/usr/bin/findmnt", "-n", "-o", "FSTYPE,SOURCE", "/mnt/share")
				if err != nil || strings.Fields(out)[0] != "virtiofs" {
					return fmt.Errorf("/mnt/share in %s is %q (%v), want the virtiofs share", member, out, err)
				}
				if out, err := guestOutput(member, "/bin/cat", "/mnt/share/from-host"); err != nil || out != "hello from the host\n" {
					return fmt.Errorf("%s reads %q (%v) from the share's from-host", member, out, err)
				}
				if _, err := guestOutput(member, "/bin/sh", "-c", "echo hello from the guest > /mnt/share/from-guest && sync"); err != nil {
					return err
				}
				b, err := os.ReadFile(filepath.Join(dir, "from-guest"))
				if err != nil || string(b) != "hello from the guest\n" {
					return fmt.Errorf("the host reads %q (%v) from the file the guest wrote in the share", b, err)
				}
				return nil
			},
		}},
	})
}

// networkHosts are the DHCP host entries of the libvirt network, MAC to address.
func networkHosts(t *testing.T, network string) map[string]string {
	t.Helper()
	var n struct {
		IPs []struct {
			Hosts []struct {
				MAC string `xml:"mac,attr"`
				IP  string `xml:"ip,attr"`
			} `xml:"dhcp>host"`
		} `xml:"ip"`
	}
	if err := xml.Unmarshal([]byte(virshOut(t, "net-dumpxml", network)), &n); err != nil {
		t.Fatalf("net-dumpxml %s: %v", network, err)
	}
	out := map[string]string{}
	for _, ip := range n.IPs {
		for _, h := range ip.Hosts {
			out[strings.ToLower(h.MAC)] = h.IP
		}
	}
	return out
}

// TestAccReal_reservedAddress puts the cloud image on the network "default" with address =
// "reserved": the address the guest holds (its agent) is the network's host entry for its MAC and
// the data source's; a REPLACE (a user_data change: a new guest, cloud-init runs again) keeps it,
// seen from inside the new guest; destroy releases the reservation.
func TestAccReal_reservedAddress(t *testing.T) {
	name := testPrefix + "realip"
	member := name + "-1"
	realTestPrecheck(t)
	image := realImage(t, testPrefix+"image-realip.qcow2")
	freshConsoleLog(t, member)
	mac := engine.MACAddress(name, member, 0)
	config := func(userData string) string {
		return realGroup(name, image, 1, fmt.Sprintf(`    network_interface {
      network = "default"
      address = "reserved"
    }
    cloud_init {
      user_data = %q
    }
`, userData), "") + realInstances
	}
	var reserved string
	checkHeld := func(boots int) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			if _, err := waitCloudInit(t, member, boots); err != nil {
				return err
			}
			reserved = networkHosts(t, "default")[mac]
			if reserved == "" {
				return fmt.Errorf("the network default has no host entry for %s's MAC %s", member, mac)
			}
			addrs, err := waitGuestAddress(member, mac)
			if err != nil {
				return err
			}
			if !slices.Equal(addrs, []string{reserved}) {
				return fmt.Errorf("%s holds %v, want its reserved %s", member, addrs, reserved)
			}
			return nil
		}
	}
	var first string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			if ip, ok := networkHosts(t, "default")[mac]; ok {
				return fmt.Errorf("destroy left %s's reservation %s in the network default", member, ip)
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{
				Config: config("#cloud-config\n"),
				Check: resource.ComposeTestCheckFunc(checkHeld(1), func(*terraform.State) error {
					first = reserved
					return nil
				}),
			},
			{
				RefreshState: true,
				Check: func(s *terraform.State) error {
					attrs := s.RootModule().Resources[managedAddr].Primary.Attributes
					if attrs["instances.0.ip_addresses.#"] != "1" || attrs["instances.0.ip_addresses.0"] != first {
						return fmt.Errorf("the data source's ip_addresses for %s are %s of them, first %q; want [%s]", member, attrs["instances.0.ip_addresses.#"], attrs["instances.0.ip_addresses.0"], first)
					}
					return nil
				},
			},
			{
				Config: config("#cloud-config\nruncmd: [true]\n"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REPLACE: cloud_init user_data changed")),
				}},
				Check: resource.ComposeTestCheckFunc(checkHeld(2), func(*terraform.State) error {
					if reserved != first {
						return fmt.Errorf("the REPLACE moved %s's reservation from %s to %s", member, first, reserved)
					}
					return nil
				}),
			},
		},
	})
}
