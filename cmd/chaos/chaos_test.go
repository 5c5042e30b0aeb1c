package main

import (
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// The harness's verdicts rest on a few pure functions; these tables pin them down without a
// libvirt host.

func TestIdentity(t *testing.T) {
	cases := map[string]struct {
		dom  backend.Domain
		want int
	}{
		"member":                  {backend.Domain{Name: groupName + "-2"}, 2},
		"temporary name":          {backend.Domain{Name: groupName + "-2-new"}, 2},
		"staging suffix":          {backend.Domain{Name: groupName + "-12.staging"}, 12},
		"record wins":             {backend.Domain{Name: groupName + "-x", Record: &backend.Record{Group: groupName, Index: 3}}, 3},
		"record of another group": {backend.Domain{Name: groupName + "-4", Record: &backend.Record{Group: "other", Index: 1}}, 4},
		"no digits":               {backend.Domain{Name: groupName + "-old"}, 0},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := identity(c.dom); got != c.want {
				t.Errorf("identity(%s) = %d, want %d", c.dom.Name, got, c.want)
			}
		})
	}
}

func TestErrorText(t *testing.T) {
	cases := map[string]struct {
		out  string
		n    int
		want string
	}{
		"where it points is left out": {"foo\n\nError: Cannot apply group x\n\n  with virt_stateful_group.x,\n" +
			"  on main.tf line 12, in resource \"virt_stateful_group\" \"x\":\n  12: resource \"virt_stateful_group\" \"x\" {\n\n" +
			"group x changed since the plan was made\nNothing was changed\n", 3,
			"Error: Cannot apply group x / group x changed since the plan was made / Nothing was changed"},
		"boxed": {"╷\n│ Error: Failed to load state\n│ \n│ unexpected EOF\n╵\n", 3,
			"Error: Failed to load state / unexpected EOF"},
		"no error": {"Apply complete! Resources: 0 added, 1 changed, 0 destroyed.\n", 3, ""},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := errorText(c.out, c.n); got != c.want {
				t.Errorf("errorText = %q, want %q", got, c.want)
			}
		})
	}
}

func TestPlanChanges(t *testing.T) {
	out := `Terraform will perform the following actions:

  # virt_stateful_group.x will be updated in-place
  ~ resource "virt_stateful_group" "x" {
        id = "tfchaos-roll"
      ~ instances = [
          ~ {
                name           = "tfchaos-roll-1"
              ~ planned_action = "NONE" -> "START"
                # (3 unchanged attributes hidden)
            },
        ]
      ~ running = false -> true
    }

Plan: 0 to add, 1 to change, 0 to destroy.
`
	want := `# virt_stateful_group.x will be updated in-place / name           = "tfchaos-roll-1" / ` +
		`~ planned_action = "NONE" -> "START" / ~ running = false -> true / Plan: 0 to add, 1 to change, 0 to destroy.`
	if got := planChanges(out, 10); got != want {
		t.Errorf("planChanges = %q, want %q", got, want)
	}
}

func TestCell(t *testing.T) {
	if got, want := cell("a |\n b", 10), `a \| b`; got != want {
		t.Errorf("cell = %q, want %q", got, want)
	}
	if got, want := cell("ééééé", 3), "ééé…"; got != want {
		t.Errorf("cell = %q, want %q", got, want)
	}
}

// Stale boot volumes and members down are reported, not failed on: convergence covers them.
func TestViolations(t *testing.T) {
	r := checkResult{lost: []string{"a"}, orphanVolumes: []string{"b"}, staleBoot: []string{"c"}, down: []string{"d"}, notes: []string{"e"}}
	if got := len(r.violations()); got != 2 {
		t.Errorf("violations = %v, want the lost volume and the orphan only", r.violations())
	}
	if got := len(r.reported()); got != 2 {
		t.Errorf("reported = %v, want the stale boot volume and the member down", r.reported())
	}
	if got := (checkResult{}).summary(); got != "checks ok" {
		t.Errorf("summary of nothing = %q", got)
	}
}

func TestSaysRolledBack(t *testing.T) {
	cases := map[string]struct {
		out  string
		want bool
	}{
		"on one line":          {"│ Error: Cannot apply group x\n│ \n│ the rollout failed and was rolled back (update_policy", true},
		"wrapped by terraform": {"│ the rollout failed and was\n│ rolled back (update_policy", true},
		"a stop":               {"│ the rollout stopped in wave 1 of 3.", false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := saysRolledBack(c.out); got != c.want {
				t.Errorf("saysRolledBack(%q) = %v, want %v", c.out, got, c.want)
			}
		})
	}
}

// The moves scenario drains the host its members are on: the target is the other one.
func TestMoveTarget(t *testing.T) {
	cases := map[string]struct{ drain, want string }{
		"nothing drained": {"", moveHosts[0]},
		"h2 drained":      {"h2", "default"},
		"default drained": {"default", "h2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := (&mover{drain: c.drain}).target(); got != c.want {
				t.Errorf("target with drain %q = %q, want %q", c.drain, got, c.want)
			}
		})
	}
}
