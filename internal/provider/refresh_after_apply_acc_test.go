package provider

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccCLI_refreshOnlyAfterApply: the plan shows what the apply does to each member (CREATE),
// and the state the apply saves says what is left (NONE), so that `terraform plan -refresh-only`
// right after the apply finds nothing changed outside of Terraform (issue 45), after a create and
// after a scale-out alike, and an output built from planned_action says NONE.
func TestAccCLI_refreshOnlyAfterApply(t *testing.T) {
	name := testPrefix + "rfo"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	t.Parallel()
	testAccPreCheck(t)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tf, cli, dir := terraformBinary(t), devOverrides(t, buildProvider(t, root)), t.TempDir()
	run := func(args ...string) (string, error) { return runTerraform(tf, cli, dir, nil, args...) }
	header := "terraform {\n  required_providers {\n    virt = { source = \"virtfleet/virt\" }\n  }\n}\n"
	output := "\noutput \"actions\" {\n  value = virt_stateful_group.test.instances[*].planned_action\n}\n"
	write := func(size int) {
		t.Helper()
		if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(header+groupConfig(name, size, "", "")+output), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Errorf("cleanup: %v", err)
		}
	})
	for _, step := range []struct {
		size    int
		planned string // what the plan shows of the new member
		member  string
	}{
		{1, "CREATE", name + "-1"},
		{2, "CREATE", name + "-2"},
	} {
		write(step.size)
		out, err := run("plan", "-no-color", "-out=tfplan")
		if err != nil {
			t.Fatalf("terraform plan (target_size %d): %v\n%s", step.size, err, out)
		}
		if !strings.Contains(out, `"`+step.planned+`"`) {
			t.Errorf("the plan of target_size %d does not show %s's planned action %s:\n%s", step.size, step.member, step.planned, out)
		}
		if out, err := run("apply", "-no-color", "tfplan"); err != nil {
			t.Fatalf("terraform apply (target_size %d): %v\n%s", step.size, err, out)
		}
		out, err = run("plan", "-refresh-only", "-detailed-exitcode", "-no-color")
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 2 {
			t.Errorf("terraform plan -refresh-only after the apply of target_size %d reports a change (exit 2):\n%s", step.size, out)
		} else if err != nil {
			t.Fatalf("terraform plan -refresh-only (target_size %d): %v\n%s", step.size, err, out)
		}
		if strings.Contains(out, "changed outside of Terraform") {
			t.Errorf("terraform plan -refresh-only after the apply of target_size %d reports objects changed outside of Terraform:\n%s", step.size, out)
		}
		got, err := run("output", "-json", "actions")
		if err != nil {
			t.Fatalf("terraform output: %v\n%s", err, got)
		}
		want := `["` + strings.Repeat(`NONE","`, step.size-1) + `NONE"]`
		if diff := cmp.Diff(want, strings.Join(strings.Fields(got), "")); diff != "" {
			t.Errorf("planned_action in the state after the apply of target_size %d (-want +got):\n%s", step.size, diff)
		}
	}
}
