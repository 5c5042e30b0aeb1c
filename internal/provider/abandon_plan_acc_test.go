package provider

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccCLI_abandonPlanReads reads the plan of an abandon as terraform prints it: the abandoned
// member's entry of instances is removed and the others are unchanged around it. (When instances
// was a list of nested attributes, which Terraform shows by position, the plan read
// `name = "x-2" -> "x-3"` and `- x-3`, as if x-3 were deleted.)
func TestAccCLI_abandonPlanReads(t *testing.T) {
	name := testPrefix + "abpl"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	run, dir := cliWorkdir(t)
	header := cliHeader
	write := func(text string) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(header+text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(groupConfig(name, 3, "", ""))
	t.Cleanup(func() {
		if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	if out, err := run("apply", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform apply: %v\n%s", err, out)
	}
	// Planned only: the abandoned domain would be the test's to remove.
	write(groupConfig(name, 2, "", `  abandon = ["`+name+`-2"]`+"\n"))
	out, err := run("plan", "-no-color")
	if err != nil {
		t.Fatalf("terraform plan: %v\n%s", err, out)
	}
	t.Logf("terraform plan:\n%s", out)
	removed := func(member string) *regexp.Regexp {
		return regexp.MustCompile(`(?m)^\s+- name\s+= "` + regexp.QuoteMeta(member) + `"`)
	}
	if !removed(name + "-2").MatchString(out) {
		t.Errorf("the plan does not show %s-2's entry removed", name)
	}
	if removed(name+"-3").MatchString(out) || strings.Contains(out, `"`+name+`-2" -> "`+name+`-3"`) {
		t.Errorf("the plan shows %s-3 removed or renamed", name)
	}
	if !strings.Contains(out, name+"-2: ABANDON: ") {
		t.Errorf("the plan does not say that %s-2 is abandoned", name)
	}
}
