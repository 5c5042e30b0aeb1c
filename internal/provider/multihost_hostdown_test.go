// This file holds the multi-host acceptance tests of a host that is down and of checks made on a member's own host.

package provider

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// hostsProvider is the provider block of the multi-host tests: the default host and h2 and h3.
func hostsProvider() string {
	return fmt.Sprintf(`
provider "virt" {
  host {
    name = "h2"
    uri  = %q
  }
  host {
    name = "h3"
    uri  = %q
  }
}
`, testHostH2URI, testHostH3URI)
}

// spreadConfig is a group of size stopped members over default, h2 and h3 (its record on the
// default host), with a data disk its policy preserves.
func spreadConfig(name string, size int) string {
	return hostsProvider() + dataPolicyAndInstances + groupConfig(name, size, diskBlocks(8, "data"), `
  running = false
  distribution_policy {
    hosts = ["default", "h2", "h3"]
  }
`)
}

// recordCreating writes in the group's record that member was being created on host when the
// apply that placed it stopped, as a run does that loses the host in the middle of a scale-out.
func recordCreating(t *testing.T, group, member, host string) {
	t.Helper()
	r := reconcile.New(testLibvirt(t))
	r.Hosts = map[string]backend.Backend{testHostH2: hostConn(t, testHostH2), testHostH3: hostConn(t, testHostH3)}
	r.Holder = testPrefix + "record-creating"
	// Under a lease of its own, given back at once, as an apply would.
	held, release, err := r.Hold(context.Background(), group, nil)
	if err != nil {
		t.Fatalf("take the lease of %s: %v", group, err)
	}
	defer release(false)
	_, err = r.Change(held, group, testPool(), func(s *engine.GroupState, exists bool) error {
		if !exists {
			return fmt.Errorf("group %s has no record", group)
		}
		s.Placement[member] = host
		s.Creating = append(s.Creating, member)
		return nil
	})
	if err != nil {
		t.Fatalf("write %s as being created on %s: %v", member, host, err)
	}
}

// placementOf checks where the group record places member ("" when it does not).
func placementOf(t *testing.T, group, member, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		s, err := reconcile.New(testLibvirt(t)).Load(context.Background(), group)
		if err != nil {
			return err
		}
		if got := s.Placement[member]; got != want {
			return fmt.Errorf("the record places %s on %q, want %q (creating %v)", member, got, want, s.Creating)
		}
		return nil
	}
}

// TestAccStatefulGroup_hostDownNoPhantom is issue 28's second report: a group over three hosts
// with h3 stopped scales out from 3 to 6 only onto the hosts that answer (before, member 6 went
// to h3 and the apply failed); a member the record says was being created on h3 when h3 stopped
// (one that was never made) is not counted or shown, and the plan at the size the real members
// have deletes none of them; the next scale-out takes its name on a host that answers, and once h3
// is back the group converges with nothing on h3 but its own member.
func TestAccStatefulGroup_hostDownNoPhantom(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "phantom"
	h3Unknown := map[string]string{"default": "STOPPED", "h2": "STOPPED", "h3": "UNKNOWN"}
	sums := hostSums{}
	// It stops h3: one at a time with the other tests of h2 and h3 (hostsTest).
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				Config: spreadConfig(name, 3),
				Check:  onHosts(t, name, map[string][]string{"default": {name + "-1"}, "h2": {name + "-2"}, "h3": {name + "-3"}}),
			},
			{
				// h3 stops; the scale-out to 6 places the new members where hosts answer.
				PreConfig: func() { stopHost(t, testHostH3) },
				Config:    spreadConfig(name, 6),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h2", "h3", "default", "h2", "default")),
				},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4", name + "-6"}, "h2": {name + "-2", name + "-5"}}),
					func(*terraform.State) error {
						sums.write(t, testHostH2, name+"-5-data.qcow2", 0x5c)
						sums.write(t, testHostDefault, name+"-6-data.qcow2", 0x6c)
						return nil
					},
				),
			},
			{
				// The record now says member 7 was being created on h3 when it stopped: the plan
				// at size 6 is empty, shows no member 7, and deletes nothing real in its place.
				PreConfig: func() { recordCreating(t, name, name+"-7", testHostH3) },
				Config:    spreadConfig(name, 6),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h2", "h3", "default", "h2", "default")),
				},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4", name + "-6"}, "h2": {name + "-2", name + "-5"}}),
					sums.same(t),
				),
			},
			{
				// Size 7: member 7 is made on a host that answers, and the record forgets h3 for it.
				Config: spreadConfig(name, 7),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, h3Unknown, "default", "h2", "h3", "default", "h2", "default", "h2")),
				},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4", name + "-6"}, "h2": {name + "-2", name + "-5", name + "-7"}}),
					placementOf(t, name, name+"-7", testHostH2),
					sums.same(t),
				),
			},
			{
				// h3 is back: its own member is there as it was, and the group converges.
				PreConfig: func() { startHost(t, testHostH3) },
				Config:    spreadConfig(name, 7),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("instances"), hostsOf(name, map[string]string{"default": "STOPPED", "h2": "STOPPED", "h3": "STOPPED"}, "default", "h2", "h3", "default", "h2", "default", "h2")),
				},
				Check: resource.ComposeTestCheckFunc(
					onHosts(t, name, map[string][]string{"default": {name + "-1", name + "-4", name + "-6"}, "h2": {name + "-2", name + "-5", name + "-7"}, "h3": {name + "-3"}}),
					sums.same(t),
				),
			},
			{
				Config:   spreadConfig(name, 7),
				PlanOnly: true,
			},
		},
	})
}

// TestAccStatefulGroup_checksOnTheMembersHost is issue 28's third report: the plan-time checks of
// a group whose members go to h2 run on h2. A path in the default host's pool directory is not a
// volume of a pool on h2 and is refused without allow_host_paths; a network the default host has
// and h2 lacks is refused; a volume of h2's own pool is accepted, and the members are built on it.
func TestAccStatefulGroup_checksOnTheMembersHost(t *testing.T) {
	hostsTest(t)
	name := testPrefix + "hostcheck"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	// Images named apart from the group's volumes, which CheckDestroy wants gone.
	onDefault, onH2 := testPrefix+"hcimg-default.qcow2", testPrefix+"hcimg-h2.qcow2"
	makeVolume(t, testHostDefault, onDefault)
	makeVolume(t, testHostH2, onH2)
	defaultPath, h2Path := hostVolumePath(t, testHostDefault, onDefault), hostVolumePath(t, testHostH2, onH2)
	onlyH2 := func(template string) string {
		return hostsProvider() + groupConfig(name, 1, template, `
  running = false
  distribution_policy {
    hosts = ["h2"]
  }
`)
	}
	image := func(p string) string { return fmt.Sprintf("    boot_disk {\n      source_image = %q\n    }\n", p) }
	resource.Test(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeftOnHosts(t, name),
		Steps: []resource.TestStep{
			{
				// A volume of the default host's pool is a file outside every pool of h2.
				Config:      onlyH2(image(defaultPath)),
				ExpectError: regexpMust(fmt.Sprintf(`source_image on host "h2": %q is not a volume of any storage pool`, defaultPath)),
			},
			{
				Config:      onlyH2("    network_interface {\n      network = \"default\"\n    }\n"),
				ExpectError: regexpMust(`network "default" does not exist on host "h2"`),
			},
			{
				// A volume of h2's own pool, which the default host does not have: accepted, and
				// the member is built on it.
				Config: onlyH2(image(h2Path)),
				Check: func(*terraform.State) error {
					doms, err := hostConn(t, testHostH2).ListDomains(context.Background(), name+"-")
					if err != nil {
						return err
					}
					if len(doms) != 1 || doms[0].Name != name+"-1" {
						return fmt.Errorf("members on h2: %v", doms)
					}
					boot := hostVolumePath(t, testHostH2, name+"-1-boot.qcow2")
					out, err := exec.Command("qemu-img", "info", "-U", "--output=json", boot).CombinedOutput()
					if err != nil {
						return fmt.Errorf("qemu-img info %s: %v: %s", boot, err, out)
					}
					if !strings.Contains(string(out), fmt.Sprintf(`"backing-filename": %q`, h2Path)) {
						return fmt.Errorf("the boot volume is not built on %s: %s", h2Path, out)
					}
					return onHosts(t, name, map[string][]string{testHostDefault: nil})(nil)
				},
			},
		},
	})
}

// makeVolume makes an empty qcow2 volume of 16 MiB in host's pool, removed when the test ends.
func makeVolume(t *testing.T, host, name string) {
	t.Helper()
	pool := testHostPool
	if host == testHostDefault {
		pool = testPool()
	}
	uri := testHostURI(host)
	if out, err := exec.Command("virsh", "-c", uri, "vol-create-as", pool, name, "16M", "--format", "qcow2").CombinedOutput(); err != nil {
		t.Fatalf("make volume %s on %s: %v: %s", name, host, err, out)
	}
	t.Cleanup(func() {
		if out, err := exec.Command("virsh", "-c", uri, "vol-delete", "--pool", pool, name).CombinedOutput(); err != nil {
			t.Errorf("remove volume %s on %s: %v: %s", name, host, err, out)
		}
	})
}
