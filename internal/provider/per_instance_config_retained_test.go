package provider

import (
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// TestAccPerInstanceConfig_retainedState: a config destroyed with the default
// remove_instance_state_on_destroy = false leaves its disk attached and its metadata set, and the
// very next plan is empty (the state alone is no reason to change the member). The data source
// shows that state as retained, not as preserved by a config. A template metadata change that
// reaches the member then removes it in the same apply, live, and its plan says why; the disk's
// volume stays, its bytes unchanged.
func TestAccPerInstanceConfig_retainedState(t *testing.T) {
	name := testPrefix + "ret"
	n1 := name + "-1"
	extra := testPrefix + "ext-ret-extra.qcow2"
	body := func(mode string) string { return fmt.Sprintf("\n    metadata = { mode = %q }", mode) }
	config := pic("n1", n1, []string{"extra=" + extra}, map[string]string{"node-id": "7"}, "")
	ids := domainIDs{}
	sums := checksums{}
	sameBytes := func(*terraform.State) error {
		sum, _, err := volumeBytes(t, extra)
		if err != nil {
			return err
		}
		if sum != sums[extra] {
			return fmt.Errorf("volume %s has checksum %s, had %s", extra, sum, sums[extra])
		}
		return nil
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, extra)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() {
					extVolume(t, extra)
					sums.write(t, extra, 0x5a)
				},
				Config: stack(name, 1, body("test"), "", config),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[extra=" + extra + "] meta={mode=test node-id=7}"}),
					sameBytes,
				),
			},
			{
				// The config goes; the member keeps its disk and metadata, and nothing else moves.
				Config: stack(name, 1, body("test"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionNoop),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[extra=" + extra + "] meta={mode=test node-id=7}"}),
					sameBytes,
				),
			},
			{
				// The very next plan, with nothing changed, is empty; the data source (read while
				// planning, after the destroy above) shows the state as retained.
				Config:           stack(name, 1, body("test"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={} retained=[extra=" + extra + "] {node-id=7}"}),
					checkDomains(t, name, map[string]string{n1: "disks=[extra=" + extra + "] meta={mode=test node-id=7}"}),
					sameBytes,
				),
			},
			{
				// A template change that reaches the member takes the retained state with it, in
				// the same live REFRESH.
				Config: stack(name, 1, body("web"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^REFRESH: metadata mode changed, disk extra detached \(its per-instance config was destroyed\), metadata node-id removed \(its per-instance config was destroyed\)$`))),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[] meta={mode=web}"}),
					checkVolumeExists(t, extra),
					sameBytes,
				),
			},
			{
				Config: stack(name, 1, body("web"), "", ""),
				Check:  checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
			},
		},
	})
}

// TestAccPerInstanceConfig_retainedThroughTemplateChange: a config destroyed (keeping its state)
// in the same apply as a template change that reaches its member. Terraform destroys the config
// before it updates the group, and the group's plan was made while the config still existed: the
// member changes as that plan showed (vcpu) and keeps the config's disk and metadata through this
// change, so that plan and apply agree. The next plan is empty; the state goes at the member's
// next update for another reason, as documented.
func TestAccPerInstanceConfig_retainedThroughTemplateChange(t *testing.T) {
	name := testPrefix + "rettpl"
	n1 := name + "-1"
	extra := testPrefix + "ext-rettpl-extra.qcow2"
	body := func(vcpu int, mode string) string {
		return fmt.Sprintf("    vcpu = %d\n    metadata = { mode = %q }", vcpu, mode)
	}
	config := pic("n1", n1, []string{"extra=" + extra}, map[string]string{"node-id": "7"}, "")
	ids := domainIDs{}
	kept := "disks=[extra=" + extra + "] meta={mode=test node-id=7}"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, extra)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, extra) },
				Config:    stack(name, 1, body(1, "test"), "", config),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkDomains(t, name, map[string]string{n1: kept}),
				),
			},
			{
				// One apply: the config goes (keeping its state) and vcpu changes. The plan shows
				// the restart for vcpu alone, and the apply does exactly that.
				Config: stack(name, 1, body(2, "test"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionDestroy),
						plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
						expectMemberPlan(groupAddr, 0, "planned_action",
							knownvalue.StringExact("RESTART: vcpu 1 -> 2")),
					},
					PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
				},
				Check: resource.ComposeTestCheckFunc(
					ids.changed(t, name), // the restart for vcpu
					ids.record(t, name),
					checkDomains(t, name, map[string]string{n1: kept}),
				),
			},
			{
				// Nothing changed: the plan is empty and the member shows the state as retained.
				Config:           stack(name, 1, body(2, "test"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={} retained=[extra=" + extra + "] {node-id=7}"}),
					checkDomains(t, name, map[string]string{n1: kept}),
				),
			},
			{
				// The member's next update for another reason takes the retained state with it.
				Config: stack(name, 1, body(2, "web"), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^REFRESH: metadata mode changed, disk extra detached \(its per-instance config was destroyed\), metadata node-id removed \(its per-instance config was destroyed\)$`))),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{n1: "disks=[] meta={mode=web}"}),
					checkVolumeExists(t, extra),
				),
			},
		},
	})
}

// TestAccPerInstanceConfig_destroyOrderWithTemplateChange: the other orders of a config's destroy
// in the same apply as a template change that reaches its member. With
// remove_instance_state_on_destroy = true the destroy removes the state first, and the group's
// change is the one its plan showed. With create_before_destroy on the config, Terraform updates
// the group first (with the config still there) and destroys the config after: the member keeps
// the state, retained.
func TestAccPerInstanceConfig_destroyOrderWithTemplateChange(t *testing.T) {
	for _, c := range []struct {
		suffix, extra, after string
	}{
		{"rmv", "  remove_instance_state_on_destroy = true", "disks=[] meta={mode=test}"},
		{"cbd", "  lifecycle {\n    create_before_destroy = true\n  }", "disks=[extra=%s] meta={mode=test node-id=7}"},
	} {
		t.Run(c.suffix, func(t *testing.T) {
			name := testPrefix + "ord" + c.suffix
			n1 := name + "-1"
			extra := testPrefix + "ext-ord" + c.suffix + "-extra.qcow2"
			body := func(vcpu int) string { return fmt.Sprintf("    vcpu = %d\n    metadata = { mode = \"test\" }", vcpu) }
			after := c.after
			if strings.Contains(after, "%s") {
				after = fmt.Sprintf(after, extra)
			}
			ids := domainIDs{}
			parallelTest(t, resource.TestCase{
				PreCheck:                 func() { testAccPreCheck(t) },
				ProtoV6ProviderFactories: testAccProviders,
				CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, extra)),
				Steps: []resource.TestStep{
					{
						PreConfig: func() { extVolume(t, extra) },
						Config:    stack(name, 1, body(1), "", pic("n1", n1, []string{"extra=" + extra}, map[string]string{"node-id": "7"}, c.extra)),
						Check: resource.ComposeTestCheckFunc(
							ids.record(t, name),
							checkDomains(t, name, map[string]string{n1: "disks=[extra=" + extra + "] meta={mode=test node-id=7}"}),
						),
					},
					{
						Config: stack(name, 1, body(2), "", ""),
						ConfigPlanChecks: resource.ConfigPlanChecks{
							PreApply: []plancheck.PlanCheck{
								expectMemberPlan(groupAddr, 0, "planned_action",
									knownvalue.StringExact("RESTART: vcpu 1 -> 2")),
							},
							PostApplyPostRefresh: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()},
						},
						Check: resource.ComposeTestCheckFunc(
							ids.changed(t, name), // the restart for vcpu
							checkDomains(t, name, map[string]string{n1: after}),
						),
					},
				},
			})
		})
	}
}

// TestAccPerInstanceConfig_retainedThroughTemplateChangeNoRefresh is the same apply planned with
// -refresh=false: no refresh reads the record, so nothing in the state's private data says that
// the plan saw the config; the config's destroy in the apply tells the group's plan that follows
// it in the same process (providerdata/retained_here.go). The member changes as the plan showed, keeps the
// config's state, and the next plan is empty.
func TestAccPerInstanceConfig_retainedThroughTemplateChangeNoRefresh(t *testing.T) {
	name := testPrefix + "retnr"
	n1 := name + "-1"
	extra := testPrefix + "ext-retnr-extra.qcow2"
	body := func(vcpu int) string { return fmt.Sprintf("    vcpu = %d\n    metadata = { mode = \"test\" }", vcpu) }
	config := pic("n1", n1, []string{"extra=" + extra}, map[string]string{"node-id": "7"}, "")
	ids := domainIDs{}
	kept := "disks=[extra=" + extra + "] meta={mode=test node-id=7}"
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, extra)),
		AdditionalCLIOptions:     &resource.AdditionalCLIOptions{Plan: resource.PlanOptions{NoRefresh: true}},
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, extra) },
				Config:    stack(name, 1, body(1), "", config),
				Check:     resource.ComposeTestCheckFunc(ids.record(t, name), checkDomains(t, name, map[string]string{n1: kept})),
			},
			{
				Config: stack(name, 1, body(2), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{
					PreApply: []plancheck.PlanCheck{
						plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionDestroy),
						expectMemberPlan(groupAddr, 0, "planned_action",
							knownvalue.StringExact("RESTART: vcpu 1 -> 2")),
					},
				},
				Check: resource.ComposeTestCheckFunc(
					ids.changed(t, name),
					checkDomains(t, name, map[string]string{n1: kept}),
				),
			},
			{
				Config:           stack(name, 1, body(2), "", ""),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
		},
	})
}
