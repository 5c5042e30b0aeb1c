package provider

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
)

// TestAccCLI_upgradeToDrain: state of a group with a distribution_policy written before drain,
// rebalance and live (schema version 3, without them) plans no change with this provider: the
// upgrade gives them the defaults that the configuration plans.
func TestAccCLI_upgradeToDrain(t *testing.T) {
	name := testPrefix + "mvupg"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	c := newCLIRun(t, terraformBinary(t))
	c.write(groupConfig(name, 1, "", "  running = false\n  distribution_policy {\n    hosts = [\"default\"]\n  }\n"))
	t.Cleanup(func() {
		if out, err := c.run("destroy", "-auto-approve", "-no-color"); err != nil {
			t.Errorf("cleanup: terraform destroy: %v\n%s", err, out)
		}
		if err := checkNothingLeft(t, name)(nil); err != nil {
			t.Error(err)
		}
	})
	c.must("apply", "-auto-approve", "-no-color")
	c.emptyPlan("the apply")

	// The state as the release before drain wrote it: schema version 3, no drain, rebalance or
	// live in the block.
	path := filepath.Join(c.dir, "terraform.tfstate")
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var st map[string]any
	if err := json.Unmarshal(raw, &st); err != nil {
		t.Fatal(err)
	}
	rewritten := 0
	for _, r := range st["resources"].([]any) {
		res := r.(map[string]any)
		if res["type"] != "virt_stateful_group" {
			continue
		}
		for _, i := range res["instances"].([]any) {
			inst := i.(map[string]any)
			inst["schema_version"] = 3
			dp := inst["attributes"].(map[string]any)["distribution_policy"].(map[string]any)
			for _, k := range []string{"drain", "rebalance", "live"} {
				if _, has := dp[k]; !has {
					t.Fatalf("the state has no distribution_policy.%s to take out: %v", k, dp)
				}
				delete(dp, k)
			}
			rewritten++
		}
	}
	if rewritten != 1 {
		t.Fatalf("%d group instances in the state, want 1", rewritten)
	}
	out, err := json.MarshalIndent(st, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, out, 0o644); err != nil {
		t.Fatal(err)
	}
	c.emptyPlan("the provider's upgrade over state of schema version 3")
}
