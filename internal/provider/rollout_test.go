package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// testImage makes a small qcow2 volume in the test pool to use as a source_image, and returns its
// path; the test's cleanup deletes it. Configurations are rendered before any step runs, so the
// images must exist first: like every acceptance test, it only runs under TF_ACC.
func testImage(t *testing.T, name string) string {
	t.Helper()
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skip("acceptance test: set TF_ACC=1")
	}
	testAccPreCheck(t)
	extVolume(t, name)
	return volumePath(t, name)
}

// backingOf is the image a volume is an overlay of, as qemu-img reads it from the file.
func backingOf(t *testing.T, volume string) (string, error) {
	out, err := exec.Command("qemu-img", "info", "-U", "--output=json", volumePath(t, volume)).Output()
	if err != nil {
		return "", fmt.Errorf("qemu-img info %s: %w", volume, err)
	}
	var info struct {
		Backing string `json:"backing-filename"`
	}
	if err := json.Unmarshal(out, &info); err != nil {
		return "", err
	}
	return info.Backing, nil
}

// checkBacking checks that each named member's boot volume backs onto image.
func checkBacking(t *testing.T, image string, instances ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, n := range instances {
			got, err := backingOf(t, n+"-boot.qcow2")
			if err != nil {
				return err
			}
			if got != image {
				return fmt.Errorf("%s's boot volume backs onto %q, want %q", n, got, image)
			}
		}
		return nil
	}
}

// memberState is what a member looked like: UUID (recreated or not) and hypervisor id (restarted
// or not).
type memberState map[string][2]string

func (m memberState) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			m[n] = [2]string{d.UUID, fmt.Sprint(d.ID)}
		}
		return nil
	}
}

// TestAccStatefulGroup_rolloutStopsAtFirstFailure replaces 4 running members one at a time and
// injects a fault in the second wave: the first member is at the new image, the second untouched
// and running, the third and fourth untouched and running (not even restarted); the error names
// the member and the step; the next apply (with max_unavailable as a percentage) finishes.
func TestAccStatefulGroup_rolloutStopsAtFirstFailure(t *testing.T) {
	name := testPrefix + "roll"
	n1, n2, n3, n4 := name+"-1", name+"-2", name+"-3", name+"-4"
	fv := &faultyBackend{volume: n2 + "-boot.staging.qcow2"}
	imageA, imageB := testImage(t, testPrefix+"img-roll-a.qcow2"), testImage(t, testPrefix+"img-roll-b.qcow2")
	config := func(image, maxUnavailable string) string {
		return groupConfig(name, 4, fmt.Sprintf(`
    boot_disk {
      source_image = %q
      size_mib     = 16
    }`, image), fmt.Sprintf(`
  update_policy {
    max_unavailable = %q
  }`, maxUnavailable))
	}
	before := memberState{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { fv.preCheck(t) },
		ProtoV6ProviderFactories: fv.factories(),
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config(imageA, "1"),
				Check:  resource.ComposeTestCheckFunc(before.record(t, name), checkBacking(t, imageA, n1, n2, n3, n4)),
			},
			{
				PreConfig: func() { fv.arm(true) },
				Config:    config(imageB, "1"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectPlanned(1, "REPLACE: boot image changed"),
				}},
				ExpectError: regexp.MustCompile(`(?s)replace of\s+` + n2 + `\s+failed\s+at\s+step\s+"stage\s+the\s+new\s+boot\s+volume".*injected\s+fault.*` +
					`Done\s+before\s+the\s+failure:\s+` + n1 + `\s+\(replace\).*Not\s+started.*` + n3 + `\s+\(replace\),\s+` + n4 + `\s+\(replace\)`),
			},
			{
				PreConfig: func() {
					fv.arm(false)
					if fv.hits != 1 {
						t.Fatalf("the fault fired %d times, want 1", fv.hits)
					}
					now := members(t, name)
					if now[n1].UUID == before[n1][0] {
						t.Fatalf("%s was not replaced in the first wave", n1)
					}
					if err := checkBacking(t, imageB, n1)(nil); err != nil {
						t.Fatal(err)
					}
					if err := checkBacking(t, imageA, n2, n3, n4)(nil); err != nil {
						t.Fatal(err)
					}
					for _, n := range []string{n2, n3, n4} {
						if got := [2]string{now[n].UUID, fmt.Sprint(now[n].ID)}; got != before[n] || now[n].Status != "RUNNING" {
							t.Fatalf("%s was touched by the failed rollout: %v (%s), was %v", n, got, now[n].Status, before[n])
						}
					}
				},
				Config: config(imageB, "50%"),
				Check: resource.ComposeTestCheckFunc(
					checkBacking(t, imageB, n1, n2, n3, n4),
					checkMembers(t, name, "RUNNING", n1, n2, n3, n4),
					checkVolumes(t, name+"-", n1+"-boot.qcow2", n2+"-boot.qcow2", n3+"-boot.qcow2", n4+"-boot.qcow2"),
				),
			},
		},
	})
}

// TestAccStatefulGroup_rolloutFailureAfterTheStop fails the replacement of the second of three
// members after its old domain is gone (the second definition, once the old domain is stopped and
// undefined): the error says the member was down, the third member is untouched, and the next
// apply creates the second again from the new image and finishes the rollout.
func TestAccStatefulGroup_rolloutFailureAfterTheStop(t *testing.T) {
	name := testPrefix + "rolldown"
	n1, n2, n3 := name+"-1", name+"-2", name+"-3"
	fb := &faultyBackend{defining: n2, defineAt: 2}
	imageA, imageB := testImage(t, testPrefix+"img-rolldown-a.qcow2"), testImage(t, testPrefix+"img-rolldown-b.qcow2")
	config := func(image string) string {
		return groupConfig(name, 3, fmt.Sprintf(`
    boot_disk {
      source_image = %q
      size_mib     = 16
    }`, image), "")
	}
	before := memberState{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { fb.preCheck(t) },
		ProtoV6ProviderFactories: fb.factories(),
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config(imageA),
				Check:  before.record(t, name),
			},
			{
				PreConfig:   func() { fb.arm(true) },
				Config:      config(imageB),
				ExpectError: regexp.MustCompile(`(?s)replace of\s+` + n2 + `\s+failed\s+at\s+step\s+"define":.*injected\s+fault.*member\s+was\s+down.*Not\s+started.*` + n3),
			},
			{
				PreConfig: func() {
					fb.arm(false)
					now := members(t, name)
					if _, ok := now[n2]; ok || fb.hits != 1 {
						t.Fatalf("after the fault: %s defined = %v, fault fired %d times", n2, ok, fb.hits)
					}
					if err := checkBacking(t, imageB, n1)(nil); err != nil {
						t.Fatal(err)
					}
					if got := [2]string{now[n3].UUID, fmt.Sprint(now[n3].ID)}; got != before[n3] {
						t.Fatalf("%s was touched: %v, was %v", n3, got, before[n3])
					}
				},
				Config: config(imageB),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectPlanned(1, "CREATE"),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkBacking(t, imageB, n1, n2, n3),
					checkMembers(t, name, "RUNNING", n1, n2, n3),
					checkVolumes(t, name+"-", n1+"-boot.qcow2", n2+"-boot.qcow2", n3+"-boot.qcow2"),
				),
			},
		},
	})
}

// TestAccStatefulGroup_recreatedMemberGetsTheNewImage: a member undefined behind Terraform's back
// leaves its boot volume, an overlay of the old image; after a new source_image, the member that
// apply creates again boots from the new image.
func TestAccStatefulGroup_recreatedMemberGetsTheNewImage(t *testing.T) {
	name := testPrefix + "stale"
	n1 := name + "-1"
	imageA, imageB := testImage(t, testPrefix+"img-stale-a.qcow2"), testImage(t, testPrefix+"img-stale-b.qcow2")
	config := func(image string) string {
		return groupConfig(name, 1, fmt.Sprintf(`
    boot_disk {
      source_image = %q
      size_mib     = 16
    }`, image), "")
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: config(imageA),
				Check:  checkBacking(t, imageA, n1),
			},
			{
				PreConfig: func() {
					if err := testLibvirt(t).UndefineDomain(context.Background(), n1); err != nil {
						t.Fatal(err)
					}
				},
				Config: config(imageB),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectPlanned(0, "CREATE"),
				}},
				Check: resource.ComposeTestCheckFunc(checkBacking(t, imageB, n1), checkMembers(t, name, "RUNNING", n1)),
			},
		},
	})
}

// TestAccPerInstanceConfig_templateDiskLetGoStaysAttached: a config swapped a template disk for
// the user's own volume; removing it from the config keeps that very volume attached (same bytes,
// read while the member runs), stateless, with no restart; destroy leaves the user's volume.
func TestAccPerInstanceConfig_templateDiskLetGoStaysAttached(t *testing.T) {
	name := testPrefix + "letgo"
	n1 := name + "-1"
	user := testPrefix + "ext-letgo-blue.qcow2"
	body := diskBlocks(8, "blue")
	sums, ids := checksums{}, domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck: func() {
			testAccPreCheck(t)
			extVolume(t, user)
			sums.write(t, user, 0x6b)
		},
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, user), sums.same(t, user)),
		Steps: []resource.TestStep{
			{
				Config: stack(name, 1, body, "", pic("n1", n1, []string{"blue=" + user}, nil, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[blue=" + user + "] meta={}"}),
				),
			},
			{
				Config: stack(name, 1, body, "", pic("n1", n1, nil, map[string]string{}, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[blue=" + user + "] meta={}"}),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
					sums.same(t, user),
					checkVolumes(t, n1+"-", n1+"-boot.qcow2"),
				),
			},
		},
	})
}

// TestAccStatefulPolicy_changeRestartsNothing: under minimal_action RESTART, changing the policy's
// delete rule and then removing the policy are bookkeeping: no member restarts.
func TestAccStatefulPolicy_changeRestartsNothing(t *testing.T) {
	name := testPrefix + "polnorestart"
	body := diskBlocks(8, "data")
	extra := `
  update_policy {
    minimal_action = "RESTART"
  }`
	withRule := func(rule string) string {
		return fmt.Sprintf(`
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = %q
  }
}
`, rule)
	}
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, body, extra) + withRule("NEVER"),
				Check:  ids.record(t, name),
			},
			{
				Config: groupConfig(name, 2, body, extra) + withRule("ON_PERMANENT_INSTANCE_DELETION"),
				Check:  ids.same(t, name),
			},
			{
				Config: groupConfig(name, 2, body, extra),
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), checkRecord(t, name, func(rec *backend.Record) error {
					if d, _ := rec.Instance.Current.DiskByName("data"); d.Preserved {
						return fmt.Errorf("the policy's removal was not recorded: data is still preserved")
					}
					return nil
				})),
			},
		},
	})
}

// TestAccStatefulGroup_powerFollowsRunning: starting and stopping the members is planned, shown
// per member (START, STOP) and applied, and a member stopped behind Terraform's back is started
// by the next apply.
func TestAccStatefulGroup_powerFollowsRunning(t *testing.T) {
	name := testPrefix + "power"
	n1, n2 := name+"-1", name+"-2"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, "", "  running = false"),
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "STOPPED", n1, n2), checkAutostart(t, name, false)),
			},
			{
				Config: groupConfig(name, 2, "", "  running = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate), expectPlanned(0, "START"), expectPlanned(1, "START"),
				}},
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", n1, n2), checkAutostart(t, name, true)),
			},
			{
				PreConfig: func() {
					if err := testLibvirt(t).StopDomain(context.Background(), n2); err != nil {
						t.Fatal(err)
					}
				},
				Config: groupConfig(name, 2, "", "  running = true"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate), expectPlanned(0, "NONE"), expectPlanned(1, "START"),
				}},
				Check: checkMembers(t, name, "RUNNING", n1, n2),
			},
			{
				Config:           groupConfig(name, 2, "", "  running = false"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{expectPlanned(0, "STOP"), expectPlanned(1, "STOP")}},
				Check:            checkMembers(t, name, "STOPPED", n1, n2),
			},
		},
	})
}

// checkAutostart checks that libvirtd would start the members when it starts exactly when the
// group wants them running.
func checkAutostart(t *testing.T, base string, want bool) resource.TestCheckFunc {
	return func(*terraform.State) error {
		l := testLibvirt(t).Raw()
		for n := range members(t, base) {
			dom, err := l.DomainLookupByName(n)
			if err != nil {
				return err
			}
			on, err := l.DomainGetAutostart(dom)
			if err != nil {
				return err
			}
			if (on == 1) != want {
				return fmt.Errorf("domain %s has autostart %d, want %t", n, on, want)
			}
		}
		return nil
	}
}
