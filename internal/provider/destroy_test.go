package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"testing"
	"time"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/plancheck"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// deleteVolume removes a volume of the test pool behind Terraform's back.
func deleteVolume(t *testing.T, name string) {
	t.Helper()
	if err := testLibvirt(t).DeleteVolume(context.Background(), testPool(), name); err != nil {
		t.Fatalf("delete volume %s: %v", name, err)
	}
}

// failedConfigApply is the apply of a per-instance config whose source volume goes between the
// plan (which checked it) and the apply: the apply fails on the missing source, at the apply's
// own plan of the config (made once the group exists) or in the config's apply.
func failedConfigApply(t *testing.T, cfg, source string) resource.TestStep {
	return resource.TestStep{
		Config: cfg,
		ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
			meanwhile(func() { deleteVolume(t, source) }),
		}},
		ExpectError: regexp.MustCompile(`Cannot apply the per-instance config|Invalid disk "logs" source`),
	}
}

// destroyStep is a plain `terraform destroy` of cfg: terraform-plugin-testing plans it with
// `terraform plan -destroy`, which, like `terraform destroy`, first plans the configuration as a
// normal plan to refresh the state (only -refresh=false skips that).
func destroyStep(t *testing.T, cfg, group string) resource.TestStep {
	return resource.TestStep{Config: cfg, Destroy: true, Check: checkNothingLeft(t, group)}
}

// TestAccPerInstanceConfig_destroyAfterAFailedFirstApply: the first apply of a group and a config
// whose source volume is gone fails after the group was made; a plain destroy with the same
// configuration removes the members and the group record.
func TestAccPerInstanceConfig_destroyAfterAFailedFirstApply(t *testing.T) {
	name := testPrefix + "dfirst"
	src := testPrefix + "ext-dfirst.qcow2"
	cfg := groupConfig(name, 1, "", "") + pic("c", name+"-1", []string{"logs=" + src}, nil, "")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t); extVolume(t, src) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			failedConfigApply(t, cfg, src),
			destroyStep(t, cfg, name),
		},
	})
}

// TestAccPerInstanceConfig_destroyAfterAFailedConfig: the group applied, then a config whose
// apply fails on its missing source; a plain destroy with the same configuration still works.
func TestAccPerInstanceConfig_destroyAfterAFailedConfig(t *testing.T) {
	name := testPrefix + "dlater"
	src := testPrefix + "ext-dlater.qcow2"
	group := groupConfig(name, 1, "", "")
	cfg := group + pic("c", name+"-1", []string{"logs=" + src}, nil, "")
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t); extVolume(t, src) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: group},
			failedConfigApply(t, cfg, src),
			destroyStep(t, cfg, name),
		},
	})
}

// TestAccPerInstanceConfig_destroyWithItsSourceGone: a config applied, then its source volume
// deleted behind Terraform's back: a plain destroy still works.
func TestAccPerInstanceConfig_destroyWithItsSourceGone(t *testing.T) {
	name := testPrefix + "dgone"
	src := testPrefix + "ext-dgone.qcow2"
	cfg := groupConfig(name, 1, "", "") + pic("c", name+"-1", []string{"logs=" + src}, nil, "")
	step := destroyStep(t, cfg, name)
	step.PreConfig = func() { deleteVolume(t, src) }
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t); extVolume(t, src) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps:                    []resource.TestStep{{Config: cfg}, step},
	})
}

// TestAccCLI_destroyAfterAFailedFirstApply is the same through the terraform binary, with the
// provider built from this tree and started by terraform as its plugin, as users run it: a saved
// plan of a group and a config, the config's source volume deleted before the apply, the apply
// failing after the group was made, then `terraform destroy` with the same configuration.
func TestAccCLI_destroyAfterAFailedFirstApply(t *testing.T) {
	name := testPrefix + "dcli"
	src := testPrefix + "ext-dcli.qcow2"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	extVolume(t, src)
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tf, cli, dir := terraformBinary(t), devOverrides(t, buildProvider(t, root)), t.TempDir()
	main := cliHeader +
		groupConfig(name, 1, "", "") + pic("c", name+"-1", []string{"logs=" + src}, nil, "")
	if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(main), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		return runTerraform(tf, cli, dir, nil, args...)
	}
	t.Cleanup(func() {
		// Whatever the test found, the group does not outlive it.
		if out, err := run("destroy", "-refresh=false", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy -refresh=false: %v\n%s", err, out)
		}
	})
	if out, err := run("plan", "-out=tfplan", "-no-color"); err != nil {
		t.Fatalf("terraform plan: %v\n%s", err, out)
	}
	deleteVolume(t, src)
	out, err := run("apply", "-no-color", "tfplan")
	if err == nil {
		t.Fatalf("terraform apply succeeded with the config's source volume gone:\n%s", out)
	}
	if left := leftovers(t, name+"-"); len(left) == 0 {
		t.Fatalf("the failed apply made no member, so the destroy below would prove nothing:\n%s", out)
	}
	if out, err := run("destroy", "-auto-approve", "-no-color"); err != nil {
		t.Fatalf("terraform destroy after the failed apply: %v\n%s", err, out)
	}
	if err := checkNothingLeft(t, name)(nil); err != nil {
		t.Fatalf("after terraform destroy: %v", err)
	}
}

// forgetConfig removes a config from the group record behind Terraform's back, as another apply
// holding the group would.
func forgetConfig(t *testing.T, group, name string) {
	t.Helper()
	r := otherApply(t, testPrefix+"other-apply", time.Now(), os.Getpid())
	held, release, err := r.Hold(context.Background(), group, nil)
	if err != nil {
		t.Fatalf("hold %s: %v", group, err)
	}
	_, err = r.Change(held, group, "", func(s *engine.GroupState, _ bool) error {
		delete(s.Configs, name)
		return nil
	})
	release(err == nil)
	if err != nil {
		t.Fatalf("remove config %s from the record of %s: %v", name, group, err)
	}
}

// TestAccPerInstanceConfig_destroyedAsWhatItIs: a config the state has but the group record does
// not (it never applied, or is gone from the record) is destroyed as what it is: nothing is
// undone, and its remove_instance_on_destroy does not delete a member it never configured.
func TestAccPerInstanceConfig_destroyedAsWhatItIs(t *testing.T) {
	name := testPrefix + "dwhat"
	member := name + "-1"
	group := groupConfig(name, 1, "", "")
	ids := domainIDs{}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		// A refresh would find the config gone from the record and drop it from the state; with
		// -refresh=false Terraform destroys it as the state has it.
		AdditionalCLIOptions: &resource.AdditionalCLIOptions{Plan: resource.PlanOptions{NoRefresh: true}},
		Steps: []resource.TestStep{
			{Config: group + pic("c", member, nil, nil, "  remove_instance_on_destroy = true\n"), Check: ids.record(t, name)},
			{
				PreConfig: func() { forgetConfig(t, name, member) },
				Config:    group,
				ConfigPlanChecks: resource.ConfigPlanChecks{PreApply: []plancheck.PlanCheck{
					plancheck.ExpectResourceAction("virt_per_instance_config.c", plancheck.ResourceActionDestroy),
				}},
				Check: ids.same(t, name),
			},
		},
	})
}
