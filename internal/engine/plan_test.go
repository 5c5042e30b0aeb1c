package engine

import (
	"strings"
	"testing"
)

func group(size int) Group {
	return Group{Name: "db", Base: "db", TargetSize: size, Running: true, Template: base(), Policy: DefaultUpdatePolicy()}
}

// built is the bookkeeping of an instance built from tpl with the given policy and config.
func built(name string, tpl Template, p Policy, c InstanceConfig) ManagedInstance {
	return NewInstancePlan(name, tpl, p, c).Applied(tpl)
}

func observed(tpl Template, status Status, indices ...int) []Observed {
	var out []Observed
	for _, i := range indices {
		name := InstanceName("db", i)
		out = append(out, Observed{Name: name, Index: i, Status: status, Instance: built(name, tpl, Policy{}, InstanceConfig{})})
	}
	return out
}

func state(g Group) GroupState { return GroupState{Group: g, Pool: "default"} }

func TestPlanGroup_createsFromEmpty(t *testing.T) {
	t.Parallel()
	p := PlanGroup(state(group(3)), nil, Env{})
	if len(p.Create) != 3 || len(p.Steps) != 0 || len(p.Final) != 3 || p.Final[2].Name != "db-3" {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_atDesiredStateIsANoop(t *testing.T) {
	t.Parallel()
	p := PlanGroup(state(group(2)), observed(base(), StatusRunning, 1, 2), Env{})
	if len(p.Create)+len(p.Delete)+len(p.Steps)+len(p.Blocked) != 0 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_scaleInDeletesHighestFirst(t *testing.T) {
	t.Parallel()
	p := PlanGroup(state(group(1)), observed(base(), StatusRunning, 1, 2, 3), Env{})
	if strings.Join(p.Delete, ",") != "db-3,db-2" || len(p.Final) != 1 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_metadataChangeIsRefresh(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Template.Metadata = map[string]string{"role": "web"}
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1, 2), Env{})
	if len(p.Steps) != 2 || p.Steps[0].Action != ActionRefresh || p.Steps[0].Disruptive() {
		t.Fatalf("plan %+v", p)
	}
	if p.Final[0].Revision != g.Template.Revision() {
		t.Fatal("final revision is not the new template's")
	}
}

func TestPlanGroup_minimalActionRaises(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Template.Labels = nil
	g.Policy.MinimalAction = ActionRestart
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1), Env{})
	if len(p.Steps) != 1 || p.Steps[0].Action != ActionRestart {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_mostDisruptiveAllowedCapsAndBlocks(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Template.BootDisk.SourceImage = "/new.qcow2"
	g.Policy.MostDisruptiveAllowed = ActionRestart
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1), Env{})
	if len(p.Steps) != 0 || len(p.Blocked) != 1 {
		t.Fatalf("plan %+v", p)
	}
	b := p.Blocked[0]
	if b.Needs != ActionReplace || b.Allowed != ActionRestart || !strings.Contains(b.String(), "db-1 needs REPLACE (boot image changed), allowed RESTART") {
		t.Fatalf("blocked %s", b)
	}
	if p.Final[0].Revision != base().Revision() {
		t.Fatal("a blocked member must keep its revision")
	}
}

func TestPlanGroup_opportunisticLeavesExistingMembers(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Template.VCPU = 8
	g.Policy.Type = UpdateOpportunistic
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1), Env{})
	if len(p.Steps) != 0 || len(p.Create) != 1 {
		t.Fatalf("plan %+v", p)
	}
	if p.Final[0].Revision != base().Revision() || p.Final[1].Revision != g.Template.Revision() {
		t.Fatalf("final %+v", p.Final)
	}
}

func TestPlanGroup_powerState(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Running = false
	p := PlanGroup(state(g), observed(base(), StatusRunning, 1, 2), Env{})
	if len(p.Steps) != 2 || p.Steps[0].Power != StatusStopped || p.Steps[0].Changed() {
		t.Fatalf("plan %+v", p)
	}
	if g.DesiredStatus() != StatusStopped || group(1).DesiredStatus() != StatusRunning {
		t.Fatal("desired status")
	}
}

func TestPlanGroup_configBeyondTargetSizeWaits(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	s.Configs = map[string]ConfigEntry{"db-3": DefaultConfigEntry()}
	p := PlanGroup(s, observed(base(), StatusRunning, 1), Env{})
	if len(p.Create) != 0 || strings.Join(p.Waiting, ",") != "db-3" || len(p.Final) != 1 {
		t.Fatalf("plan %+v", p)
	}
	// Scale-out to 3 creates db-2 and db-3, and db-3 with its config.
	s.Group.TargetSize = 3
	e := DefaultConfigEntry()
	e.Config.Metadata = map[string]string{"node-id": "x"}
	s.Configs["db-3"] = e
	p = PlanGroup(s, observed(base(), StatusRunning, 1), Env{})
	if len(p.Create) != 2 || p.Create[1].Name != "db-3" || p.Create[1].Plan.Desired.Metadata["node-id"] != "x" || len(p.Waiting) != 0 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_namedConfigMakesOneExtraMember(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	s.Configs = map[string]ConfigEntry{"db-special": DefaultConfigEntry()}
	p := PlanGroup(s, observed(base(), StatusRunning, 1), Env{})
	if len(p.Create) != 1 || p.Create[0].Name != "db-special" || p.Create[0].Index != 0 || len(p.Final) != 2 {
		t.Fatalf("plan %+v", p)
	}
	// Once it exists it is an ordinary member; without its config it stays.
	obs := append(observed(base(), StatusRunning, 1), Observed{Name: "db-special", Status: StatusRunning, Instance: built("db-special", base(), Policy{}, InstanceConfig{})})
	p = PlanGroup(s, obs, Env{})
	if len(p.Create)+len(p.Delete)+len(p.Steps) != 0 || len(p.Final) != 2 {
		t.Fatalf("plan %+v", p)
	}
	s.Configs = nil
	p = PlanGroup(s, obs, Env{})
	if len(p.Create)+len(p.Delete)+len(p.Steps) != 0 || len(p.Final) != 2 {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_adoptionIsRefreshAndKeepsTheDomain(t *testing.T) {
	t.Parallel()
	shape := DesiredInstance{Name: "legacy", Shape: Shape{DomainType: "qemu", VCPU: 2, MemoryMiB: 256, Description: "hand made"}, Disks: []DesiredDisk{{DeviceName: "vda", Source: "/srv/legacy.img"}}}
	s := state(group(0))
	e := DefaultConfigEntry()
	e.Config.Disks = []ConfigDisk{{DeviceName: "vda", Source: "/srv/legacy.img"}}
	s.Configs = map[string]ConfigEntry{"legacy": e}
	o := Observed{Name: "legacy", Status: StatusStopped, Unmanaged: true, Instance: ManagedInstance{Current: shape, Template: AdoptedTemplate(shape)}}
	p := PlanGroup(s, []Observed{o}, Env{})
	if len(p.Create)+len(p.Delete)+len(p.Blocked) != 0 || len(p.Steps) != 1 {
		t.Fatalf("plan %+v", p)
	}
	st := p.Steps[0]
	if !st.Adopt || st.Action != ActionRefresh || st.Power != "" || st.Plan.Desired.VCPU != 2 || len(st.Plan.Desired.Disks) != 1 {
		t.Fatalf("step %+v", st)
	}
	// Once adopted, the template does not reach it, and a change needing more than REFRESH is refused.
	adopted := st.Plan.Applied(st.Template)
	o = Observed{Name: "legacy", Status: StatusStopped, Instance: adopted}
	s.Group.Template.VCPU = 8
	if p := PlanGroup(s, []Observed{o}, Env{}); len(p.Steps) != 0 {
		t.Fatalf("template reached an adopted member: %+v", p)
	}
	e.MinimalAction = ActionReplace
	s.Configs["legacy"] = e
	e.Config.Metadata = map[string]string{"k": "v"}
	s.Configs["legacy"] = e
	if p := PlanGroup(s, []Observed{o}, Env{}); len(p.Blocked) != 1 || p.Blocked[0].Allowed != ActionRefresh {
		t.Fatalf("plan %+v", p)
	}
	// Its config destroyed (with or without remove_instance_state_on_destroy), the adopted member
	// is left as it is: every disk it has came with it, its boot disk among them, and none is
	// detached from it.
	delete(s.Configs, "legacy")
	p = PlanGroup(s, []Observed{o}, Env{})
	if len(p.Steps)+len(p.Create)+len(p.Delete)+len(p.Blocked) != 0 || len(p.Final) != 1 ||
		p.Final[0].Planned.String() != "NONE: adopted, and its per-instance config is gone: left as it is" {
		t.Fatalf("an adopted member without its config was changed: %+v", p)
	}
}

func TestPlanGroup_unmanagedDomainInTheSchemeIsRefused(t *testing.T) {
	t.Parallel()
	s := state(group(1))
	s.Configs = map[string]ConfigEntry{"db-1": DefaultConfigEntry()}
	o := Observed{Name: "db-1", Index: 1, Unmanaged: true}
	p := PlanGroup(s, []Observed{o}, Env{})
	if len(p.Blocked) != 1 || !strings.Contains(p.Blocked[0].String(), "no provider created it") {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanGroup_configBoundsNarrowThePolicy(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Template.VCPU = 4
	s := state(g)
	e := DefaultConfigEntry()
	e.MostDisruptiveAllowed = ActionRefresh
	s.Configs = map[string]ConfigEntry{"db-2": e}
	p := PlanGroup(s, observed(base(), StatusRunning, 1, 2), Env{})
	if len(p.Steps) != 1 || p.Steps[0].Name != "db-1" || len(p.Blocked) != 1 || p.Blocked[0].Name != "db-2" {
		t.Fatalf("plan %+v", p)
	}
	e = DefaultConfigEntry()
	e.MinimalAction = ActionReplace
	s.Configs = map[string]ConfigEntry{"db-2": e}
	p = PlanGroup(s, observed(base(), StatusRunning, 1, 2), Env{})
	if p.Steps[0].Action != ActionRestart || p.Steps[1].Action != ActionReplace {
		t.Fatalf("plan %+v", p)
	}
}

func TestPlanInstance_interruptedChangeIsSettledAfterARevert(t *testing.T) {
	t.Parallel()
	tpl := base()
	mi := built("db-1", tpl, Policy{}, InstanceConfig{})
	target := tpl
	target.Disks = append(target.Disks, Disk{DeviceName: "extra", SizeMiB: 8})
	inflight := NewInstancePlan("db-1", target, Policy{}, InstanceConfig{}).Desired
	mi.InFlight, mi.InFlightAction = &inflight, ActionRefresh
	// The configuration went back to tpl: the record says nothing changed, the marker says the
	// domain may carry the extra disk.
	p := PlanInstance(mi, tpl, Policy{}, InstanceConfig{}, ActionNone, ActionReplace)
	if !p.Changed || p.Action != ActionRefresh || !strings.Contains(JoinReasons(p.Reasons), "interrupted REFRESH settled (disk extra detached)") {
		t.Fatalf("plan %+v", p)
	}
	mi.InFlight = nil
	if p := PlanInstance(mi, tpl, Policy{}, InstanceConfig{}, ActionNone, ActionReplace); p.Changed {
		t.Fatalf("a settled instance is changed again: %+v", p)
	}
}

func TestAction_textRoundTrip(t *testing.T) {
	t.Parallel()
	for _, a := range []Action{ActionNone, ActionRefresh, ActionRestart, ActionReplace} {
		b, _ := a.MarshalText()
		var back Action
		if err := back.UnmarshalText(b); err != nil || back != a {
			t.Fatalf("%s -> %s -> %v %v", a, b, back, err)
		}
	}
	var a Action
	if err := a.UnmarshalText([]byte("REBOOT")); err == nil {
		t.Fatal("unknown action accepted")
	}
	if MinAction(ActionRestart, ActionRefresh) != ActionRefresh {
		t.Fatal("MinAction")
	}
}
