package provider

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

const groupAddr = "virt_stateful_group.test"

// groupConfig renders a group of the test pool with a TCG template; body is added inside the
// template block and extra at the resource's top level. Members power off at once unless extra
// sets shutdown_timeout: a guest with no OS ignores ACPI, and would make every stop wait.
func groupConfig(name string, size int, body, extra string) string {
	if !strings.Contains(body, "vcpu") {
		body = "    vcpu = 1\n" + body
	}
	if !strings.Contains(extra, "shutdown_timeout") {
		extra = "  shutdown_timeout = \"0s\"\n" + extra
	}
	return fmt.Sprintf(`
resource "virt_stateful_group" "test" {
  name        = %q
  pool        = %q
  target_size = %d
%s
  template {
    domain_type = "qemu"
    memory_mib  = 64
%s
  }
}
`, name, testPool(), size, extra, body)
}

// diskBlocks renders template disk blocks of one size, one per device name.
func diskBlocks(sizeMiB int, names ...string) string {
	var b strings.Builder
	for _, n := range names {
		fmt.Fprintf(&b, "\n    disk {\n      device_name = %q\n      size_mib    = %d\n    }", n, sizeMiB)
	}
	return b.String()
}

// members reads the group's member domains straight from libvirt.
func members(t *testing.T, base string) map[string]backend.Domain {
	t.Helper()
	doms, err := testLibvirt(t).ListDomains(context.Background(), base+"-")
	if err != nil {
		t.Fatalf("list domains: %v", err)
	}
	out := map[string]backend.Domain{}
	for _, d := range doms {
		out[d.Name] = d
	}
	return out
}

// checkMembers checks that exactly the named domains exist and have the given status.
func checkMembers(t *testing.T, base string, status engine.Status, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		var gotNames []string
		for n, d := range got {
			gotNames = append(gotNames, n)
			if d.Status != status {
				return fmt.Errorf("domain %s is %s, want %s", n, d.Status, status)
			}
		}
		return sameNames("domains", gotNames, names)
	}
}

// sameNames compares two lists of names as sets.
func sameNames(what string, got, want []string) error {
	got, want = slices.Sorted(slices.Values(got)), slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s %v, want %v", what, got, want)
	}
	return nil
}

// checkVolumes checks that exactly the named volumes exist in the test pool.
func checkVolumes(t *testing.T, prefix string, names ...string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), prefix)
		if err != nil {
			return err
		}
		var got []string
		for _, v := range vols {
			got = append(got, v.Name)
		}
		return sameNames("volumes", got, names)
	}
}

func instanceNames(names ...string) knownvalue.Check {
	checks := make([]knownvalue.Check, len(names))
	for i, n := range names {
		checks[i] = knownvalue.ObjectPartial(map[string]knownvalue.Check{
			"name":   knownvalue.StringExact(n),
			"status": knownvalue.StringExact("RUNNING"),
		})
	}
	return inMemberOrder{knownvalue.ListExact(checks)}
}

func TestAccStatefulGroup_createAndImport(t *testing.T) {
	name := testPrefix + "create"
	body := `
    disk {
      device_name = "data"
      size_mib    = 8
    }
    metadata = { role = "db" }`
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 3, body, ""),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), instanceNames(name+"-1", name+"-2", name+"-3")),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("base_instance_name"), knownvalue.StringExact(name)),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("running"), knownvalue.Bool(true)),
				},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3"),
					checkVolumes(t, name+"-",
						name+"-1-boot.qcow2", name+"-1-data.qcow2",
						name+"-2-boot.qcow2", name+"-2-data.qcow2",
						name+"-3-boot.qcow2", name+"-3-data.qcow2"),
				),
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				// The create's state keeps what its plan showed each member (CREATE) until the
				// next refresh; an import reads the members as they are (NONE).
				ImportStateVerifyIgnore: []string{"instances." + name + "-1.planned_action", "instances." + name + "-2.planned_action", "instances." + name + "-3.planned_action"},
			},
		},
	})
}

func TestAccStatefulGroup_scale(t *testing.T) {
	name := testPrefix + "scale"
	body := `
    disk {
      device_name = "data"
      size_mib    = 8
    }`
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 3, body, ""),
				Check:  checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3"),
			},
			{
				Config: groupConfig(name, 5, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"),
						instanceNames(name+"-1", name+"-2", name+"-3", name+"-4", name+"-5")),
				},
				Check: checkMembers(t, name, "RUNNING", name+"-1", name+"-2", name+"-3", name+"-4", name+"-5"),
			},
			{
				// Scale-in removes the highest indices first, with their volumes.
				Config: groupConfig(name, 2, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), instanceNames(name+"-1", name+"-2")),
				},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
					checkVolumes(t, name+"-", name+"-1-boot.qcow2", name+"-1-data.qcow2", name+"-2-boot.qcow2", name+"-2-data.qcow2"),
				),
			},
			{
				// A member deleted behind Terraform's back is drift: the plan shows it and the
				// apply puts it back under the same name, filling the gap.
				PreConfig: func() {
					if err := testLibvirt(t).UndefineDomain(context.Background(), name+"-1"); err != nil {
						t.Fatalf("delete %s-1 out of band: %v", name, err)
					}
				},
				Config: groupConfig(name, 2, body, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: checkMembers(t, name, "RUNNING", name+"-1", name+"-2"),
			},
		},
	})
}

func TestAccStatefulGroup_badInput(t *testing.T) {
	name := testPrefix + "bad"
	ok := "    vcpu = 1"
	steps := []struct {
		config string
		err    string
	}{
		{groupConfig("Bad_Name", 1, ok, ""), `must be a DNS label`},
		{groupConfig(name, -1, ok, ""), `value must be between 0 and 10000, got: -1`},
		{groupConfig(name, 1, "    vcpu = 0", ""), `value must be at least 1, got: 0`},
		{strings.Replace(groupConfig(name, 1, ok, ""), "memory_mib  = 64", "memory_mib  = 8", 1), `value must be at least 16, got: 8`},
		{strings.Replace(groupConfig(name, 1, ok, ""), `domain_type = "qemu"`, `domain_type = "xen"`, 1), `must be one of: \["kvm" "qemu"\]`},
		{groupConfig(name, 1, ok, `  update_policy {
    minimal_action = "REBOOT"
  }`), `"RESTART" "REPLACE"\], got: "REBOOT"`},
		{groupConfig(name, 1, ok+`
    disk {
      device_name = "data"
      size_mib    = 8
    }
    disk {
      device_name = "data"
      size_mib    = 16
    }`, ""), `device_name "data" appears in more than one block`},
		{groupConfig(name, 1, ok+`
    disk {
      device_name = "boot"
      size_mib    = 8
    }`, ""), `must be none of: \["boot" "nvram"\]`},
		{groupConfig(name, 1, ok+`
    network_interface {
      type = "network"
    }`, ""), `needs\s+network,\s+the\s+name`},
	}
	var ts []resource.TestStep
	for _, s := range steps {
		ts = append(ts, resource.TestStep{
			PreConfig:   checkUntouched(t, name),
			Config:      s.config,
			ExpectError: regexp.MustCompile(s.err),
		})
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    ts,
	})
}

func TestAccStatefulGroup_shrinkRefused(t *testing.T) {
	name := testPrefix + "shrink"
	disk := func(size int) string {
		return fmt.Sprintf(`
    vcpu = 1
    disk {
      device_name = "data"
      size_mib    = %d
    }`, size)
	}
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: groupConfig(name, 1, disk(16), ""), Check: ids.record(t, name)},
			{Config: groupConfig(name, 1, disk(8), ""), ExpectError: regexp.MustCompile(`template disk "data": size_mib 8 is smaller than the\s+current 16`)},
			{
				// Growing is live: the domain keeps running with the same id.
				Config: groupConfig(name, 1, disk(32), ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), checkVolumeSize(t, name+"-1-data.qcow2", 32)),
			},
		},
	})
}

func checkVolumeSize(t *testing.T, volume string, mib uint64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), volume)
		if err != nil {
			return err
		}
		if len(vols) != 1 || vols[0].CapacityBytes != mib<<20 {
			return fmt.Errorf("volume %s: %+v, want %d MiB", volume, vols, mib)
		}
		return nil
	}
}
