package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// killQEMU kills a running domain's QEMU process with SIGKILL, as a host-side crash would.
func killQEMU(t *testing.T, domain string) {
	t.Helper()
	b, err := os.ReadFile("/var/run/libvirt/qemu/" + domain + ".pid")
	if err != nil {
		t.Fatalf("pid of %s: %v", domain, err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatalf("kill %s (pid %d): %v", domain, pid, err)
	}
	// libvirt notices the process gone when its monitor closes; the plan reads the state then.
	for {
		if d, ok := members(t, domain[:strings.LastIndex(domain, "-")])[domain]; ok && d.Status != "RUNNING" {
			return
		}
	}
}

// TestAccStatefulGroup_autoheal kills one member's QEMU process and undefines another behind
// Terraform's back: with auto_healing the next plan replaces the first as an autoheal and
// recreates the second, both under their names, and their preserved disks keep their bytes.
func TestAccStatefulGroup_autoheal(t *testing.T) {
	name := testPrefix + "heal"
	m1, m2, m3 := name+"-1", name+"-2", name+"-3"
	heal := "  auto_healing {\n    initial_delay = \"0s\"\n  }"
	cfg := func(running bool) string {
		return groupConfig(name, 3, diskBlocks(8, "data"), fmt.Sprintf("  running = %t\n%s", running, heal)) + policyConfig("data")
	}
	sums := map[string]string{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: func(s *terraform.State) error {
			for _, m := range []string{m1, m2, m3} {
				_ = testLibvirt(t).DeleteVolume(context.Background(), testPool(), m+"-data.qcow2")
			}
			return checkNothingLeft(t, name)(s)
		},
		Steps: []resource.TestStep{
			{Config: cfg(false), Check: checkMembers(t, name, "STOPPED", m1, m2, m3)},
			{
				PreConfig: func() {
					// A distinct pattern in each data disk, written while the members are stopped.
					for i, m := range []string{m1, m2, m3} {
						path := volumePath(t, m+"-data.qcow2")
						if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%x 0 1M", 0x40+i), path).CombinedOutput(); err != nil {
							t.Fatalf("qemu-io %s: %v: %s", path, err, out)
						}
						sum, _, err := volumeBytes(t, m+"-data.qcow2")
						if err != nil {
							t.Fatal(err)
						}
						sums[m] = sum
					}
				},
				Config: cfg(true),
				Check:  checkMembers(t, name, "RUNNING", m1, m2, m3),
			},
			{
				PreConfig: func() {
					killQEMU(t, m1)
					virsh(t, "destroy", m2)
					virsh(t, "undefine", m2)
				},
				Config: cfg(true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "REPLACE: autoheal (shut off"),
					expectPlanned(1, "REPLACE: autoheal (definition missing)"),
					expectPlanned(2, "NONE"),
				}},
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", m1, m2, m3), func(*terraform.State) error {
					for m, want := range sums {
						got, _, err := volumeBytes(t, m+"-data.qcow2")
						if err != nil {
							return err
						}
						if got != want {
							return fmt.Errorf("%s-data.qcow2 lost its bytes", m)
						}
					}
					return nil
				}),
			},
		},
	})
}

// TestAccStatefulGroup_autohealGivesUp heals a crashed member whose boot image was deleted
// after the group was built: each replacement fails before the member is touched, the count
// grows in the member's record, and at max_consecutive_failures the plan leaves it failed and
// says so, as the data source does.
func TestAccStatefulGroup_autohealGivesUp(t *testing.T) {
	name := testPrefix + "giveup"
	m1 := name + "-1"
	image := testPrefix + "ext-giveup-image.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	extVolumeSized(t, image, 16)
	imagePath := volumePath(t, image)
	cfg := groupConfig(name, 1, fmt.Sprintf("    boot_disk {\n      source_image = %q\n      size_mib     = 32\n    }\n", imagePath),
		"  auto_healing {\n    initial_delay            = \"0s\"\n    backoff                  = \"0s\"\n    max_consecutive_failures = 2\n  }")
	withData := cfg + fmt.Sprintf("\ndata \"virt_managed_instances\" \"now\" {\n  group = %q\n}\n", name)
	ds := "data.virt_managed_instances.now"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: checkMembers(t, name, "RUNNING", m1)},
			{
				PreConfig: func() {
					killQEMU(t, m1)
					if err := testLibvirt(t).DeleteVolume(context.Background(), testPool(), image); err != nil {
						t.Fatal(err)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "REPLACE: autoheal (shut off (crashed))"),
				}},
				ExpectError: regexpMust(`Cannot apply group ` + name),
			},
			{
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "REPLACE: autoheal (shut off (crashed))"),
				}},
				ExpectError: regexpMust(`Cannot apply group ` + name),
			},
			{
				Config: withData,
				// The member is left failed: nothing is planned for it (the plan warns "Failed
				// members left as they are"), and the data source tells why.
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("health"), knownvalue.StringExact("FAILED")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("consecutive_failures"), knownvalue.Int64Exact(2)),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("health_reason"), knownvalue.StringExact("shut off (crashed)")),
				},
				Check: checkMembers(t, name, "STOPPED", m1),
			},
		},
	})
}

// regexpMust compiles a pattern whose spaces match any run of white space: Terraform wraps
// diagnostics.
func regexpMust(pattern string) *regexp.Regexp {
	return regexp.MustCompile(strings.ReplaceAll(pattern, " ", `\s+`))
}

// TestAccStatefulGroup_failedPreservation kills two members with auto_preserve_failed_max = 1:
// the first is kept exactly as it is (the same domain, still stopped, still counted), the second
// healed; when the preservation times out, the next apply heals the first.
func TestAccStatefulGroup_failedPreservation(t *testing.T) {
	name := testPrefix + "keep"
	m1, m2 := name+"-1", name+"-2"
	cfg := func(timeout string) string {
		return groupConfig(name, 2, "", fmt.Sprintf(`  auto_healing {
    initial_delay = "0s"
    backoff       = "0s"
  }
  failed_instance_preservation {
    auto_preserve_failed_max = 1
    preserve_timeout         = %q
  }`, timeout)) + fmt.Sprintf("\ndata \"virt_managed_instances\" \"now\" {\n  group = %q\n}\n", name)
	}
	ds := "data.virt_managed_instances.now"
	var uuid string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: strings.Split(cfg("1h"), "\ndata ")[0], Check: checkMembers(t, name, "RUNNING", m1, m2)},
			{
				PreConfig: func() {
					killQEMU(t, m1)
					killQEMU(t, m2)
					uuid = members(t, name)[m1].UUID
				},
				Config: cfg("1h"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "PRESERVE: preserved (AUTO) for 1h0m0s"),
					plannedPrefix(1, "REPLACE: autoheal (shut off (crashed))"),
					// In the plan, health is what the apply leaves: the preserved member stays
					// failed, the healed one is healthy.
					expectMemberPlan(groupAddr, 0, "health", knownvalue.StringExact("FAILED")),
					expectMemberPlan(groupAddr, 1, "health", knownvalue.StringExact("HEALTHY")),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("health"), knownvalue.StringExact("FAILED")),
				},
				Check: func(*terraform.State) error {
					ms := members(t, name)
					if d := ms[m1]; d.Status != "STOPPED" || d.UUID != uuid || d.Record == nil || d.Record.Instance.Preserved != "AUTO" {
						return fmt.Errorf("%s: %s %s, preserved %+v; want the same domain, stopped, preserved AUTO", m1, d.Status, d.UUID, d.Record)
					}
					if ms[m2].Status != "RUNNING" {
						return fmt.Errorf("%s is %s, want it healed and running", m2, ms[m2].Status)
					}
					return nil
				},
			},
			{
				// The data source, read at plan time, shows the preservation.
				Config: cfg("1h"),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("preserved"), knownvalue.StringExact("AUTO")),
					statecheck.ExpectKnownValue(ds, tfjsonpath.New("instances").AtSliceIndex(1).AtMapKey("preserved"), knownvalue.StringExact("NO")),
				},
			},
			{
				// The timeout, made short, has passed: the member is released and healed.
				Config: cfg("0s"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plannedPrefix(0, "REPLACE: autoheal (shut off (crashed))"),
				}},
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", m1, m2), func(*terraform.State) error {
					if d := members(t, name)[m1]; d.Record == nil || d.Record.Instance.Preserved != "" {
						return fmt.Errorf("%s is still preserved: %+v", m1, d.Record)
					}
					return nil
				}),
			},
		},
	})
}
