package main

import (
	"testing"

	"github.com/google/go-cmp/cmp"

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

func TestLogEvents(t *testing.T) {
	out := "2026-11-29T05:27:16.526Z [INFO]  provider.terraform-provider-virt: configuring server automatic mTLS: timestamp=2026-11-29T05:27:16.525Z\n" +
		"2026-11-29T05:27:19.010Z [INFO]  provider.terraform-provider-virt: replace tfchaos-htt-r-1: group=tfchaos-htt-r host=default\n" +
		"2026-11-29T05:27:20.104Z [INFO]  provider.terraform-provider-virt: member did not shut down in time; powering it off: @module=virt shutdown_timeout=1s\n" +
		"2026-11-29T05:27:22.454Z [INFO]  provider.terraform-provider-virt: waiting for tfchaos-htt-r-1 to be ready: group=tfchaos-htt-r\n" +
		"2026-11-29T05:27:25.483Z [WARN]  provider.terraform-provider-virt: rolling back the rollout: tf_provider_addr=x\n" +
		"2026-11-29T05:27:25.484Z [INFO]  provider: plugin process exited: plugin=/x id=1\n" +
		"2026-11-29T05:27:32.541Z [ERROR] provider.terraform-provider-virt: rollout stopped: error=\"the rollout: stopped\"\n"
	var got []string
	for _, e := range logEvents(out) {
		got = append(got, e.at.Format("15:04:05.000")+" "+e.msg)
	}
	want := []string{
		"05:27:16.526 configuring server automatic mTLS",
		"05:27:19.010 replace tfchaos-htt-r-1",
		"05:27:20.104 member did not shut down in time; powering it off",
		"05:27:22.454 waiting for tfchaos-htt-r-1 to be ready",
		"05:27:25.483 rolling back the rollout",
		"05:27:32.541 rollout stopped",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("logEvents (-want +got):\n%s", diff)
	}
	if m := readyMember(got[3][13:]); m != "tfchaos-htt-r-1" {
		t.Errorf("readyMember = %q", m)
	}
}

func TestParseSnapshotList(t *testing.T) {
	out := "Snapshot list:\nID        TAG                               VM SIZE                DATE     VM CLOCK     ICOUNT\n" +
		"1         virt-abc-1764394036-data              0 B 2026-11-29 05:27:20 00:00:00.000          0\n" +
		"2         other                                 0 B 2026-11-29 05:27:21 00:00:00.000          0\n"
	if diff := cmp.Diff([]string{"virt-abc-1764394036-data", "other"}, parseSnapshotList(out)); diff != "" {
		t.Errorf("parseSnapshotList (-want +got):\n%s", diff)
	}
}
