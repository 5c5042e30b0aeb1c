package provider

import (
	"fmt"
	"os"
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
	accParallel(t)
	testAccPreCheck(t)
	secret := newWO(t)
	ls := loseState(t, name, groupConfig(name, 2, fmt.Sprintf(`
    cloud_init {
      user_data_wo         = %q
      user_data_wo_version = 2
    }`, secret.userData), ""))
	gen := ls.generate(fmt.Sprintf(`
list "virt_stateful_group" "lost" {
  provider         = virt
  include_resource = true
  config {
    name_prefix = %q
  }
}
`, name))
	if err := holdsNo("the generated configuration", gen, secret); err != nil {
		t.Error(err)
	}
	flat := strings.Join(strings.Fields(string(gen)), " ")
	for _, want := range []string{"user_data_wo = null", "user_data_wo_version = 2"} {
		if !strings.Contains(flat, want) {
			t.Errorf("the generated configuration lacks %q", want)
		}
	}

	changes, show := ls.plan()
	if len(changes) != 1 {
		t.Fatalf("the plan has %d resource changes, want the group's import: %s", len(changes), show)
	}
	rc := changes[0]
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
	ls.applyPlanChangesNothing(name)
	for _, m := range []string{name + "-1", name + "-2"} {
		ud, err := seedUserData(t, m)
		if err != nil || ud != secret.userData {
			t.Errorf("%s's seed holds user data %q (%v), want the configuration's", m, ud, err)
		}
	}

	// A new member has no seed to take the user data from: the plan says to set it.
	scaled := regexp.MustCompile(`target_size\s*=\s*2`).ReplaceAll(gen, []byte("target_size = 3"))
	ls.write(ls.rebuilt, "generated.tf", string(scaled))
	out, err := ls.run(ls.rebuilt, "plan", "-no-color")
	if err == nil || !strings.Contains(out, "Write-only value needed") || !strings.Contains(out, name+"-3") || !strings.Contains(out, "template.cloud_init.user_data_wo") {
		t.Errorf("a scale-out without user_data_wo planned, or not with the error naming the new member and user_data_wo: %v\n%s", err, out)
	}
	ls.write(ls.rebuilt, "generated.tf", string(gen))
}
