package providerdata

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestNewDestroyWaits: a destroy plan blocked by members on hosts that do not answer is a
// destroyWaitsError naming the hosts and the members; one that is not blocked is none, whatever
// host is down (the group's destroy proceeds, and so do its policy's and configs').
func TestNewDestroyWaits(t *testing.T) {
	down := map[string]error{"h3": errors.New("connection refused"), "h2": errors.New("timeout")}
	blocked := engine.GroupPlan{Blocked: []engine.Blocked{{Name: "db-2", Problem: `host "h3" cannot be reached: the group is destroyed once every member's host answers`}}}
	cases := map[string]struct {
		plan engine.GroupPlan
		down map[string]error
		want string
	}{
		"every host answers":             {engine.GroupPlan{}, nil, ""},
		"a host without members is down": {engine.GroupPlan{}, down, ""},
		"a member on a host that is down": {blocked, down,
			`group g cannot be destroyed now: hosts that did not answer: h2, h3; members that cannot be deleted yet: db-2: host "h3" cannot be reached: the group is destroyed once every member's host answers`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := ""
			if w := NewDestroyWaits("g", c.plan, c.down); w != nil {
				got = w.Error()
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
			if w := NewDestroyWaits("g", c.plan, c.down); w != nil {
				summary, detail := w.Warning()
				want := "Group g cannot be destroyed until its hosts answer|Hosts that did not answer: h2, h3.\n" +
					`Members that cannot be deleted yet: db-2: host "h3" cannot be reached: the group is destroyed once every member's host answers.` + "\n\n" +
					"The apply of this destroy fails and deletes nothing of the group: its members, its volumes, its stateful policy and its per-instance configs stay, in the state and on the hosts. Destroy again once every host answers."
				if diff := cmp.Diff(want, summary+"|"+detail); diff != "" {
					t.Errorf("warning (-want +got):\n%s", diff)
				}
			}
		})
	}
}
