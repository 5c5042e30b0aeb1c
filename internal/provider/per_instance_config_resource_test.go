package provider

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"
	"github.com/hashicorp/terraform-plugin-testing/statecheck"
	"github.com/hashicorp/terraform-plugin-testing/terraform"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"
)

// pic renders a virt_per_instance_config of the test group. disks are "device=source" pairs;
// extra goes at the resource's top level.
func pic(resourceName, instance string, disks []string, meta map[string]string, extra string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nresource \"virt_per_instance_config\" %q {\n  group = virt_stateful_group.test.name\n  name  = %q\n%s\n", resourceName, instance, extra)
	if len(disks) > 0 || meta != nil {
		b.WriteString("  preserved_state {\n")
		for _, d := range disks {
			dev, src, _ := strings.Cut(d, "=")
			fmt.Fprintf(&b, "    disk {\n      device_name = %q\n      source      = %q\n    }\n", dev, src)
		}
		if meta != nil {
			b.WriteString("    metadata = {\n")
			for k, v := range meta {
				fmt.Fprintf(&b, "      %q = %q\n", k, v)
			}
			b.WriteString("    }\n")
		}
		b.WriteString("  }\n")
	}
	b.WriteString("}\n")
	return b.String()
}

// checkVolumeExists fails when the volume is gone from the test pool.
func checkVolumeExists(t *testing.T, name string) resource.TestCheckFunc {
	return func(*terraform.State) error {
		vols, err := testLibvirt(t).ListVolumes(context.Background(), testPool(), name)
		if err != nil {
			return err
		}
		for _, v := range vols {
			if v.Name == name {
				return nil
			}
		}
		return fmt.Errorf("volume %s is gone", name)
	}
}

// TestAccPerInstanceConfig_configOnly is the reference document's second example: per-instance
// configs and no stateful policy. Each config attaches a disk the template does not have and sets
// metadata, live; a config beyond target_size waits. Then: a change is in place, a new name
// replaces, a change over the allowed action fails at plan, and a config is imported.
func TestAccPerInstanceConfig_configOnly(t *testing.T) {
	name := testPrefix + "pic"
	n1, n2, n3 := name+"-1", name+"-2", name+"-3"
	legacy, logs := testPrefix+"ext-pic-legacy.qcow2", testPrefix+"ext-pic-logs.qcow2"
	ids := domainIDs{}
	configs := func(n1Meta map[string]string, n1Extra, waiting string) string {
		return pic("n1", n1, []string{"legacy-disk=" + legacy}, n1Meta, n1Extra) +
			pic("n2", n2, []string{"logs-disk=" + logs}, map[string]string{"node-id": "pqr851"}, "") +
			pic("waiting", waiting, nil, map[string]string{"node-id": "later"}, "")
	}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy: resource.ComposeTestCheckFunc(
			checkNothingLeft(t, name),
			// The configs' disks are the user's and are never deleted by a destroy.
			checkVolumeExists(t, legacy), checkVolumeExists(t, logs),
		),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, legacy); extVolume(t, logs) },
				Config:    stack(name, 2, "", "", ""),
				Check:     ids.record(t, name),
			},
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz273"}, "", n3)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionCreate),
					plancheck.ExpectResourceAction("virt_per_instance_config.waiting", plancheck.ResourceActionCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_per_instance_config.n1", tfjsonpath.New("status"), knownvalue.StringExact("EFFECTIVE")),
					statecheck.ExpectKnownValue("virt_per_instance_config.n1", tfjsonpath.New("id"), knownvalue.StringExact(name+"/"+n1)),
					statecheck.ExpectKnownValue("virt_per_instance_config.waiting", tfjsonpath.New("status"), knownvalue.StringExact("WAITING")),
					statecheck.ExpectKnownValue(groupAddr, tfjsonpath.New("target_size"), knownvalue.Int64Exact(2)),
				},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: "policy=[] config=[legacy-disk=" + legacy + "] meta={node-id=xyz273}",
						n2: "policy=[] config=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
					checkDomains(t, name, map[string]string{
						n1: "disks=[legacy-disk=" + legacy + "] meta={node-id=xyz273}",
						n2: "disks=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
				),
			},
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", n3)),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("virt_per_instance_config.n2", plancheck.ResourceActionNoop),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkDomains(t, name, map[string]string{
						n1: "disks=[legacy-disk=" + legacy + "] meta={node-id=xyz274}",
						n2: "disks=[logs-disk=" + logs + "] meta={node-id=pqr851}",
					}),
				),
			},
			// A new name is a new config.
			{
				Config: stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz274"}, "", name+"-4")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.waiting", plancheck.ResourceActionDestroyBeforeCreate),
				}},
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectKnownValue("virt_per_instance_config.waiting", tfjsonpath.New("id"), knownvalue.StringExact(name+"/"+name+"-4")),
				},
				Check: checkMembers(t, name, "RUNNING", n1, n2),
			},
			// Metadata needs a REFRESH; allowing no action at all refuses it at plan time.
			{
				Config:      stack(name, 2, "", "", configs(map[string]string{"node-id": "xyz275"}, `  most_disruptive_allowed_action = "NONE"`, name+"-4")),
				ExpectError: regexp.MustCompile(`(?s)most disruptive allowed action.*` + n1 + `.*REFRESH`),
			},
			{
				ResourceName:      "virt_per_instance_config.n1",
				ImportState:       true,
				ImportStateId:     name + "/" + n1,
				ImportStateVerify: true,
			},
			{
				ResourceName:  "virt_per_instance_config.n1",
				ImportState:   true,
				ImportStateId: n1,
				ExpectError:   regexp.MustCompile(`(?s)Invalid import ID.*GROUP/NAME`),
			},
		},
	})
}

// TestAccPerInstanceConfig_overridesPolicyAndTemplate is the reference document's third example,
// then its removal examples that involve the policy: a config's disk and metadata win over the
// policy's disk and the template's metadata; removing the disk from the policy keeps it preserved
// by the config; removing it from the config falls back to the policy.
func TestAccPerInstanceConfig_overridesPolicyAndTemplate(t *testing.T) {
	name := testPrefix + "ovr"
	n1, n2 := name+"-1", name+"-2"
	vol := func(instance, dev string) string { return instance + "-" + dev + ".qcow2" }
	feb := testPrefix + "ext-ovr-logs-feb.qcow2"
	body := twoDataDisks + "\n    metadata = { logmonth = \"jan\" }"
	ids := domainIDs{}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, feb)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, feb) },
				Config:    stack(name, 2, body, "", ""),
				Check:     ids.record(t, name),
			},
			{
				Config: stack(name, 2, body, "", policyConfig("data", "logs")+
					pic("n1", n1, []string{"logs=" + feb}, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
				),
			},
			// Removal from the policy only: the config still preserves n1's logs disk.
			{
				Config: stack(name, 2, body, "", policyConfig("data")+
					pic("n1", n1, []string{"logs=" + feb}, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s] config=[logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("policy=[data=%s] config=[] meta={}", vol(n2, "data")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), feb),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
				),
			},
			// Removal from the config with the policy defining the disk: it falls back to the
			// policy, which preserves the template's logs disk again.
			{
				Config: stack(name, 2, body, "", policyConfig("data", "logs")+
					pic("n1", n1, nil, map[string]string{"logmonth": "feb"}, "")),
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{
						n1: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={logmonth=feb}", vol(n1, "data"), vol(n1, "logs")),
						n2: fmt.Sprintf("policy=[data=%s logs=%s] config=[] meta={}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkDomains(t, name, map[string]string{
						n1: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=feb}", vol(n1, "data"), vol(n1, "logs")),
						n2: fmt.Sprintf("disks=[data=%s logs=%s] meta={logmonth=jan}", vol(n2, "data"), vol(n2, "logs")),
					}),
					checkVolumeExists(t, feb),
				),
			},
		},
	})
}

// TestAccPerInstanceConfig_removal is the reference document's removal examples without a
// policy: of the config's disks, the one the template defines stays attached and becomes stateless,
// the other is detached; of its metadata, the key the template defines falls back to the
// template's value and the other is removed. All of it live. Then a config destroyed with
// remove_instance_state_on_destroy takes its state away at once.
func TestAccPerInstanceConfig_removal(t *testing.T) {
	name := testPrefix + "rm"
	n1 := name + "-1"
	blue := n1 + "-blue.qcow2"
	green := testPrefix + "ext-rm-green.qcow2"
	body := `
    disk {
      device_name = "blue"
      size_mib    = 8
    }
    metadata = { mode = "test" }`
	full := func(extra string) string {
		return pic("n1", n1, []string{"blue=" + blue, "green=" + green}, map[string]string{"mode": "dev", "id": "xyz273"}, extra)
	}
	stateful := map[string]string{n1: "disks=[blue=" + blue + " green=" + green + "] meta={id=xyz273 mode=dev}"}
	stateless := map[string]string{n1: "disks=[blue=" + blue + "] meta={mode=test}"}
	ids := domainIDs{}
	resource.ParallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             resource.ComposeTestCheckFunc(checkNothingLeft(t, name), checkVolumeExists(t, green)),
		Steps: []resource.TestStep{
			{
				PreConfig: func() { extVolume(t, green) },
				Config:    stack(name, 1, body, "", full("")),
				Check: resource.ComposeTestCheckFunc(
					ids.record(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[blue=" + blue + " green=" + green + "] meta={id=xyz273 mode=dev}"}),
					checkDomains(t, name, stateful),
				),
			},
			{
				Config: stack(name, 1, body, "", pic("n1", n1, nil, nil, "")),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.n1", plancheck.ResourceActionUpdate),
				}},
				Check: resource.ComposeTestCheckFunc(
					ids.same(t, name),
					checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
					checkDomains(t, name, stateless),
					checkVolumeExists(t, green),
				),
			},
			{
				Config: stack(name, 1, body, "", full("  remove_instance_state_on_destroy = true")),
				Check:  resource.ComposeTestCheckFunc(ids.same(t, name), checkDomains(t, name, stateful)),
			},
			{
				Config: stack(name, 1, body, "", ""),
				Check:  resource.ComposeTestCheckFunc(ids.same(t, name), checkDomains(t, name, stateless)),
			},
			// With nothing left to depend on, the data source is read while planning: this step
			// reads it after the destroy above.
			{
				Config: stack(name, 1, body, "", ""),
				Check:  checkManaged(map[string]string{n1: "policy=[] config=[] meta={}"}),
			},
		},
	})
}
