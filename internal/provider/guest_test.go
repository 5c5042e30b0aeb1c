package provider

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// consoleLogDir is where the tiny guest's serial console is logged: the system daemon's own log
// directory, which its QEMU may write.
const consoleLogDir = "/var/log/libvirt/qemu"

// dataPolicyAndInstances is dataPolicy (hostdown_waits_test.go), and reads the group's members
// with the data source.
const dataPolicyAndInstances = dataPolicy + `
data "virt_managed_instances" "test" {
  group      = virt_stateful_group.test.name
  depends_on = [virt_stateful_policy.test]
}
`

// tinyGuestImage puts the tiny guest (tools/tiny-guest.sh, built from Debian packages and cached
// by the harness; with "--broken", the one whose service never starts) into the test pool as a
// volume of that name, for boot_disk.source_image.
func tinyGuestImage(t *testing.T, name string, args ...string) string {
	t.Helper()
	return poolImage(t, name, "../../tools/tiny-guest.sh", args...)
}

// poolImage runs an image script of tools/ (its stdout is the cached image's path, its stderr
// its progress) and copies the image into the test pool as a volume of that name, removed at the
// test's end.
func poolImage(t *testing.T, name, script string, args ...string) string {
	t.Helper()
	var stderr bytes.Buffer
	cmd := exec.Command("bash", append([]string{script}, args...)...)
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	src := strings.TrimSpace(string(out))
	pool, err := testLibvirt(t).LookupPool(context.Background(), testPool())
	if err != nil || pool.Path == "" {
		t.Fatalf("pool %s: %v (a directory pool is needed)", testPool(), err)
	}
	dst := filepath.Join(pool.Path, name)
	copyFile(t, src, dst)
	t.Cleanup(func() {
		_ = os.Remove(dst)
		refreshPool(t)
	})
	refreshPool(t)
	return dst
}

// consoleLog is the member's serial console log as the guest wrote it, carriage returns dropped.
func consoleLog(member string) string {
	b, _ := os.ReadFile(filepath.Join(consoleLogDir, member+".console.log"))
	return string(bytes.ReplaceAll(b, []byte("\r"), nil))
}

// waitConsole waits until the member's console log matches, within a limit: the guest prints
// its lines some seconds after it starts (8 to 14 under TCG here), so the test waits for the
// line itself rather than for a time.
func waitConsole(member string, re *regexp.Regexp) error {
	deadline := time.Now().Add(3 * time.Minute)
	for {
		log := consoleLog(member)
		if re.MatchString(log) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s's console log does not match %s after 3 minutes; it holds:\n%s", member, re, log)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestAccStatefulGroup_guestSeesItsSeed boots the tiny guest as a member with cloud_init and
// proves from inside the guest, through its serial console log: it sees its own name and
// metadata; a metadata change reaches the same boot (same domain id) with no restart; a seed
// volume deleted behind Terraform's back is written again; a user_data change replaces the
// member, with the same MAC addresses, and the boot counter on its preserved data disk goes on
// from where it was, as it does after a scale-in and a scale-out.
func TestAccStatefulGroup_guestSeesItsSeed(t *testing.T) {
	name := testPrefix + "guest"
	member := name + "-1"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	image := tinyGuestImage(t, testPrefix+"image-guest.qcow2")
	logFile := filepath.Join(consoleLogDir, member+".console.log")
	_ = os.Remove(logFile) // a log an earlier run left would be appended to
	t.Cleanup(func() { _ = os.Remove(logFile) })

	config := func(role, userData string, size int) string {
		body := fmt.Sprintf(`    memory_mib = 128
    boot_disk {
      source_image = %q
      size_mib     = 64
    }
    disk {
      device_name = "data"
      size_mib    = 8
    }
    network_interface {
      type = "user"
    }
    metadata        = { role = %q }
    console_log_dir = %q
    cloud_init {
      user_data = %q
    }
`, image, role, consoleLogDir, userData)
		// The data disk is kept through scale-in too (NEVER), and deleted by the test at the end.
		return strings.Replace(groupConfig(name, size, body, ""), "memory_mib  = 64\n", "", 1) +
			strings.Replace(dataPolicyAndInstances, "ON_PERMANENT_INSTANCE_DELETION", "NEVER", 1)
	}
	mac := engine.MACAddress(name, member, 0)
	userData2 := "#cloud-config\nruncmd: [true]\n"
	var firstID int32
	var firstUUID string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkKeptAfterDestroy(t, name, nil, member+"-data.qcow2"),
		Steps: []resource.TestStep{
			{
				Config: config("db", "#cloud-config\n", 1),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(managedAddr, "instances.0.mac_addresses.#", "1"),
					resource.TestCheckResourceAttr(managedAddr, "instances.0.mac_addresses.0", mac),
					func(*terraform.State) error {
						if err := waitConsole(member, regexp.MustCompile(`TINYGUEST ready`)); err != nil {
							return err
						}
						log := consoleLog(member)
						for _, want := range []string{"TINYGUEST hostname=" + member + "\n", "TINYGUEST meta instance-id=" + member + "\n", "TINYGUEST meta role=db\n", "TINYGUEST boot=1 "} {
							if !strings.Contains(log, want) {
								return fmt.Errorf("the guest did not print %q; its console:\n%s", strings.TrimSpace(want), log)
							}
						}
						d, ok := members(t, name)[member]
						if !ok || d.ID <= 0 {
							return fmt.Errorf("%s is not running", member)
						}
						firstID, firstUUID = d.ID, d.UUID
						if len(d.MACs) != 1 || d.MACs[0] != mac {
							return fmt.Errorf("libvirt has MACs %v for %s, want [%s]", d.MACs, member, mac)
						}
						return nil
					},
					func(s *terraform.State) error {
						if got := s.RootModule().Resources[managedAddr].Primary.Attributes["instances.0.uuid"]; got != firstUUID {
							return fmt.Errorf("the data source has uuid %q, libvirt %q", got, firstUUID)
						}
						return nil
					},
				),
			},
			{
				// A metadata change is a REFRESH: the seed is rewritten and swapped live, and
				// the running guest reads it in the same boot.
				Config: config("web", "#cloud-config\n", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REFRESH: metadata role changed")),
				}},
				Check: func(*terraform.State) error {
					if err := waitConsole(member, regexp.MustCompile(`TINYGUEST reread\n(TINYGUEST .*\n)*TINYGUEST meta role=web\n`)); err != nil {
						return err
					}
					d := members(t, name)[member]
					if d.ID != firstID || d.UUID != firstUUID {
						return fmt.Errorf("the metadata change restarted or replaced %s: id %d -> %d, uuid %s -> %s", member, firstID, d.ID, firstUUID, d.UUID)
					}
					if n := strings.Count(consoleLog(member), "TINYGUEST ready"); n != 1 {
						return fmt.Errorf("the guest booted %d times, want once", n)
					}
					return nil
				},
			},
			{
				// The seed volume deleted behind Terraform's back is drift: the plan says so and
				// the apply writes it again, live, without restarting the member.
				PreConfig: func() {
					if err := testLibvirt(t).DeleteVolume(context.Background(), testPool(), engine.SeedVolumeName(member)); err != nil {
						t.Fatalf("delete the seed volume: %v", err)
					}
				},
				Config: config("web", "#cloud-config\n", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^REFRESH: .*cloud-init seed volume `+member+`-cidata.iso missing`))),
				}},
				Check: func(*terraform.State) error {
					if _, err := testLibvirt(t).LookupVolume(context.Background(), testPool(), engine.SeedVolumeName(member)); err != nil {
						return fmt.Errorf("the seed volume was not written again: %v", err)
					}
					if d := members(t, name)[member]; d.ID != firstID {
						return fmt.Errorf("writing the seed again restarted %s: id %d -> %d", member, firstID, d.ID)
					}
					return nil
				},
			},
			{
				// A user_data change replaces the member: a new domain, the same MAC, and the
				// preserved data disk's boot counter goes on.
				Config: config("web", userData2, 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REPLACE: cloud_init user_data changed")),
				}},
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(managedAddr, "instances.0.mac_addresses.0", mac),
					func(s *terraform.State) error {
						if err := waitConsole(member, regexp.MustCompile(`TINYGUEST boot=2 `)); err != nil {
							return err
						}
						d := members(t, name)[member]
						if d.UUID == firstUUID {
							return fmt.Errorf("%s was not replaced (same UUID %s)", member, d.UUID)
						}
						if len(d.MACs) != 1 || d.MACs[0] != mac {
							return fmt.Errorf("after REPLACE libvirt has MACs %v for %s, want [%s]", d.MACs, member, mac)
						}
						if got := s.RootModule().Resources[managedAddr].Primary.Attributes["instances.0.uuid"]; got != d.UUID {
							return fmt.Errorf("the data source has uuid %q after the replacement, libvirt %q", got, d.UUID)
						}
						log := consoleLog(member)
						last := log[strings.LastIndex(log, "TINYGUEST hostname="):]
						if !strings.Contains(last, "TINYGUEST meta role=web\n") {
							return fmt.Errorf("the replaced member's boot did not see role=web:\n%s", last)
						}
						return nil
					},
				),
			},
			{
				// Scale-in removes the member and keeps its data disk (NEVER)...
				Config: config("web", userData2, 0),
				Check: func(*terraform.State) error {
					if _, ok := members(t, name)[member]; ok {
						return fmt.Errorf("%s is still there after the scale-in", member)
					}
					if _, err := testLibvirt(t).LookupVolume(context.Background(), testPool(), member+"-data.qcow2"); err != nil {
						return fmt.Errorf("the scale-in did not keep the data disk: %v", err)
					}
					return nil
				},
			},
			{
				// ...and the scale-out that makes it again boots with it: the counter goes on,
				// and the MAC is the same.
				Config: config("web", userData2, 1),
				Check: resource.ComposeTestCheckFunc(
					resource.TestCheckResourceAttr(managedAddr, "instances.0.mac_addresses.0", mac),
					func(*terraform.State) error {
						return waitConsole(member, regexp.MustCompile(`TINYGUEST boot=3 `))
					},
				),
			},
		},
	})
}
