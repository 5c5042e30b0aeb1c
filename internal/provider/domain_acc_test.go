package provider

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
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

// requireTerraform114 is the terraform binary these tests drive: Terraform 1.14 or later, which list resources and terraform query need
// it; an older one fails the test (needsTerraform), never skips it.
func requireTerraform114(t *testing.T) string {
	t.Helper()
	return needsTerraform{min: "1.14.0", feature: "List resources and terraform query (virt_domain)"}.require(t)
}

// handDomain is a domain made by hand, as a user would with virsh: a raw volume in the test pool
// holding 1 MiB of a pattern, a definition of its own with metadata of another tool, started or
// not. Cleanup undefines it and deletes the volume, whatever the test left.
type handDomain struct {
	name, volume, uuid, sum string
}

func makeHandDomain(t *testing.T, name string, start bool) *handDomain {
	t.Helper()
	volume := name + ".img"
	l, path := handMadeVolume(t, name, volume, 0x5a)
	dom, err := l.DomainDefineXML(fmt.Sprintf(`<domain type="qemu">
  <name>%s</name>
  <description>made by hand</description>
  <memory unit="MiB">64</memory>
  <vcpu>1</vcpu>
  <metadata><app:owner xmlns:app="https://example.com/app">ops</app:owner></metadata>
  <os><type arch="x86_64">hvm</type></os>
  <devices>
    <disk type="file" device="disk">
      <driver name="qemu" type="raw"/>
      <source file="%s"/>
      <target dev="vda" bus="virtio"/>
    </disk>
  </devices>
</domain>`, name, path))
	if err != nil {
		t.Fatalf("define domain %s: %v", name, err)
	}
	if start {
		if err := l.DomainCreate(dom); err != nil {
			t.Fatalf("start domain %s: %v", name, err)
		}
	}
	sum, _, err := volumeBytes(t, volume)
	if err != nil {
		t.Fatal(err)
	}
	return &handDomain{name: name, volume: volume, uuid: uuidString(dom.UUID), sum: sum}
}

// check compares the domain with what it was made as: still defined, same UUID, same disk
// bytes, the other tool's metadata kept, and carrying the provider's adoption record or not.
func (d *handDomain) check(t *testing.T, adopted bool) error {
	ctx := context.Background()
	b := testLibvirt(t)
	doms, err := b.ListDomains(ctx, d.name)
	if err != nil {
		return err
	}
	var found bool
	for _, dom := range doms {
		if dom.Name != d.name {
			continue
		}
		found = true
		if dom.UUID != d.uuid {
			return fmt.Errorf("domain %s has UUID %s, was %s", d.name, dom.UUID, d.uuid)
		}
		if dom.Record != nil {
			return fmt.Errorf("domain %s carries a member record %+v", d.name, dom.Record)
		}
	}
	if !found {
		return fmt.Errorf("domain %s is gone: virt_domain never deletes a domain", d.name)
	}
	sum, _, err := volumeBytes(t, d.volume)
	if err != nil {
		return err
	}
	if sum != d.sum {
		return fmt.Errorf("volume %s has digest %s, had %s", d.volume, sum, d.sum)
	}
	if out := virshOut(t, "metadata", d.name, "https://example.com/app"); !strings.Contains(out, "ops") {
		return fmt.Errorf("domain %s lost the other tool's metadata: %q", d.name, out)
	}
	rec, err := b.Adoption(ctx, d.name)
	if err != nil {
		return err
	}
	if (rec != nil) != adopted {
		return fmt.Errorf("domain %s: adoption record %+v, want one: %v", d.name, rec, adopted)
	}
	return nil
}

func checkHandDomains(t *testing.T, adopted bool, doms ...*handDomain) resource.TestCheckFunc {
	return func(*terraform.State) error {
		var errs []error
		for _, d := range doms {
			errs = append(errs, d.check(t, adopted))
		}
		return errors.Join(errs...)
	}
}

// TestAccDomain_importAdoptKeepsBytes: three domains made by hand (one running) are imported by
// string ID and by identity (with and without host); the plan is an update in place of each,
// whose only change is the adoption, the apply writes the ownership record and keeps UUIDs,
// disk bytes (sha256 of the volumes) and the other tool's metadata, and the next plan is empty.
// A live description change follows. Destroy releases them: they stay, bytes intact, without
// the record.
func TestAccDomain_importAdoptKeepsBytes(t *testing.T) {
	base := testPrefix + "dadopt"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	requireTerraform114(t)
	testAccPreCheck(t)
	one, two, three := makeHandDomain(t, base+"-1", true), makeHandDomain(t, base+"-2", false), makeHandDomain(t, base+"-3", false)
	imports := fmt.Sprintf(`
import {
  to = virt_domain.one
  id = %[1]q
}
import {
  to       = virt_domain.two
  identity = { name = %[2]q }
}
import {
  to       = virt_domain.three
  identity = { host = "default", name = %[3]q }
}
`, one.name, two.name, three.name)
	resources := func(desc string) string {
		return fmt.Sprintf(`
resource "virt_domain" "one" {
  name        = %[1]q
  description = %[4]q
}
resource "virt_domain" "two" {
  name = %[2]q
}
resource "virt_domain" "three" {
  name    = %[3]q
  running = false
}
`, one.name, two.name, three.name, desc)
	}
	adoption := func(addr, uuid string, running bool) []plancheck.PlanCheck {
		return []plancheck.PlanCheck{
			plancheck.ExpectResourceAction(addr, plancheck.ResourceActionUpdate),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("adopted"), knownvalue.Bool(true)),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("uuid"), knownvalue.StringExact(uuid)),
			plancheck.ExpectKnownValue(addr, tfjsonpath.New("running"), knownvalue.Bool(running)),
		}
	}
	var pre []plancheck.PlanCheck
	pre = append(pre, adoption("virt_domain.one", one.uuid, true)...)
	pre = append(pre, adoption("virt_domain.two", two.uuid, false)...)
	pre = append(pre, adoption("virt_domain.three", three.uuid, false)...)
	resource.Test(t, resource.TestCase{
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkHandDomains(t, false, one, two, three),
		Steps: []resource.TestStep{
			{
				Config:           imports + resources("made by hand"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: pre},
				Check:            checkHandDomains(t, true, one, two, three),
				ConfigStateChecks: []statecheck.StateCheck{
					statecheck.ExpectIdentity("virt_domain.two", map[string]knownvalue.Check{"host": knownvalue.StringExact("default"), "name": knownvalue.StringExact(two.name)}),
					statecheck.ExpectKnownValue("virt_domain.one", tfjsonpath.New("disks"), knownvalue.ListExact([]knownvalue.Check{
						knownvalue.ObjectExact(map[string]knownvalue.Check{"device": knownvalue.StringExact("vda"), "source": knownvalue.StringRegexp(regexp.MustCompile(regexp.QuoteMeta(one.volume) + "$"))}),
					})),
				},
			},
			{
				Config:           imports + resources("made by hand"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
			},
			{
				Config: imports + resources("adopted"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_domain.one", plancheck.ResourceActionUpdate),
					plancheck.ExpectResourceAction("virt_domain.two", plancheck.ResourceActionNoop),
				}},
				Check: func(*terraform.State) error {
					if out := virshOut(t, "desc", one.name); !strings.Contains(out, "adopted") {
						return fmt.Errorf("description of %s: %q", one.name, out)
					}
					return checkHandDomains(t, true, one, two, three)(nil)
				},
			},
			{
				// A group under the same names, adopting what it finds (adopt_existing), does not
				// take a domain a virt_domain resource adopted: its plan fails, naming it, and
				// nothing changes (the next step's checks).
				Config:      imports + resources("adopted") + groupConfig(base, 1, "", "  adopt_existing = true\n"),
				PlanOnly:    true,
				ExpectError: regexp.MustCompile(`(?s)` + regexp.QuoteMeta(one.name) + `\s+\(adopted\s+by\s+a\s+virt_domain\s+resource\)`),
			},
			{
				Config:           imports + resources("adopted"),
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{plancheck.ExpectEmptyPlan()}},
				Check:            checkHandDomains(t, true, one, two, three),
			},
		},
	})
}

// TestAccCLI_domainQueryGenerateConfig is the check end to end with the terraform CLI
// (1.14): three VMs made by hand are found by terraform query, -generate-config-out writes
// their import blocks and configuration, plan shows only the adoption (update in place, no
// replacement), the apply keeps UUIDs and disk bytes, and the next plan is empty; destroy
// releases them.
func TestAccCLI_domainQueryGenerateConfig(t *testing.T) {
	base := testPrefix + "dquery"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	tf := requireTerraform114(t)
	testAccPreCheck(t)
	doms := []*handDomain{makeHandDomain(t, base+"-1", true), makeHandDomain(t, base+"-2", false), makeHandDomain(t, base+"-3", false)}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cli, dir := devOverrides(t, buildProvider(t, root)), t.TempDir()
	files := map[string]string{
		"main.tf": "terraform {\n  required_providers {\n    virt = { source = \"virtfleet/virt\" }\n  }\n}\n\nprovider \"virt\" {}\n",
		"domains.tfquery.hcl": fmt.Sprintf(`list "virt_domain" "found" {
  provider         = virt
  include_resource = true
  config {
    name_prefix = %q
    managed     = false
  }
}
`, base+"-"),
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) (string, error) {
		return runTerraform(tf, cli, dir, nil, args...)
	}
	t.Cleanup(func() {
		if _, err := os.Stat(filepath.Join(dir, "terraform.tfstate")); err != nil {
			return
		}
		if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
	})

	out, err := run("query", "-no-color", "-generate-config-out=generated.tf")
	if err != nil {
		t.Fatalf("terraform query: %v\n%s", err, out)
	}
	gen, err := os.ReadFile(filepath.Join(dir, "generated.tf"))
	if err != nil {
		t.Fatalf("no generated configuration: %v\n%s", err, out)
	}
	for _, d := range doms {
		if !strings.Contains(out, d.name) || !strings.Contains(string(gen), fmt.Sprintf("%q", d.name)) {
			t.Fatalf("query did not find %s:\n%s\ngenerated:\n%s", d.name, out, gen)
		}
	}
	t.Logf("generated configuration:\n%s", gen)
	if n := strings.Count(string(gen), "import {"); n != len(doms) {
		t.Fatalf("generated configuration has %d import blocks, want %d:\n%s", n, len(doms), gen)
	}

	if out, err := run("plan", "-no-color", "-out=tfplan"); err != nil {
		t.Fatalf("terraform plan: %v\n%s", err, out)
	}
	shown, err := run("show", "-json", "tfplan")
	if err != nil {
		t.Fatalf("terraform show -json: %v\n%s", err, shown)
	}
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string          `json:"actions"`
				Before    map[string]any    `json:"before"`
				After     map[string]any    `json:"after"`
				Importing map[string]any    `json:"importing"`
				Replace   []json.RawMessage `json:"replace_paths"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(shown), &plan); err != nil {
		t.Fatalf("plan JSON: %v", err)
	}
	if len(plan.ResourceChanges) != len(doms) {
		t.Fatalf("plan has %d resource changes, want %d:\n%s", len(plan.ResourceChanges), len(doms), shown)
	}
	for _, rc := range plan.ResourceChanges {
		c := rc.Change
		if len(c.Actions) != 1 || c.Actions[0] != "update" || c.Importing == nil || len(c.Replace) != 0 {
			t.Errorf("%s: actions %v, importing %v, replace %d: want an imported update in place", rc.Address, c.Actions, c.Importing, len(c.Replace))
		}
		for k, before := range c.Before {
			if after := c.After[k]; k != "adopted" && fmt.Sprint(before) != fmt.Sprint(after) {
				t.Errorf("%s: the plan changes %s from %v to %v; the adoption is its only change", rc.Address, k, before, after)
			}
		}
		if c.Before["adopted"] != false || c.After["adopted"] != true {
			t.Errorf("%s: adopted %v -> %v, want false -> true", rc.Address, c.Before["adopted"], c.After["adopted"])
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	if out, err := run("apply", "-no-color", "tfplan"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	if err := checkHandDomains(t, true, doms...)(nil); err != nil {
		t.Fatalf("after apply: %v", err)
	}
	if out, err := run("plan", "-no-color", "-detailed-exitcode"); err != nil {
		t.Fatalf("the plan after the apply is not empty (%v):\n%s", err, out)
	}
	if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform destroy: %v\n%s", err, out)
	}
	if err := checkHandDomains(t, false, doms...)(nil); err != nil {
		t.Fatalf("after destroy (a release): %v", err)
	}
}
