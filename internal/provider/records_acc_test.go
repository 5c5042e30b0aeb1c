package provider

import (
	"fmt"
	"os/exec"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// recordsConfig is a group of two members with a data disk that its policy deletes with them, so
// that a destroy leaves nothing.
func recordsConfig(name string) string {
	return groupConfig(name, 2, diskBlocks(8, "data"), "") + `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
`
}

// readUUIDs reads the UUIDs of the named domains with virsh, into into.
func readUUIDs(t *testing.T, into map[string]string, names ...string) {
	t.Helper()
	for _, n := range names {
		into[n] = strings.TrimSpace(virshOut(t, "domuuid", n))
	}
}

// sameUUIDs checks that the named domains have the UUIDs recorded in want: none was made anew.
func sameUUIDs(t *testing.T, want map[string]string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		got := map[string]string{}
		for n := range want {
			readUUIDs(t, got, n)
		}
		for n, u := range want {
			if got[n] != u {
				return fmt.Errorf("domain %s has UUID %s, want %s: it was made anew", n, got[n], u)
			}
		}
		return nil
	}
}

// TestAccStatefulGroup_memberRecordsRemovedByHand removes every member's record from its domain
// (virsh metadata --remove --config, as in the report: the running domains keep theirs until they
// stop): the plan writes the records back, naming why, and the apply does so on the same domains,
// creating nothing; with the records then removed from the running domains too, the destroy
// deletes both domains and their volumes and creates nothing (a creation would fail on the names
// the domains hold).
func TestAccStatefulGroup_memberRecordsRemovedByHand(t *testing.T) {
	name := testPrefix + "lostrec"
	n1, n2 := name+"-1", name+"-2"
	cfg := recordsConfig(name)
	uuids := map[string]string{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: checkMembers(t, name, engine.StatusRunning, n1, n2)},
			{
				PreConfig: func() {
					readUUIDs(t, uuids, n1, n2)
					for _, n := range []string{n1, n2} {
						virsh(t, "metadata", n, store.MemberNamespace, "--remove", "--config")
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					plannedContains(0, engine.RecordLostWhy), plannedContains(1, engine.RecordLostWhy),
				}},
				// The apply writes the records back onto the same domains.
				Check: resource.ComposeTestCheckFunc(checkMembers(t, name, engine.StatusRunning, n1, n2), sameUUIDs(t, uuids),
					func(*terraform.State) error {
						for _, n := range []string{n1, n2} {
							if !hasMemberRecord(t, n) {
								return fmt.Errorf("domain %s has no member record after the apply", n)
							}
						}
						return nil
					}),
			},
			{Config: cfg, PlanOnly: true},
			{
				// Damaged again, then destroyed from the damaged records: nothing is made (a
				// creation would fail on the names the domains hold) and nothing is left
				// (CheckDestroy).
				PreConfig: func() {
					for _, n := range []string{n1, n2} {
						// From the running domain too: the member record is gone everywhere.
						virsh(t, "metadata", n, store.MemberNamespace, "--remove", "--live", "--config")
						if hasMemberRecord(t, n) {
							t.Fatalf("domain %s still carries its member record", n)
						}
					}
				},
				Config:  cfg,
				Destroy: true,
				Check:   checkNothingLeft(t, name),
			},
		},
	})
}

// TestAccStatefulGroup_groupRecordRemovedByHand undefines the group's record (its secrets): the
// refresh keeps the group, the plan writes the record back as an update, the apply does it
// without making any member anew (same UUIDs), and the destroy deletes both domains and their
// volumes.
func TestAccStatefulGroup_groupRecordRemovedByHand(t *testing.T) {
	name := testPrefix + "lostgrp"
	n1, n2 := name+"-1", name+"-2"
	cfg := recordsConfig(name)
	uuids := map[string]string{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: checkMembers(t, name, engine.StatusRunning, n1, n2)},
			{
				PreConfig: func() {
					readUUIDs(t, uuids, n1, n2)
					undefineGroupRecord(t, name)
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, engine.StatusRunning, n1, n2),
					sameUUIDs(t, uuids),
					func(*terraform.State) error {
						if recs, _ := testLibvirt(t).GroupRecordNames(name); len(recs) == 0 {
							return fmt.Errorf("group %s has no record after the apply", name)
						}
						return nil
					},
				),
			},
			{Config: cfg, PlanOnly: true},
			{
				// Damaged again, then destroyed: the destroy finds the members by their records.
				PreConfig: func() { undefineGroupRecord(t, name) },
				Config:    cfg,
				Destroy:   true,
				Check:     checkNothingLeft(t, name),
			},
		},
	})
}

// undefineGroupRecord undefines every generation of the group's record, as a user would with
// virsh secret-undefine.
func undefineGroupRecord(t *testing.T, group string) {
	t.Helper()
	n := 0
	for _, line := range strings.Split(virshOut(t, "secret-list"), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && strings.HasPrefix(f[2], "virt-group:"+group+":") {
			virsh(t, "secret-undefine", f[0])
			n++
		}
	}
	if n == 0 {
		t.Fatalf("group %s has no record to undefine", group)
	}
}

// hasMemberRecord reports whether the domain's persistent definition carries a member record.
func hasMemberRecord(t *testing.T, domain string) bool {
	t.Helper()
	out, err := exec.Command("virsh", "-c", connectionURI(providerdata.NullString()), "metadata", domain, store.MemberNamespace, "--config").CombinedOutput()
	return err == nil && strings.Contains(string(out), "<")
}

// plannedContains checks that a member's planned_action in the group's plan contains text.
func plannedContains(index int, text string) plancheck.PlanCheck {
	return expectMemberPlan(groupAddr, index, "planned_action",
		knownvalue.StringFunc(func(v string) error {
			if !strings.Contains(v, text) {
				return fmt.Errorf("planned %q, want it to say %q", v, text)
			}
			return nil
		}))
}
