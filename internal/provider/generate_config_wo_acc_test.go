package provider

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccCLI_generateConfigWriteOnly drives terraform 1.14 as a user rebuilding a lost state of a
// group with write-only user data: `terraform query -generate-config-out` writes
// `user_data_wo = null # sensitive` beside the group's `user_data_wo_version = 2`, and that
// configuration plans as the import and nothing else (before, the plan failed: the version
// "must be specified" with its value); its apply changes no member, and the next plan is empty.
// The members' seeds still hold the user data. A scale-out in that configuration, whose new
// member has no seed to take the user data from, is refused at plan, naming user_data_wo.
func TestAccCLI_generateConfigWriteOnly(t *testing.T) {
	name := testPrefix + "genwo"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	testAccPreCheck(t)
	tf := requireQueryTerraform(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	cli := devOverrides(t, buildProvider(t, root))
	header := "terraform {\n  required_providers {\n    virt = { source = \"virtfleet/virt\" }\n  }\n}\n"
	run := func(dir string, args ...string) (string, error) {
		return runTerraform(tf, cli, dir, nil, args...)
	}
	write := func(dir, file, text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, file), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	secret := newWO(t)
	made, rebuilt, lost := t.TempDir(), t.TempDir(), t.TempDir()
	write(made, "main.tf", header+groupConfig(name, 2, fmt.Sprintf(`
    cloud_init {
      user_data_wo         = %q
      user_data_wo_version = 2
    }`, secret.userData), ""))
	t.Cleanup(func() {
		dir := rebuilt
		if _, err := os.Stat(filepath.Join(rebuilt, "terraform.tfstate")); err != nil {
			dir = made
			_ = os.Rename(filepath.Join(lost, "terraform.tfstate"), filepath.Join(made, "terraform.tfstate"))
		}
		if out, err := run(dir, "destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if out, err := run(made, "apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	before := hostView(t, name)
	if err := os.Rename(filepath.Join(made, "terraform.tfstate"), filepath.Join(lost, "terraform.tfstate")); err != nil {
		t.Fatal(err)
	}

	write(rebuilt, "main.tf", header)
	write(rebuilt, "lost.tfquery.hcl", fmt.Sprintf(`
list "virt_stateful_group" "lost" {
  provider         = virt
  include_resource = true
  config {
    name_prefix = %q
  }
}
`, name))
	out, err := run(rebuilt, "query", "-generate-config-out=generated.tf", "-no-color")
	if err != nil {
		t.Fatalf("terraform query -generate-config-out: %v\n%s", err, out)
	}
	gen, err := os.ReadFile(filepath.Join(rebuilt, "generated.tf"))
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("generated:\n%s", gen)
	if err := holdsNo("the generated configuration", gen, secret); err != nil {
		t.Error(err)
	}
	flat := strings.Join(strings.Fields(string(gen)), " ")
	for _, want := range []string{"user_data_wo = null", "user_data_wo_version = 2"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the generated configuration lacks %q", want)
		}
	}

	out, err = run(rebuilt, "plan", "-out=tfplan", "-no-color")
	if err != nil {
		t.Fatalf("terraform plan with the generated configuration: %v\n%s", err, out)
	}
	t.Logf("terraform plan:\n%s", out)
	show, err := run(rebuilt, "show", "-json", "tfplan")
	if err != nil {
		t.Fatalf("terraform show -json: %v\n%s", err, show)
	}
	var plan struct {
		ResourceChanges []struct {
			Address string `json:"address"`
			Change  struct {
				Actions   []string                   `json:"actions"`
				Importing json.RawMessage            `json:"importing"`
				Before    map[string]json.RawMessage `json:"before"`
				After     map[string]json.RawMessage `json:"after"`
			} `json:"change"`
		} `json:"resource_changes"`
	}
	if err := json.Unmarshal([]byte(show), &plan); err != nil {
		t.Fatalf("read the plan: %v\n%s", err, show)
	}
	if len(plan.ResourceChanges) != 1 {
		t.Fatalf("the plan has %d resource changes, want the group's import: %s", len(plan.ResourceChanges), show)
	}
	rc := plan.ResourceChanges[0]
	if len(rc.Change.Importing) == 0 {
		t.Errorf("%s is not imported", rc.Address)
	}
	// The import takes the group over from the state that made it: an update in place whose
	// only difference is the members' planned action saying so (TestAccCLI_queryRebuildsALostState).
	for k, v := range rc.Change.After {
		if k != "instances" && string(v) != string(rc.Change.Before[k]) {
			t.Errorf("%s: the import changes %s: %s -> %s", rc.Address, k, rc.Change.Before[k], v)
		}
	}
	if out, err := run(rebuilt, "apply", "-no-color", "tfplan"); err != nil {
		t.Fatalf("terraform apply of the import: %v\n%s", err, out)
	}
	if after := hostView(t, name); after != before {
		t.Errorf("the import apply changed the host:\nbefore: %s\nafter:  %s", before, after)
	}
	if out, err := run(rebuilt, "plan", "-detailed-exitcode", "-no-color"); err != nil {
		t.Errorf("the plan after the import apply is not empty: %v\n%s", err, out)
	}
	for _, m := range []string{name + "-1", name + "-2"} {
		ud, err := seedUserData(t, m)
		if err != nil || ud != secret.userData {
			t.Errorf("%s's seed holds user data %q (%v), want the configuration's", m, ud, err)
		}
	}

	// A new member has no seed to take the user data from: the plan says to set it.
	scaled := regexp.MustCompile(`target_size\s*=\s*2`).ReplaceAll(gen, []byte("target_size = 3"))
	write(rebuilt, "generated.tf", string(scaled))
	out, err = run(rebuilt, "plan", "-no-color")
	if err == nil || !strings.Contains(out, "Write-only value needed") || !strings.Contains(out, name+"-3") || !strings.Contains(out, "template.cloud_init.user_data_wo") {
		t.Errorf("a scale-out without user_data_wo planned, or not with the error naming the new member and user_data_wo: %v\n%s", err, out)
	}
	write(rebuilt, "generated.tf", string(gen))
}
