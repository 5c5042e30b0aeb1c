package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// tinyGuestBrokenImage puts the tiny guest whose service never starts (tools/tiny-guest.sh
// --broken) into the test pool as a volume of that name.
func tinyGuestBrokenImage(t *testing.T, name string) string {
	t.Helper()
	out, err := exec.Command("bash", "../../tools/tiny-guest.sh", "--broken").Output()
	if err != nil {
		t.Fatalf("tools/tiny-guest.sh --broken: %v", err)
	}
	src := strings.TrimSpace(string(out))
	pool, err := testLibvirt(t).LookupPool(t.Context(), testPool())
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

// guestExec runs a command inside a running member through its QEMU guest agent, behind the
// provider's back, as an operator logged into the guest would.
func guestExec(t *testing.T, domain string, argv ...string) {
	t.Helper()
	args, _ := json.Marshal(argv[1:])
	cmd := fmt.Sprintf(`{"execute":"guest-exec","arguments":{"path":%q,"arg":%s}}`, argv[0], args)
	virsh(t, "qemu-agent-command", domain, cmd)
}

// servicePattern is written to, and read back from, 1 MiB of each member's data disk past its
// first sector, which the tiny guest rewrites on every boot (its boot counter).
const servicePattern = 0x5a

// writeDataPattern fills bytes [1 MiB, 2 MiB) of a stopped member's data volume.
func writeDataPattern(t *testing.T, volume string) {
	t.Helper()
	out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -P 0x%02x 1M 1M", servicePattern), volumePath(t, volume)).CombinedOutput()
	if err != nil {
		t.Fatalf("qemu-io write %s: %v: %s", volume, err, out)
	}
}

// checkDataPattern reads the bytes writeDataPattern wrote back, byte for byte (qemu-io's read -P
// compares every byte and fails on the first that differs), while the member may run.
func checkDataPattern(t *testing.T, volumes ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for _, v := range volumes {
			out, err := exec.Command("qemu-io", "-r", "-U", "-f", "qcow2", "-c", fmt.Sprintf("read -P 0x%02x 1M 1M", servicePattern), volumePath(t, v)).CombinedOutput()
			if err != nil || strings.Contains(string(out), "Pattern verification failed") {
				return fmt.Errorf("%s lost its bytes: qemu-io read -P: %v: %s", v, err, out)
			}
		}
		return nil
	}
}

// healthGroup is a group of tiny guests with an exec health check on the guest's service, a
// preserved data disk, and the data source.
func healthGroup(name string, size int, running bool, image, updatePolicy, extra string) string {
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
    console_log_dir = %q
    cloud_init {
      user_data = "#cloud-config\n"
    }
    health_check {
      exec {
        command = ["/bin/tiny-service", "status"]
      }
      interval            = "2s"
      timeout             = "2s"
      unhealthy_threshold = 2
    }
`, image, consoleLogDir)
	cfg := groupConfig(name, size, body, fmt.Sprintf("  running = %t\n  update_policy {\n%s\n  }\n%s", running, updatePolicy, extra))
	return strings.Replace(cfg, "memory_mib  = 64\n", "", 1) + strings.Replace(dataPolicyAndInstances, "ON_PERMANENT_INSTANCE_DELETION", "NEVER", 1)
}

// dsInstance is a path into the data source's instance of index i.
func dsInstance(i int, key string) tfjsonpath.Path {
	return tfjsonpath.New("instances").AtSliceIndex(i).AtMapKey(key)
}

const dsAddr = "data.virt_managed_instances.test"

// contains is a known-value check that a string holds every one of parts.
func contains(parts ...string) knownvalue.Check {
	return knownvalue.StringFunc(func(v string) error {
		for _, p := range parts {
			if !strings.Contains(v, p) {
				return fmt.Errorf("%q does not contain %q", v, p)
			}
		}
		return nil
	})
}

// checkSameIDs checks that the named members run under the hypervisor ids (and UUIDs) they had
// when before recorded them: not restarted, not recreated.
func checkSameIDs(t *testing.T, base string, before memberState, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		now := members(t, base)
		for _, n := range names {
			d, ok := now[n]
			if !ok {
				return fmt.Errorf("%s is gone", n)
			}
			if got := [2]string{d.UUID, fmt.Sprint(d.ID)}; got != before[n] {
				return fmt.Errorf("%s is %v, was %v: it was touched", n, got, before[n])
			}
		}
		return nil
	}
}

// TestAccHealth_rollout is the rollout, run twice on real guests: 4 running members of the
// tiny guest, max_unavailable 1, an exec probe on the guest's service, REPLACE to an image whose
// service never starts. With STOP exactly one member is replaced: it stays on the new image,
// UNHEALTHY, the apply's error names it and quotes the probe, and the other three are never
// touched. With ROLLBACK that member is back on the old image, its preserved data disk byte for
// byte, the others untouched, and the state keeps the old template: the next plan still wants the
// new one, and the old configuration plans nothing.
func TestAccHealth_rollout(t *testing.T) {
	for _, onFailure := range []string{"STOP", "ROLLBACK"} {
		t.Run(onFailure, func(t *testing.T) {
			testAccHealthRollout(t, onFailure)
		})
	}
}

func testAccHealthRollout(t *testing.T, onFailure string) {
	name := testPrefix + "h" + strings.ToLower(onFailure)[:4]
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	good := tinyGuestImage(t, testPrefix+"image-"+name+".qcow2")
	broken := tinyGuestBrokenImage(t, testPrefix+"image-"+name+"-broken.qcow2")
	all := []string{name + "-1", name + "-2", name + "-3", name + "-4"}
	for _, m := range all {
		_ = os.Remove(filepath.Join(consoleLogDir, m+".console.log"))
	}
	policy := fmt.Sprintf("    max_unavailable = 1\n    min_ready       = \"2s\"\n    ready_timeout   = \"90s\"\n    on_failure      = %q", onFailure)
	cfg := func(running bool, image, typ string) string {
		return healthGroup(name, 4, running, image, policy+typ, "")
	}
	var data []string
	for _, m := range all {
		data = append(data, m+"-data.qcow2")
	}
	before := memberState{}
	steps := []resource.TestStep{
		// Stopped first, so that the data disks can be written while nothing holds them.
		{Config: cfg(false, good, ""), Check: checkMembers(t, name, "STOPPED", all...)},
		{
			PreConfig: func() {
				for _, v := range data {
					writeDataPattern(t, v)
				}
			},
			Config: cfg(true, good, ""),
			Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", all...), before.record(t, name), checkDataPattern(t, data...)),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("HEALTHY")),
				statecheck.ExpectKnownValue(dsAddr, dsInstance(3, "health"), knownvalue.StringExact("HEALTHY")),
			},
		},
		{
			Config:      cfg(true, broken, ""),
			ExpectError: regexpMust(name + `-1`),
		},
	}
	if onFailure == "STOP" {
		steps = append(steps, resource.TestStep{
			// OPPORTUNISTIC leaves the rollout where it stopped, so this apply changes nothing and
			// the data source shows the group as the failed rollout left it.
			Config: cfg(true, broken, "\n    type = \"OPPORTUNISTIC\""),
			Check: resource.ComposeTestCheckFunc(
				checkSameIDs(t, name, before, all[1:]...),
				checkBacking(t, broken, all[0]),
				checkBacking(t, good, all[1:]...),
				checkDataPattern(t, data...),
			),
			ConfigStateChecks: []statecheck.StateCheck{
				statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("UNHEALTHY")),
				statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health_reason"), contains("tiny-service")),
				statecheck.ExpectKnownValue(dsAddr, dsInstance(1, "health"), knownvalue.StringExact("HEALTHY")),
			},
		})
	} else {
		steps = append(steps,
			resource.TestStep{
				// The state kept the old template: the new one is still wanted.
				Config: cfg(true, broken, ""), PlanOnly: true, ExpectNonEmptyPlan: true,
			},
			resource.TestStep{
				Config: cfg(true, good, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkSameIDs(t, name, before, all[1:]...),
					checkBacking(t, good, all...),
					checkDataPattern(t, data...),
				),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("HEALTHY")),
				},
			})
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkKeptAfterDestroy(t, name, nil, data...),
		Steps:                    steps,
	})
}

// TestAccHealth_serviceStopped stops the service inside a running guest, behind Terraform's back,
// through the guest agent: the data source shows the member UNHEALTHY quoting the probe; with
// auto_healing the next apply repairs it (a RESTART first) and it is HEALTHY again; with
// failed_instance_preservation it is kept as it is instead, the same domain, still UNHEALTHY.
func TestAccHealth_serviceStopped(t *testing.T) {
	for _, keep := range []bool{false, true} {
		t.Run(map[bool]string{false: "heal", true: "preserve"}[keep], func(t *testing.T) {
			testAccHealthServiceStopped(t, keep)
		})
	}
}

func testAccHealthServiceStopped(t *testing.T, keep bool) {
	name := testPrefix + map[bool]string{false: "hheal", true: "hkeep"}[keep]
	m1 := name + "-1"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	image := tinyGuestImage(t, testPrefix+"image-"+name+".qcow2")
	_ = os.Remove(filepath.Join(consoleLogDir, m1+".console.log"))
	extra := "  auto_healing {\n    initial_delay = \"0s\"\n    backoff       = \"0s\"\n  }\n"
	if keep {
		extra += "  failed_instance_preservation {\n    auto_preserve_failed_max = 1\n    preserve_timeout         = \"1h\"\n  }\n"
	}
	cfg := healthGroup(name, 1, true, image, "    ready_timeout = \"90s\"", extra)
	before, after := memberState{}, memberState{}
	stopped := resource.TestStep{
		PreConfig: func() { guestExec(t, m1, "/bin/tiny-service", "stop") },
		Config:    cfg,
	}
	if keep {
		stopped.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plannedPrefix(0, "PRESERVE: preserved (AUTO)"),
			plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("health"), knownvalue.StringExact("UNHEALTHY")),
		}}
		stopped.Check = checkSameIDs(t, name, before, m1)
		stopped.ConfigStateChecks = []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("UNHEALTHY")),
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health_reason"), contains("tiny-service")),
		}
	} else {
		stopped.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plancheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances").AtSliceIndex(0).AtMapKey("planned_action"),
				contains("RESTART", "autoheal", "UNHEALTHY", "tiny-service")),
		}}
		stopped.Check = func(*terraform.State) error {
			d := members(t, name)[m1]
			if fmt.Sprint(d.ID) == before[m1][1] {
				return fmt.Errorf("%s still runs as domain id %d: it was not restarted", m1, d.ID)
			}
			if d.UUID != before[m1][0] {
				return fmt.Errorf("%s was recreated (UUID %s, was %s): a RESTART was wanted first", m1, d.UUID, before[m1][0])
			}
			return after.record(t, name)(nil)
		}
		stopped.ConfigStateChecks = []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("HEALTHY")),
		}
	}
	// The next plan leaves the member as it is now: kept, or repaired once and healthy since.
	now := map[bool]memberState{false: after, true: before}[keep]
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkKeptAfterDestroy(t, name, nil, m1+"-data.qcow2"),
		Steps: []resource.TestStep{
			{
				Config: cfg,
				Check:  resource.ComposeTestCheckFunc(checkMembers(t, name, "RUNNING", m1), before.record(t, name)),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("HEALTHY")),
				},
			},
			stopped,
			{
				// Read at plan time now: the member is still kept as it was, and says why.
				Config: cfg,
				Check:  checkSameIDs(t, name, now, m1),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact(map[bool]string{false: "HEALTHY", true: "UNHEALTHY"}[keep])),
					statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "preserved"), knownvalue.StringExact(map[bool]string{false: "NO", true: "AUTO"}[keep])),
				},
			},
		},
	})
}
