package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccCLI_generateConfig runs `terraform plan -generate-config-out` through the terraform
// binary, as users do, for an imported group and an imported per-instance config that adopts a
// domain no provider created, and checks what Terraform writes.
func TestAccCLI_generateConfig(t *testing.T) {
	name := testPrefix + "gen"
	legacyName := testPrefix + "gen-legacy"
	volume := testPrefix + "ext-gen-legacy.img"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	legacy := createLegacyDomain(t, legacyName, volume)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tf, cli := terraformBinary(t), devOverrides(t, buildProvider(t, root))
	header := cliHeader
	run := func(dir string, args ...string) (string, error) {
		return runTerraform(tf, cli, dir, nil, args...)
	}
	write := func(dir, file, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	made := t.TempDir()
	write(made, "main.tf", header+groupConfig(name, 1, diskBlocks(8, "data"), ""))
	t.Cleanup(func() {
		if out, err := run(made, "destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
	})
	if out, err := run(made, "apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	imp := t.TempDir()
	write(imp, "main.tf", header+`
import {
  to = virt_stateful_group.g
  id = "`+name+`"
}

import {
  to = virt_per_instance_config.legacy
  id = "`+name+"/"+legacyName+`"
}
`)
	out, err := run(imp, "plan", "-generate-config-out=generated.tf", "-no-color")
	if err != nil {
		t.Fatalf("terraform plan -generate-config-out: %v\n%s", err, out)
	}
	gen, err := os.ReadFile(filepath.Join(imp, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated:\n%s", gen)
	text := string(gen)
	// The adopted domain's disk is a file of the group's pool: written as the volume's name. It
	// only ever gets live changes, and its config says so. The group is a literal: Terraform
	// writes values, never references (the adopting guide says to replace it).
	for _, want := range []string{
		`resource "virt_stateful_group" "g" {`,
		`resource "virt_per_instance_config" "legacy" {`,
		`source      = "` + volume + `"`,
		`most_disruptive_allowed_action   = "REFRESH"`,
		`minimal_action                   = "NONE"`,
		`group                            = "` + name + `"`,
	} {
		if !strings.Contains(text, want) {
			t.Errorf("the generated configuration lacks %q", want)
		}
	}
	if strings.Contains(text, legacy.path) {
		t.Errorf("the generated configuration names the disk by its path %s", legacy.path)
	}
	// What is left as null are optional arguments with no default that the imported objects do
	// not set, which Terraform writes as `= null` whatever the provider does (internal/genconfig
	// writes every optional argument, and an empty string as null); nothing else is null.
	var nulls []string
	for _, line := range strings.Split(text, "\n") {
		if k, _, ok := strings.Cut(strings.TrimSpace(line), " = null"); ok || strings.HasSuffix(line, "= null") {
			nulls = append(nulls, strings.Fields(k)[0])
		}
	}
	wantNulls := []string{"console_log_dir", "description", "labels", "metadata", "preserve", "metadata", "delete_rule", "mode", "firmware", "machine", "secure_boot"}
	slices.Sort(wantNulls)
	slices.Sort(nulls)
	if diff := cmp.Diff(wantNulls, nulls); diff != "" {
		t.Errorf("the arguments written as null (-want +got):\n%s", diff)
	}
	// Planned again with the generated configuration, the config is imported as it is: no change.
	if out, err := run(imp, "plan", "-out=tfplan", "-no-color"); err != nil {
		t.Fatalf("terraform plan with the generated configuration: %v\n%s", err, out)
	}
	show, err := run(imp, "show", "-json", "tfplan")
	if err != nil {
		t.Fatalf("terraform show -json: %v\n%s", err, show)
	}
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string        `json:"actions"`
				Importing json.RawMessage `json:"importing"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(show), &plan); err != nil {
		t.Fatalf("read the plan: %v\n%s", err, show)
	}
	found := false
	for _, rc := range plan.ResourceChanges {
		if rc.Address == "virt_per_instance_config.legacy" {
			found = true
			if !slices.Equal(rc.Change.Actions, []string{"no-op"}) || len(rc.Change.Importing) == 0 {
				t.Errorf("virt_per_instance_config.legacy is planned %v (importing %s), want an import and no change", rc.Change.Actions, rc.Change.Importing)
			}
		}
	}
	if !found {
		t.Errorf("the plan has no virt_per_instance_config.legacy:\n%s", show)
	}
	if err := legacy.check(t, false)(nil); err != nil {
		t.Errorf("the plans changed the domain: %v", err)
	}
}
