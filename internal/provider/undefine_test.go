package provider

import (
	"fmt"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// checkDefined checks with virsh that the domain has a persistent definition and autostart.
func checkDefined(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		info := virshOut(t, "dominfo", name)
		for _, want := range []string{`(?m)^Persistent:\s+yes$`, `(?m)^Autostart:\s+enable$`} {
			if !regexp.MustCompile(want).MatchString(info) {
				return fmt.Errorf("virsh dominfo %s does not match %s:\n%s", name, want, info)
			}
		}
		return nil
	}
}

// TestAccStatefulGroup_undefinedWhileRunning: `virsh undefine` of a running member leaves it
// running without a definition (no autostart, gone at its next shutdown). The next plan shows it
// as drift on that member, and the apply defines it again: the same domain, not restarted,
// persistent and autostarted as before; the plan after it is empty.
func TestAccStatefulGroup_undefinedWhileRunning(t *testing.T) {
	name := testPrefix + "undef"
	member := name + "-1"
	cfg := groupConfig(name, 2, "", "")
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: cfg, Check: resource.ComposeTestCheckFunc(ids.record(t, name), checkDefined(t, member))},
			{
				PreConfig: func() {
					virsh(t, "undefine", member)
					if info := virshOut(t, "dominfo", member); !regexp.MustCompile(`(?m)^Persistent:\s+no$`).MatchString(info) {
						t.Fatalf("after virsh undefine, %s is still persistent:\n%s", member, info)
					}
				},
				Config: cfg,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringRegexp(regexp.MustCompile(`^NONE: `+regexp.QuoteMeta(engine.DefinitionGone)+`$`))),
					expectMemberPlan(groupAddr, 1, "planned_action", knownvalue.StringExact("NONE")),
				}},
				Check: resource.ComposeTestCheckFunc(ids.same(t, name), checkDefined(t, member)),
			},
		},
	})
}
