package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// guestExec runs a command inside a running member through its QEMU guest agent, behind the
// provider's back, as an operator logged into the guest would, and waits until it has exited.
func guestExec(t *testing.T, domain string, argv ...string) {
	t.Helper()
	args, _ := json.Marshal(argv[1:])
	out := virshOut(t, "qemu-agent-command", domain, fmt.Sprintf(`{"execute":"guest-exec","arguments":{"path":%q,"arg":%s}}`, argv[0], args))
	var started struct {
		Return struct {
			PID int `json:"pid"`
		} `json:"return"`
	}
	if err := json.Unmarshal([]byte(out), &started); err != nil {
		t.Fatalf("guest-exec %v in %s: %v: %s", argv, domain, err, out)
	}
	deadline := time.Now().Add(time.Minute)
	for {
		out := virshOut(t, "qemu-agent-command", domain, fmt.Sprintf(`{"execute":"guest-exec-status","arguments":{"pid":%d}}`, started.Return.PID))
		var status struct {
			Return struct {
				Exited   bool `json:"exited"`
				ExitCode int  `json:"exitcode"`
			} `json:"return"`
		}
		if err := json.Unmarshal([]byte(out), &status); err != nil {
			t.Fatalf("guest-exec-status in %s: %v: %s", domain, err, out)
		}
		if status.Return.Exited {
			if status.Return.ExitCode != 0 {
				t.Fatalf("%v in %s exited with %d", argv, domain, status.Return.ExitCode)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%v in %s has not exited after a minute", argv, domain)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// serviceCheckedTemplate is the template of a group of tiny guests whose health check is the
// guest's service (an exec probe), with a data disk, on image; more adds template lines.
func serviceCheckedTemplate(image, more string) string {
	return fmt.Sprintf(`    memory_mib = 128
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
%s`, image, more)
}

// healthGroup is a one-member group of tiny guests with the service's health check, its data
// disk preserved, and the data source.
func healthGroup(name string, image, updatePolicy, extra string) string {
	body := serviceCheckedTemplate(image, fmt.Sprintf("    console_log_dir = %q\n", consoleLogDir))
	cfg := groupConfig(name, 1, body, fmt.Sprintf("  update_policy {\n%s\n  }\n%s", updatePolicy, extra))
	return strings.Replace(cfg, "memory_mib  = 64\n", "", 1) + strings.Replace(dataPolicyAndInstances, "ON_PERMANENT_INSTANCE_DELETION", "NEVER", 1)
}

// withoutHealthCheck is cfg with its template's health_check block taken out.
func withoutHealthCheck(cfg string) string {
	start := strings.Index(cfg, "    health_check {")
	end := strings.Index(cfg[start:], "\n    }\n") + start + len("\n    }\n")
	return cfg[:start] + cfg[end:]
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
	cfg := healthGroup(name, image, "    ready_timeout = \"90s\"", extra)
	before, after := memberState{}, memberState{}
	stopped := resource.TestStep{
		PreConfig: func() { guestExec(t, m1, "/bin/tiny-service", "stop") },
		Config:    cfg,
	}
	if keep {
		stopped.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			plannedPrefix(0, "PRESERVE: preserved (AUTO)"),
			expectMemberPlan(groupAddr, 0, "health", knownvalue.StringExact("UNHEALTHY")),
		}}
		stopped.Check = checkSameIDs(t, name, before, m1)
		stopped.ConfigStateChecks = []statecheck.StateCheck{
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health"), knownvalue.StringExact("UNHEALTHY")),
			statecheck.ExpectKnownValue(dsAddr, dsInstance(0, "health_reason"), contains("tiny-service")),
		}
	} else {
		stopped.ConfigPlanChecks = resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			expectMemberPlan(groupAddr, 0, "planned_action",
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
	parallelTest(t, resource.TestCase{
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
			{
				// The health check removed, with the member still UNHEALTHY when kept: no member
				// action, and the apply judges the member as its plan's refresh did, so it is not
				// refused as "changed on the host" (it was, once, comparing the refresh's judgement
				// with one made without the check).
				Config: withoutHealthCheck(cfg),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: checkSameIDs(t, name, now, m1),
			},
		},
	})
}
