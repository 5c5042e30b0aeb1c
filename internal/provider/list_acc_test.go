package provider

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/terraform-plugin-testing/helper/resource"
	"github.com/hashicorp/terraform-plugin-testing/knownvalue"
	"github.com/hashicorp/terraform-plugin-testing/querycheck"
	"github.com/hashicorp/terraform-plugin-testing/querycheck/queryfilter"
	"github.com/hashicorp/terraform-plugin-testing/tfjsonpath"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// requireQueryTerraform is the terraform binary these tests drive: Terraform 1.14 or later, which list resources and terraform query need
// it; an older one fails the test (needsTerraform), never skips it.
func requireQueryTerraform(t *testing.T) string {
	t.Helper()
	return needsTerraform{min: "1.14.0", feature: "List resources and terraform query"}.require(t)
}

// listedGroupConfig is a group of two members with a template disk "data", a policy that
// preserves it (deleted with its member for good, so that the destroy leaves nothing), and a
// config with metadata for member 1.
func listedGroupConfig(name string) string {
	return groupConfig(name, 2, diskBlocks(8, "data"), "") + `
resource "virt_stateful_policy" "test" {
  group = virt_stateful_group.test.name
  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
` + pic("c", name+"-1", nil, map[string]string{"node-id": "one"}, "")
}

// TestAccStatefulGroupList_query runs `terraform query` through terraform-plugin-testing over a
// group made by an earlier step: each list finds exactly the group's objects, with their
// identities, and the objects carry what the configuration set.
func TestAccStatefulGroupList_query(t *testing.T) {
	name := testPrefix + "listq"
	if os.Getenv(resource.EnvTfAcc) != "" {
		requireQueryTerraform(t)
	}
	parallelTest(t, resource.TestCase{
		PreCheck:                 func() { testAccPreCheck(t) },
		ProtoV6ProviderFactories: testAccProviders,
		CheckDestroy:             checkNothingLeft(t, name),
		Steps: []resource.TestStep{
			{Config: listedGroupConfig(name)},
			{
				Query: true,
				Config: fmt.Sprintf(`
provider "virt" {}

list "virt_stateful_group" "test" {
  provider         = virt
  include_resource = true
  config {
    name_prefix = %[1]q
  }
}

list "virt_stateful_policy" "test" {
  provider         = virt
  include_resource = true
  config {
    group = %[1]q
  }
}

list "virt_per_instance_config" "test" {
  provider         = virt
  include_resource = true
  config {
    group = %[1]q
  }
}
`, name),
				QueryResultChecks: []querycheck.QueryResultCheck{
					querycheck.ExpectLength("virt_stateful_group.test", 1),
					querycheck.ExpectIdentity("virt_stateful_group.test", map[string]knownvalue.Check{"name": knownvalue.StringExact(name)}),
					querycheck.ExpectResourceKnownValues("virt_stateful_group.test",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"name": knownvalue.StringExact(name)}),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("target_size"), KnownValue: knownvalue.Int64Exact(2)},
							{Path: tfjsonpath.New("pool"), KnownValue: knownvalue.StringExact(testPool())},
							{Path: tfjsonpath.New("template").AtMapKey("disk"), KnownValue: knownvalue.SetExact([]knownvalue.Check{
								knownvalue.ObjectExact(map[string]knownvalue.Check{"device_name": knownvalue.StringExact("data"), "size_mib": knownvalue.Int64Exact(8)}),
							})},
						}),
					querycheck.ExpectLength("virt_stateful_policy.test", 1),
					querycheck.ExpectIdentity("virt_stateful_policy.test", map[string]knownvalue.Check{"group": knownvalue.StringExact(name)}),
					querycheck.ExpectResourceKnownValues("virt_stateful_policy.test",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"group": knownvalue.StringExact(name)}),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("disk"), KnownValue: knownvalue.SetExact([]knownvalue.Check{
								knownvalue.ObjectExact(map[string]knownvalue.Check{"device_name": knownvalue.StringExact("data"), "delete_rule": knownvalue.StringExact("ON_PERMANENT_INSTANCE_DELETION")}),
							})},
						}),
					querycheck.ExpectLength("virt_per_instance_config.test", 1),
					querycheck.ExpectIdentity("virt_per_instance_config.test", map[string]knownvalue.Check{
						"group": knownvalue.StringExact(name), "name": knownvalue.StringExact(name + "-1"),
					}),
					querycheck.ExpectResourceKnownValues("virt_per_instance_config.test",
						queryfilter.ByResourceIdentity(map[string]knownvalue.Check{"group": knownvalue.StringExact(name), "name": knownvalue.StringExact(name + "-1")}),
						[]querycheck.KnownValueCheck{
							{Path: tfjsonpath.New("preserved_state").AtMapKey("metadata"), KnownValue: knownvalue.MapExact(map[string]knownvalue.Check{"node-id": knownvalue.StringExact("one")})},
							{Path: tfjsonpath.New("status"), KnownValue: knownvalue.StringExact("EFFECTIVE")},
						}),
				},
			},
		},
	})
}

// TestAccCLI_queryRebuildsALostState drives the terraform binary as users do: a group with a
// policy and a config is made from one state, that state is deleted, and `terraform query
// -generate-config-out` in a new directory writes the import blocks and configuration that bring
// all three back: the plan is the three imports (the group's with its takeover by the new state,
// an update in place of nothing but its owner), the apply changes nothing else on the host (the
// group's configuration in its record, the members' UUIDs and running QEMU processes), and the
// next plan is empty.
func TestAccCLI_queryRebuildsALostState(t *testing.T) {
	name := testPrefix + "lost"
	if os.Getenv(resource.EnvTfAcc) == "" {
		t.Skipf("acceptance test: set %s", resource.EnvTfAcc)
	}
	accParallel(t)
	testAccPreCheck(t)
	ls := loseState(t, name, listedGroupConfig(name))
	gen := ls.generate(fmt.Sprintf(`
list "virt_stateful_group" "lost" {
  provider         = virt
  include_resource = true
  config {
    name_prefix = %[1]q
  }
}

list "virt_stateful_policy" "lost" {
  provider         = virt
  include_resource = true
  config {
    group = %[1]q
  }
}

list "virt_per_instance_config" "lost" {
  provider         = virt
  include_resource = true
  config {
    group = %[1]q
  }
}
`, name))
	for _, want := range []string{
		`resource "virt_stateful_group" `, `resource "virt_stateful_policy" `, `resource "virt_per_instance_config" `,
		`name = "` + name + `"`, `node-id = "one"`, `delete_rule = "ON_PERMANENT_INSTANCE_DELETION"`,
	} {
		if !strings.Contains(strings.Join(strings.Fields(string(gen)), " "), strings.Join(strings.Fields(want), " ")) {
			t.Errorf("the generated configuration lacks %q", want)
		}
	}
	if n := strings.Count(string(gen), "import {"); n != 3 {
		t.Errorf("the generated configuration has %d import blocks, want 3", n)
	}

	changes, show := ls.plan()
	// Every object is imported. The policy and the config are imported as they are; the group
	// too, but an import takes a group over from the state that made it (one owner, one
	// writer), and its apply records the new owner: an update in place whose only difference
	// is the members' planned action saying so, not a change of any member.
	var planned []string
	for _, rc := range changes {
		planned = append(planned, rc.Type+" "+strings.Join(rc.Change.Actions, ","))
		if len(rc.Change.Importing) == 0 {
			t.Errorf("%s is not imported: %s", rc.Address, show)
		}
		var changed []string
		for k, v := range rc.Change.After {
			if !bytes.Equal(v, rc.Change.Before[k]) {
				changed = append(changed, k)
			}
		}
		if rc.Type == protocol.GroupTypeName && !slices.Equal(changed, []string{"instances"}) {
			t.Errorf("%s: the import changes %v, want only instances (the takeover shown)", rc.Address, changed)
		}
		if rc.Type == protocol.GroupTypeName && !strings.Contains(string(rc.Change.After["instances"]), engine.TakenOverWhy) {
			t.Errorf("%s: the members' planned action does not say %q: %s", rc.Address, engine.TakenOverWhy, rc.Change.After["instances"])
		}
	}
	slices.Sort(planned)
	if want := []string{"virt_per_instance_config no-op", "virt_stateful_group update", "virt_stateful_policy no-op"}; !slices.Equal(planned, want) {
		t.Errorf("the plan is %v, want %v", planned, want)
	}
	ls.applyPlanChangesNothing(name)
}

// hostView renders what an import's apply leaves as it is: the group's configuration as its
// record holds it (template, size, policy, configs; not its owner, which the import takes over),
// and each member's UUID and hypervisor id (a restart changes the id).
func hostView(t *testing.T, group string) string {
	t.Helper()
	rec, err := testLibvirt(t).ReadGroupRecord(context.Background(), group)
	if err != nil {
		t.Fatalf("read the record of %s: %v", group, err)
	}
	st, err := store.DecodeGroup(rec.Data)
	if err != nil {
		t.Fatalf("decode the record of %s: %v", group, err)
	}
	conf, err := json.Marshal(struct {
		Group   engine.Group
		Policy  *engine.Policy
		Configs map[string]engine.ConfigEntry
		Spec    string
	}{st.Group, st.Policy, st.Configs, st.Resource})
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for n, d := range members(t, group) {
		parts = append(parts, fmt.Sprintf("%s uuid=%s id=%d", n, d.UUID, d.ID))
	}
	slices.Sort(parts)
	return fmt.Sprintf("record %s; %s", conf, strings.Join(parts, "; "))
}
