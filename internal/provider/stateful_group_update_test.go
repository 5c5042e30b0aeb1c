// This file holds the group's acceptance tests of updates in place: live changes, restarts, and what they leave untouched.

package provider

import (
	"fmt"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// domainIDs remembers the hypervisor ids of the group's running domains, so that a later step can
// tell a live update (same ids) from a restart (new ids).
type domainIDs map[string]int32

func (ids domainIDs) record(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			if d.ID <= 0 {
				return fmt.Errorf("domain %s is not running", n)
			}
			ids[n] = d.ID
		}
		return nil
	}
}

func (ids domainIDs) same(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		if len(got) != len(ids) {
			return fmt.Errorf("%d domains, want %d", len(got), len(ids))
		}
		for n, id := range ids {
			if got[n].ID != id {
				return fmt.Errorf("domain %s has id %d, had %d: it was restarted", n, got[n].ID, id)
			}
		}
		return nil
	}
}

func (ids domainIDs) changed(t *testing.T, base string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := members(t, base)
		for n, id := range ids {
			if got[n].ID == id || got[n].ID <= 0 {
				return fmt.Errorf("domain %s has id %d, had %d: it was not restarted", n, got[n].ID, id)
			}
		}
		return nil
	}
}

// checkRecord checks the provider metadata of every member, as libvirt reports it live.
func checkRecord(t *testing.T, base string, check func(rec *backend.Record) error) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n, d := range members(t, base) {
			if d.Record == nil {
				return fmt.Errorf("domain %s has no provider metadata", n)
			}
			if err := check(d.Record); err != nil {
				return fmt.Errorf("domain %s: %w", n, err)
			}
		}
		return nil
	}
}

// checkLive checks a member's running vcpu count and memory, as QEMU reports them.
func checkLive(t *testing.T, base string, vcpu uint16, memoryMiB uint64) resource.TestCheckFunc {
	return func(*terraform.State) error {
		l := testLibvirt(t).Raw()
		for n := range members(t, base) {
			dom, err := l.DomainLookupByName(n)
			if err != nil {
				return err
			}
			_, maxMem, _, nrCPU, _, err := l.DomainGetInfo(dom)
			if err != nil {
				return err
			}
			if nrCPU != vcpu || maxMem != memoryMiB*1024 {
				return fmt.Errorf("domain %s runs with %d vcpu and %d KiB, want %d vcpu and %d KiB", n, nrCPU, maxMem, vcpu, memoryMiB*1024)
			}
		}
		return nil
	}
}

func TestAccStatefulGroup_hotUpdate(t *testing.T) {
	name := testPrefix + "hot"
	ids := domainIDs{}
	before := `
    metadata    = { role = "db" }
    labels      = { team = "a" }
    description = "first"`
	after := `
    metadata    = { role = "web", tier = "1" }
    labels      = { team = "b" }
    description = "second"`
	third := strings.Replace(after, `"second"`, `"third"`, 1)
	revisions := map[string]string{} // the members' template_revision in state, by step
	keep := func(step string) resource.TestCheckFunc {
		return func(s *terraform.State) error {
			a := s.RootModule().Resources[groupAddr].Primary.Attributes
			r1, r2 := a["instances."+name+"-1.template_revision"], a["instances."+name+"-2.template_revision"]
			if r1 == "" || r1 != r2 {
				return fmt.Errorf("members on template revisions %q and %q, want one", r1, r2)
			}
			revisions[step] = r1
			return nil
		}
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, before, ""),
				Check:  ids.record(t, name),
			},
			{
				Config: groupConfig(name, 2, after, ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkRecord(t, name, func(rec *backend.Record) error {
						tpl := rec.Instance.Template
						if tpl.Metadata["role"] != "web" || tpl.Metadata["tier"] != "1" || tpl.Labels["team"] != "b" || tpl.Description != "second" {
							return fmt.Errorf("live metadata is %+v", tpl)
						}
						return nil
					}),
					keep("second"),
				),
			},
			{
				// A change of the description alone is written to the domains, in the
				// definition and live, and not to the records: the members are on the new
				// template revision all the same, in state and in the data source, and the plan
				// after it is empty.
				Config: groupConfig(name, 2, third, ""),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDescription(t, name, "third"),
					checkRecord(t, name, func(rec *backend.Record) error {
						if d := rec.Instance.Template.Description; d != "second" {
							return fmt.Errorf("the record was written for a description change (its description is %q)", d)
						}
						return nil
					}),
					keep("third"),
					func(*terraform.State) error {
						if revisions["third"] == revisions["second"] {
							return fmt.Errorf("template_revision stayed %s across a description change", revisions["second"])
						}
						return nil
					},
				),
			},
			{
				Config: groupConfig(name, 2, third, "") + fmt.Sprintf(`
data "virt_managed_instances" "now" {
  group = %q
}
`, name),
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), func(s *terraform.State) error {
					a := s.RootModule().Resources["data.virt_managed_instances.now"].Primary.Attributes
					for i := range 2 {
						if got := a[fmt.Sprintf("instances.%d.template_revision", i)]; got != revisions["third"] {
							return fmt.Errorf("the data source shows member %d on revision %q, state on %q", i, got, revisions["third"])
						}
					}
					return nil
				}),
			},
			{
				// The group record keeps the templates the group had: an OPPORTUNISTIC group
				// whose template then changes more leaves the members on the one with the new
				// description (no restart, no description put back), though their records
				// still hold the template from before the description change.
				Config: groupConfig(name, 2, "    vcpu = 2\n"+third, "  update_policy {\n    type = \"OPPORTUNISTIC\"\n  }"),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDescription(t, name, "third"),
					checkLive(t, name, 1, 64),
					keep("opportunistic"),
					func(*terraform.State) error {
						if revisions["opportunistic"] != revisions["third"] {
							return fmt.Errorf("members moved from revision %s to %s under OPPORTUNISTIC", revisions["third"], revisions["opportunistic"])
						}
						return nil
					},
				),
			},
		},
	})
}

// checkDescription checks every member's description, in its definition and live.
func checkDescription(t *testing.T, base, want string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		for n := range members(t, base) {
			for _, flag := range []string{"--config", "--live"} {
				if out := strings.TrimSpace(virshOut(t, "desc", n, flag)); out != want {
					return fmt.Errorf("%s description (%s) is %q, want %q", n, flag, out, want)
				}
			}
		}
		return nil
	}
}

func TestAccStatefulGroup_restart(t *testing.T) {
	name := testPrefix + "restart"
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config: groupConfig(name, 2, "    vcpu = 1", ""),
				Check:  resource.ComposeTestCheckFunc(ids.record(t, name), checkLive(t, name, 1, 64)),
			},
			{
				Config: groupConfig(name, 2, "    vcpu = 2", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.changed(t, name), checkLive(t, name, 2, 64), ids.record(t, name)),
			},
			{
				Config: strings.Replace(groupConfig(name, 2, "    vcpu = 2", ""), "memory_mib  = 64", "memory_mib  = 96", 1),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(ids.changed(t, name), checkLive(t, name, 2, 96)),
			},
		},
	})
}

// checkUntouched is a PreConfig that fails when a rejected plan left anything on the host.
func checkUntouched(t *testing.T, prefix string) func() {
	return func() {
		if left := leftovers(t, prefix); len(left) > 0 {
			t.Fatalf("a rejected configuration changed libvirt: %s", strings.Join(left, ", "))
		}
	}
}
