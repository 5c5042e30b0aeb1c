package engine

import (
	"strings"
	"testing"
)

func group(size int) Group {
	return Group{Name: "db", Base: "db", TargetSize: size, Running: true, Template: base(), Policy: DefaultUpdatePolicy()}
}

func observed(tpl Template, status string, indices ...int) []Observed {
	var out []Observed
	for _, i := range indices {
		out = append(out, Observed{Name: InstanceName("db", i), Index: i, Status: status, Applied: tpl})
	}
	return out
}

func TestPlanGroup_createsFromEmpty(t *testing.T) {
	p := PlanGroup(group(3), nil)
	if len(p.Create) != 3 || len(p.Steps) != 0 || len(p.Final) != 3 || p.Final[2].Name != "db-3" {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_atDesiredStateIsANoop(t *testing.T) {
	p := PlanGroup(group(2), observed(base(), StatusRunning, 1, 2))
	if len(p.Create)+len(p.Delete)+len(p.Steps)+len(p.Blocked) != 0 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_scaleInDeletesHighestFirst(t *testing.T) {
	p := PlanGroup(group(1), observed(base(), StatusRunning, 1, 2, 3))
	if strings.Join(p.Delete, ",") != "db-3,db-2" || len(p.Final) != 1 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_metadataChangeIsRefresh(t *testing.T) {
	g := group(2)
	g.Template.Metadata = map[string]string{"role": "web"}
	p := PlanGroup(g, observed(base(), StatusRunning, 1, 2))
	if len(p.Steps) != 2 || p.Steps[0].Action != ActionRefresh || p.Steps[0].Disruptive() {
		t.Fatalf("plan %+v", p)
	}
	if p.Final[0].Revision != g.Template.Revision() {
		t.Fatal("final revision is not the new template's")
	}
}

func TestPlanGroup_minimalActionRaises(t *testing.T) {
	g := group(1)
	g.Template.Labels = nil
	g.Policy.MinimalAction = ActionRestart
	p := PlanGroup(g, observed(base(), StatusRunning, 1))
	if len(p.Steps) != 1 || p.Steps[0].Action != ActionRestart {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_mostDisruptiveAllowedCapsAndBlocks(t *testing.T) {
	g := group(1)
	g.Template.BootDisk.SourceImage = "/new.qcow2"
	g.Policy.MostDisruptiveAllowed = ActionRestart
	p := PlanGroup(g, observed(base(), StatusRunning, 1))
	if len(p.Steps) != 0 || len(p.Blocked) != 1 {
		t.Fatalf("plan %+v", p)
	}
	b := p.Blocked[0]
	if b.Needs != ActionReplace || b.Allowed != ActionRestart || !strings.Contains(b.String(), "db-1 needs REPLACE (boot image), allowed RESTART") {
		t.Fatalf("blocked %s", b)
	}
	if p.Final[0].Revision != base().Revision() {
		t.Fatal("a blocked member must keep its revision")
	}
}

func TestPlanGroup_opportunisticLeavesExistingMembers(t *testing.T) {
	g := group(2)
	g.Template.VCPU = 8
	g.Policy.Type = UpdateOpportunistic
	p := PlanGroup(g, observed(base(), StatusRunning, 1))
	if len(p.Steps) != 0 || len(p.Create) != 1 {
		t.Fatalf("plan %+v", p)
	}
	if p.Final[0].Revision != base().Revision() || p.Final[1].Revision != g.Template.Revision() {
		t.Fatalf("final %+v", p.Final)
	}
}

func TestPlanGroup_powerState(t *testing.T) {
	g := group(2)
	g.Running = false
	p := PlanGroup(g, observed(base(), StatusRunning, 1, 2))
	if len(p.Steps) != 2 || p.Steps[0].Power != StatusStopped || p.Steps[0].Changed {
		t.Fatalf("plan %+v", p)
	}
	if g.DesiredStatus() != StatusStopped || group(1).DesiredStatus() != StatusRunning {
		t.Fatal("desired status")
	}
}
