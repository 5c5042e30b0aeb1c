package store

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestGolden_capturedGroupsPlanEmpty: groups whose last apply finished on the earlier release
// plan nothing when this build reads their records (each member observed as its record says it
// is, on the host the group placed it on).
func TestGolden_capturedGroupsPlanEmpty(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		stage, group, record string
	}{
		"single host, after a restart": {"4-after-restart", "tfgold-one", "group-tfgold-one-default-gen0000000022.secret.xml"},
		"several hosts, stopped":       {"4-after-restart", "tfgold-multi", "group-tfgold-multi-h2-gen0000000007.secret.xml"},
		"an adopted domain":            {"5-adopted", "tfgold-one", "group-tfgold-one-default-gen0000000026.secret.xml"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			rec := readGroup(t, captured+tt.stage+"/"+tt.record)
			members, err := filepath.Glob(captured + tt.stage + "/member-*.xml")
			if err != nil {
				t.Fatal(err)
			}
			var observed []engine.Observed
			for _, path := range members {
				m := readMember(t, path)
				if m.Group != tt.group {
					continue
				}
				mi := m.Instance
				n := mi.Current.Name
				if !strings.HasPrefix(filepath.Base(path), "member-"+n+"-") {
					t.Fatalf("%s holds member %s", path, n)
				}
				observed = append(observed, engine.Observed{
					Name: n, Index: m.Index, Status: rec.Group.DesiredStatus(), Instance: mi,
					Attached: mi.Current.Disks, Host: rec.Placement[n],
				})
			}
			if len(observed) == 0 {
				t.Fatal("no members")
			}
			p := engine.PlanGroup(rec.GroupState, observed, engine.Env{Now: time.Date(2026, 11, 25, 20, 0, 0, 0, time.UTC)})
			var changed []string
			for _, s := range p.Steps {
				if s.Changed() || s.Action != engine.ActionNone || s.Power != "" {
					changed = append(changed, s.Name+": "+s.Action.String()+" "+engine.JoinReasons(s.Plan.Reasons)+" "+string(s.Power))
				}
			}
			type plan struct {
				Create, Delete, Changed []string
				Blocked                 []engine.Blocked
			}
			got := plan{Delete: p.Delete, Changed: changed, Blocked: p.Blocked}
			for _, c := range p.Create {
				got.Create = append(got.Create, c.Name)
			}
			if diff := cmp.Diff(plan{}, got); diff != "" {
				t.Fatalf("the plan is not empty (-want +got):\n%s", diff)
			}
		})
	}
}
