package provider

import (
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
)

// The acceptance tests of rollouts that wait for ready (issue 30): the tiny guest with its
// service as the health check, 4 running members, max_unavailable 1, a REPLACE to the image whose
// service never starts (tools/tiny-guest.sh's tiny-guest-broken.qcow2). Each lasts about 4.5 min,
// most of it the ready_timeout of the member on the broken image, for which it holds no CPU slot.

// dataMark is where the tests write a pattern into a member's data disk: past the tiny guest's
// boot counter, which it rewrites at every boot at the start of the disk.
const dataMark = "4M 1M"

// markData writes the member's pattern into its data disk (the group must be stopped: qemu-io
// needs the image's write lock).
func markData(t *testing.T, member string, pattern byte) {
	t.Helper()
	out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%02x %s", pattern, dataMark), volumePath(t, member+"-data.qcow2")).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-io write to %s's data disk: %v: %s", member, err, out)
	}
}

// checkDataMark checks that the member's data disk still holds its pattern, read while the guest
// runs (-U).
func checkDataMark(t *testing.T, member string, pattern byte) error {
	out, err := exec.Command("qemu-io", "-U", "-r", "-f", "qcow2", "-c", fmt.Sprintf("read -P 0x%02x %s", pattern, dataMark), volumePath(t, member+"-data.qcow2")).CombinedOutput()
	if err != nil || strings.Contains(string(out), "fail") {
		return fmt.Errorf("%s's data disk lost its bytes: %v: %s", member, err, out)
	}
	return nil
}

// readyConfig is the group of 4 tiny guests with the service's health check, on image, with the
// update policy's on_failure. Started, the 4 guests boot together, beside the other tests' guests,
// on a machine that may have 2 cores and no KVM: they get 5 minutes to be ready; the broken image
// gets 3 minutes to fail. That bound also covers a rollback's replacement back onto the good image
// and the broken guest's agent coming up (the error must quote its service's probe, not a missing
// agent): 60 s was too short on a loaded 2-core machine, where both failed, and 2 minutes once the
// test gave its CPU slot back for that step (the other tests boot their guests meanwhile), on a
// machine at load average 27. The wait holds no CPU slot, so its length costs make test nothing
// as long as the test starts early (it queues first).
func readyConfig(name, image, onFailure string, running bool) string {
	body := serviceCheckedTemplate(image, "")
	timeout := "5m"
	if strings.Contains(image, "broken") {
		timeout = "3m"
	}
	extra := fmt.Sprintf(`  running = %t
  update_policy {
    max_unavailable = "1"
    ready_timeout   = %q
    on_failure      = %q
  }
`, running, timeout, onFailure)
	return strings.Replace(groupConfig(name, 4, body, extra), "memory_mib  = 64\n", "", 1) + `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
`
}

// testAccRolloutToABrokenImage runs the scenario with onFailure: the group is created stopped,
// each data disk marked, started (each member waited for until its service answers), then
// replaced onto the broken image. The first member replaced is not ready by ready_timeout: the
// apply fails naming it and quoting its probe, and the other three keep their domain (UUID and
// id) throughout. With STOP the member stays on the broken image; with ROLLBACK it is back on
// the good one and the next plan still wants the broken one. Every data disk keeps its bytes.
func testAccRolloutToABrokenImage(t *testing.T, suffix, onFailure string) {
	name := testPrefix + "ready-" + suffix
	n := []string{name + "-1", name + "-2", name + "-3", name + "-4"}
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	broken := tinyGuestImage(t, testPrefix+"img-"+suffix+"-broken.qcow2", "--broken")
	good := tinyGuestImage(t, testPrefix+"img-"+suffix+"-good.qcow2")
	before := memberState{}
	failed := `(?s)replace\s+of\s+` + n[0] + `\s+failed\s+at\s+step\s+"wait\s+ready":\s+` + n[0] + `\s+is\s+not\s+ready.*tiny-service`
	if onFailure == "ROLLBACK" {
		failed = `(?s)was\s+rolled\s+back.*` + strings.TrimPrefix(failed, `(?s)`) + `.*Rolled\s+back:\s+` + n[0] + `\s+to\s+template\s+revision`
	}
	afterImage := broken
	if onFailure == "ROLLBACK" {
		afterImage = good
	}
	// The rollout onto the broken image (the third step) is mostly the wait for the broken member,
	// one guest that never gets ready, for its 3-minute ready_timeout: the test gives its CPU slot
	// (accSlots) back for that step, and the tests queued boot their guests meanwhile. It queues
	// first for its slot, so that the wait overlaps the others' work rather than ending the run.
	t.Parallel()
	slot := takeSlot(t, true)
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: readyConfig(name, good, onFailure, false)},
			{
				PreConfig: func() {
					for i, m := range n {
						markData(t, m, byte(0x41+i))
					}
				},
				Config: readyConfig(name, good, onFailure, true),
				Check:  resource.ComposeTestCheckFunc(before.record(t, name), checkMembers(t, name, "RUNNING", n...)),
			},
			{
				PreConfig: slot.idle,
				Config:    readyConfig(name, broken, onFailure, true),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ExpectError: regexp.MustCompile(failed),
			},
			{
				PreConfig: func() {
					slot.resume()
					now := members(t, name)
					if now[n[0]].UUID == before[n[0]][0] {
						t.Fatalf("%s was not replaced", n[0])
					}
					if err := checkBacking(t, afterImage, n[0])(nil); err != nil {
						t.Fatal(err)
					}
					if err := checkBacking(t, good, n[1:]...)(nil); err != nil {
						t.Fatal(err)
					}
					for _, m := range n[1:] {
						if got := [2]string{now[m].UUID, fmt.Sprint(now[m].ID)}; got != before[m] || now[m].Status != "RUNNING" {
							t.Fatalf("%s was touched by the failed rollout: %v (%s), was %v", m, got, now[m].Status, before[m])
						}
					}
					for i, m := range n {
						if err := checkDataMark(t, m, byte(0x41+i)); err != nil {
							t.Fatal(err)
						}
					}
				},
				// The broken image is still wanted: after a rollback the state kept the good
				// template; after a stop the three members not reached are still to replace.
				Config:             readyConfig(name, broken, onFailure, true),
				PlanOnly:           true,
				ExpectNonEmptyPlan: true,
			},
			unhealthyAfterStop(t, name, readyConfig(name, broken, onFailure, true), broken),
			{
				// Back to the good image: after a stop it replaces the member left on the broken
				// one; after a rollback there is nothing to do.
				Config: readyConfig(name, good, onFailure, true),
				Check:  resource.ComposeTestCheckFunc(checkBacking(t, good, n...), checkMembers(t, name, "RUNNING", n...)),
			},
		},
	})
}

// unhealthyAfterStop is, after a rollout that stopped, a step that shows through the data source
// that the member left on the broken image is UNHEALTHY, quoting its probe, and the others
// HEALTHY: OPPORTUNISTIC leaves the rollout where it stopped, so the apply changes no member.
// After a rollback it is a plan-only step the previous one already covers.
func unhealthyAfterStop(t *testing.T, name, cfg, broken string) resource.TestStep {
	if !strings.Contains(cfg, `on_failure      = "STOP"`) {
		return resource.TestStep{Config: cfg, PlanOnly: true, ExpectNonEmptyPlan: true}
	}
	cfg = strings.Replace(cfg, `on_failure      = "STOP"`, "on_failure      = \"STOP\"\n    type            = \"OPPORTUNISTIC\"", 1) +
		("\ndata \"virt_managed_instances\" \"test\" {\n  group      = virt_stateful_group.test.name\n  depends_on = [virt_stateful_policy.test]\n}\n")
	return resource.TestStep{
		Config: cfg,
		Check:  checkBacking(t, broken, name+"-1"),
		ConfigStateChecks: []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("UNHEALTHY")),
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health_reason"), contains("tiny-service")),
			statecheck.ExpectKnownValue(dsAddr, dsInstance(1, "health"), knownvalue.StringExact("HEALTHY")),
		},
	}
}

func TestAccStatefulGroup_rolloutToABrokenImageStops(t *testing.T) {
	testAccRolloutToABrokenImage(t, "stop", "STOP")
}

func TestAccStatefulGroup_rolloutToABrokenImageRollsBack(t *testing.T) {
	testAccRolloutToABrokenImage(t, "rollback", "ROLLBACK")
}
