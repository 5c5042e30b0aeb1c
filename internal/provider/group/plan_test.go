package group

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func TestHostChanges(t *testing.T) {
	healthy, failed, unknown := "HEALTHY", "FAILED", "UNKNOWN"
	row := func(name, status string, health *string) InstanceRow {
		return InstanceRow{Name: name, Status: status, Health: health, TemplateRevision: "r1", CurrentAction: "NONE"}
	}
	member := func(name, status, health string) engine.Member {
		return engine.Member{Name: name, Status: engine.Status(status), Health: engine.Health(health), Revision: "r1", CurrentAction: "NONE"}
	}
	cases := map[string]struct {
		last []InstanceRow
		now  []engine.Member
		want []string
	}{
		"nothing changed": {
			last: []InstanceRow{row("g-1", "RUNNING", &healthy), row("g-2", "RUNNING", &healthy)},
			now:  []engine.Member{member("g-1", "RUNNING", "HEALTHY"), member("g-2", "RUNNING", "HEALTHY")},
		},
		"a member shut off": {
			last: []InstanceRow{row("g-1", "RUNNING", &healthy), row("g-2", "RUNNING", &healthy)},
			now:  []engine.Member{member("g-1", "RUNNING", "HEALTHY"), member("g-2", "STOPPED", "FAILED")},
			want: []string{"g-2: status RUNNING, now STOPPED, health HEALTHY, now FAILED"},
		},
		"a state without health is not compared on it": {
			last: []InstanceRow{row("g-1", "RUNNING", nil)},
			now:  []engine.Member{member("g-1", "RUNNING", "FAILED")},
		},
		"health alone": {
			last: []InstanceRow{row("g-1", "STOPPED", &failed)},
			now:  []engine.Member{member("g-1", "STOPPED", "HEALTHY")},
			want: []string{"g-1: health FAILED, now HEALTHY"},
		},
		"revision, current action and host": {
			last: []InstanceRow{row("g-1", "RUNNING", &healthy)},
			now: []engine.Member{{Name: "g-1", Status: "RUNNING", Health: "HEALTHY", Revision: "r2",
				CurrentAction: "REFRESHING", Host: "h2"}},
			want: []string{"g-1: template_revision r1, now r2, current_action NONE, now REFRESHING, host default, now h2"},
		},
		"the default host written either way": {
			last: []InstanceRow{{Name: "g-1", Status: "RUNNING", Health: &healthy, TemplateRevision: "r1", CurrentAction: "NONE", Host: "default"}},
			now:  []engine.Member{member("g-1", "RUNNING", "HEALTHY")},
		},
		"appeared and gone, in the host's order then the gone ones": {
			last: []InstanceRow{row("g-1", "RUNNING", &healthy), row("g-2", "RUNNING", &healthy), row("g-3", "RUNNING", &healthy)},
			now:  []engine.Member{member("g-4", "STOPPED", "HEALTHY"), member("g-1", "RUNNING", "HEALTHY")},
			want: []string{"g-4: appeared (STOPPED)", "g-2: gone", "g-3: gone"},
		},
		"a member whose host stopped answering, only on its status": {
			last: []InstanceRow{row("g-1", "RUNNING", &healthy)},
			now:  []engine.Member{engine.UnknownMember(engine.Observed{Name: "g-1", Index: 1, Host: "h2"})},
			want: []string{"g-1: status RUNNING, now UNKNOWN"},
		},
		"a member whose host answers again": {
			last: []InstanceRow{{Name: "g-1", Status: "UNKNOWN", Health: &unknown, CurrentAction: "NONE", Host: "h2"}},
			now:  []engine.Member{{Name: "g-1", Status: "RUNNING", Health: "HEALTHY", Revision: "r1", CurrentAction: "NONE", Host: "h2"}},
			want: []string{"g-1: status UNKNOWN, now RUNNING"},
		},
		"no state rows": {
			now:  []engine.Member{member("g-1", "RUNNING", "HEALTHY")},
			want: []string{"g-1: appeared (RUNNING)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, hostChanges(tc.last, tc.now)); diff != "" {
				t.Errorf("hostChanges (-want +got):\n%s", diff)
			}
		})
	}
}

func TestShortList(t *testing.T) {
	items := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprint(i + 1)
		}
		return out
	}
	cases := map[string]struct {
		items []string
		want  string
	}{
		"none":        {want: ""},
		"a few":       {items: items(3), want: "1; 2; 3"},
		"twenty":      {items: items(20), want: "1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11; 12; 13; 14; 15; 16; 17; 18; 19; 20"},
		"twenty-five": {items: items(25), want: "1; 2; 3; 4; 5; 6; 7; 8; 9; 10; 11; 12; 13; 14; 15; 16; 17; 18; 19; 20; and 5 more"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tc.want, shortList(tc.items)); diff != "" {
				t.Errorf("shortList (-want +got):\n%s", diff)
			}
		})
	}
}
