package provider

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"testing"

	"github.com/hashicorp/go-version"
	"github.com/hashicorp/terraform-plugin-testing/tfversion"
)

// needsTerraform fails a test of a feature that the Terraform CLI in use does not have, naming
// the version it needs. It never skips: a run of the suite under an older binary must not pass
// without testing the feature. (terraform-plugin-testing reads the version of the binary it
// runs: TF_ACC_TERRAFORM_PATH, else terraform in PATH; OpenTofu reports its own version.)
type needsTerraform struct {
	min     string
	feature string
}

func (n needsTerraform) CheckTerraformVersion(_ context.Context, req tfversion.CheckTerraformVersionRequest, resp *tfversion.CheckTerraformVersionResponse) {
	resp.Error = n.check(req.TerraformVersion)
}

// check is nil when the CLI of version v has the feature, else the error that says what it needs.
func (n needsTerraform) check(v *version.Version) error {
	if !v.Core().LessThan(version.Must(version.NewVersion(n.min))) {
		return nil
	}
	return fmt.Errorf("%s needs Terraform %s or later, and the Terraform CLI this test runs (TF_ACC_TERRAFORM_PATH, else terraform in PATH) is %s: "+
		"run it with TF_ACC_TERRAFORM_PATH=/var/cache/terraform-provider-virt/terraform-v1.14.0/terraform", n.feature, n.min, v)
}

// require fails the test unless the terraform binary the tests drive (terraformBinary) has the
// feature, and returns that binary.
func (n needsTerraform) require(t *testing.T) string {
	t.Helper()
	tf := terraformBinary(t)
	if err := n.check(cliVersion(t, tf)); err != nil {
		t.Fatal(err)
	}
	return tf
}

// cliVersion is the version the terraform (or tofu) binary tf reports.
func cliVersion(t *testing.T, tf string) *version.Version {
	t.Helper()
	out, err := exec.Command(tf, "version", "-json").Output()
	var v struct {
		Version string `json:"terraform_version"`
	}
	if err == nil {
		err = json.Unmarshal(out, &v)
	}
	if err != nil {
		t.Fatalf("%s version -json: %v\n%s", tf, err, out)
	}
	return version.Must(version.NewVersion(v.Version))
}
