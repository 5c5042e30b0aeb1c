package provider

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
)

// swtpmStateDir is where libvirt keeps a domain's emulated TPM state (qemu:///system).
const swtpmStateDir = "/var/lib/libvirt/swtpm"

// checkTPM checks, in the member's domain XML as virsh dumpxml prints it, one emulated TPM 2.0 of
// the model, and that its swtpm state exists under the domain's UUID; it hands back the UUID.
func checkTPM(t *testing.T, member, model string, uuid *string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		xml := virshOut(t, "dumpxml", member)
		tpm := regexp.MustCompile(`(?s)<tpm model='([^']*)'>\s*<backend type='emulator' version='([^']*)'`).FindAllStringSubmatch(xml, -1)
		if len(tpm) != 1 || tpm[0][1] != model || tpm[0][2] != "2.0" {
			return fmt.Errorf("%s's domain XML has TPMs %q, want one %s emulator of version 2.0:\n%s", member, tpm, model, xml)
		}
		dom, _, err := domainDef(t, member, 0)
		if err != nil {
			return err
		}
		if _, err := os.Stat(filepath.Join(swtpmStateDir, dom.UUID)); err != nil {
			return fmt.Errorf("%s runs with a TPM, but its swtpm state is not where libvirt keeps it: %v", member, err)
		}
		*uuid = dom.UUID
		return nil
	}
}

func tpmConfig(name, block string) string {
	return groupConfig(name, 1, "\n    "+block, "")
}

// TestAccStatefulGroup_tpm: a member with `tpm {}` runs with an emulated TPM 2.0 (tpm-crb, the
// default) whose state swtpm keeps under the domain's UUID; the plan after it is empty, and
// import gives the block back. A bad model is refused at plan, naming the attribute, the value
// and the models allowed. A model change restarts the member (RESTART), as the same domain, so
// the TPM state is the same; a REPLACE makes a new domain, with a new UUID and a fresh TPM state,
// and the old state is gone.
func TestAccStatefulGroup_tpm(t *testing.T) {
	name := testPrefix + "tpm-group"
	member := name + "-1"
	var uuid, uuidAfter string
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{
				Config:      tpmConfig(name, `tpm { model = "tpm-x" }`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)template\.tpm\.model.*tpm-crb.*tpm-tis.*tpm-x`),
			},
			{
				Config:      tpmConfig(name, `tpm { version = "1.2" }`),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)template\.tpm\.version.*2\.0.*1\.2`),
			},
			{
				Config: tpmConfig(name, `tpm {}`),
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkTPM(t, member, "tpm-crb", &uuid),
				),
			},
			{
				Config:           tpmConfig(name, `tpm {}`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				ResourceName:                         groupAddr,
				ImportState:                          true,
				ImportStateId:                        name,
				ImportStateVerify:                    true,
				ImportStateVerifyIdentifierAttribute: "name",
				ImportStateVerifyIgnore:              []string{"instances." + name + "-1.planned_action"},
			},
			{
				Config: tpmConfig(name, `tpm { model = "tpm-tis" }`),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction(groupAddr, plancheck.ResourceActionUpdate),
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("RESTART: tpm tpm-crb 2.0 -> tpm-tis 2.0")),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkTPM(t, member, "tpm-tis", &uuidAfter),
					func(*terraform.State) error {
						if uuidAfter != uuid {
							return fmt.Errorf("%s has UUID %s after the restart, had %s: a restart must keep the domain and so its TPM state", member, uuidAfter, uuid)
						}
						return nil
					},
				),
			},
			{
				// Adding cloud-init replaces the member: a new domain, with a new UUID and a
				// fresh TPM state, and the old domain's state deleted with it.
				Config: tpmConfig(name, "tpm { model = \"tpm-tis\" }\n    cloud_init {\n      user_data = \"#cloud-config\\n\"\n    }"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					expectMemberPlan(groupAddr, 0, "planned_action",
						knownvalue.StringExact("REPLACE: cloud_init added")),
				}},
				Check: resource.ComposeTestCheckFunc(
					checkMembers(t, name, "RUNNING", member),
					checkTPM(t, member, "tpm-tis", &uuidAfter),
					func(*terraform.State) error {
						if uuidAfter == uuid {
							return fmt.Errorf("%s kept UUID %s through a REPLACE: the docs say a replaced member gets a new domain and a fresh TPM", member, uuid)
						}
						if _, err := os.Stat(filepath.Join(swtpmStateDir, uuid)); !os.IsNotExist(err) {
							return fmt.Errorf("the replaced domain's TPM state %s is still there (%v): the docs say libvirt deletes it", filepath.Join(swtpmStateDir, uuid), err)
						}
						return nil
					},
				),
			},
		},
	})
}
