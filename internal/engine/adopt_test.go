package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// handMade is a domain no provider created under name, numbered index in the "db" scheme, with
// one disk of its own.
func handMade(name string, index int) Observed {
	shape := DesiredInstance{Name: name, Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 256, Description: "hand made"}, Disks: []DesiredDisk{{DeviceName: "vda", Source: name + "-disk.qcow2"}}}
	return Observed{Name: name, Index: index, Status: StatusRunning, Unmanaged: true, UUID: "uuid-" + name, Attached: shape.Disks,
		Instance: ManagedInstance{Current: shape, Template: AdoptedTemplate(shape)}}
}

// adoptedAfter is the domain once the step that adopted it ran: its record is the step's.
func adoptedAfter(o Observed, st Step) Observed {
	o.Unmanaged, o.Instance = false, st.Plan.Applied(st.Template)
	return o
}

func TestPlanGroup_adoptExisting(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.AdoptExisting = true
	cases := map[string]struct {
		group    Group
		observed []Observed
		// want is each member's planned action, by name; blocked the blocked members.
		want    map[string]string
		blocked []string
	}{
		"both hand-made domains adopted, nothing created": {g,
			[]Observed{handMade("db-1", 1), handMade("db-2", 2)},
			map[string]string{"db-1": "ADOPT: adopted existing domain (adopt_existing), disk vda made stateful", "db-2": "ADOPT: adopted existing domain (adopt_existing), disk vda made stateful"}, nil},
		"a gap is created as a new member": {g,
			[]Observed{handMade("db-2", 2)},
			map[string]string{"db-1": "CREATE", "db-2": "ADOPT: adopted existing domain (adopt_existing), disk vda made stateful"}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			p := PlanGroup(state(c.group), c.observed, Env{})
			got := map[string]string{}
			for _, m := range p.Final {
				got[m.Name] = m.Planned.String()
			}
			var blocked []string
			for _, b := range p.Blocked {
				blocked = append(blocked, b.Name)
			}
			if d := cmp.Diff(c.want, got); d != "" {
				t.Errorf("planned (-want +got):\n%s", d)
			}
			if d := cmp.Diff(c.blocked, blocked); d != "" {
				t.Errorf("blocked (-want +got):\n%s", d)
			}
		})
	}
}

// An adoption by name keeps the domain as it is: its disks become its preserved disks (NEVER),
// nothing is redefined, restarted or deleted, its power is its own; and once adopted, the next
// plan has nothing to do, whatever the group's template says.
func TestPlanGroup_adoptExistingKeepsTheDomainAndSettles(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.AdoptExisting = true
	s := state(g)
	o := handMade("db-1", 1)
	o.Status = StatusStopped
	p := PlanGroup(s, []Observed{o}, Env{})
	if len(p.Steps) != 1 || len(p.Create)+len(p.Delete)+len(p.Blocked) != 0 {
		t.Fatalf("plan %+v", p)
	}
	st := p.Steps[0]
	if !st.Adopt || st.Action != ActionRefresh && st.Action != ActionNone || st.Power != "" || st.Disruptive() {
		t.Fatalf("adoption step %+v", st)
	}
	want := []DesiredDisk{{DeviceName: "vda", Source: "db-1-disk.qcow2", Preserved: true, DeleteRule: DeleteNever}}
	if d := cmp.Diff(want, st.Plan.Desired.Disks); d != "" {
		t.Fatalf("adopted disks (-want +got):\n%s", d)
	}
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, task := range op.Tasks {
				if task.Kind.Down() || task.Kind == TaskDeleteVolume || task.Kind == TaskDefine || task.Kind == TaskDefineNext || task.Kind == TaskStart {
					t.Fatalf("the adoption runs %s", task.Kind)
				}
			}
		}
	}
	after := adoptedAfter(o, st)
	s.Group.Template.VCPU = 8
	next := PlanGroup(s, []Observed{after}, Env{})
	if len(next.Steps)+len(next.Create)+len(next.Delete)+len(next.Blocked) != 0 || next.Final[0].Planned.Kind != PlannedNone {
		t.Fatalf("the plan after the adoption is not empty: %+v", next)
	}
	if strings.Contains(next.Final[0].Planned.Why, "config is gone") {
		t.Fatalf("a member adopted by name is told as one whose config is gone: %q", next.Final[0].Planned)
	}
	// Destroyed with the group, its disk is kept.
	d := PlanDestroy(s, []Observed{after}, map[string][]string{DefaultHost: {"db-1-disk.qcow2"}}, Env{})
	for _, w := range d.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				if v.Volume == "db-1-disk.qcow2" && v.Fate == Delete {
					t.Fatalf("the destroy deletes the adopted member's disk: %+v", op)
				}
			}
		}
	}
}

func TestPlanGroup_abandon(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		target  int
		abandon []string
		// abandoned are the members the plan abandons; final the members after it; create those
		// it creates.
		abandoned, final, create []string
	}{
		"a member abandoned, the size lowered with it":   {1, []string{"db-2"}, []string{"db-2"}, []string{"db-1"}, nil},
		"a member abandoned, the size kept: a new name":  {2, []string{"db-2"}, []string{"db-2"}, []string{"db-1", "db-3"}, []string{"db-3"}},
		"a name that is no member: nothing to do":        {2, []string{"db-5"}, nil, []string{"db-1", "db-2"}, nil},
		"scale-out skips an abandoned name while listed": {4, []string{"db-3"}, nil, []string{"db-1", "db-2", "db-4", "db-5"}, []string{"db-4", "db-5"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			g := group(c.target)
			g.Abandon = c.abandon
			p := PlanGroup(state(g), observed(base(), StatusRunning, 1, 2), Env{})
			var abandoned, final, create, forgets []string
			for _, o := range p.Abandon {
				abandoned = append(abandoned, o.Name)
			}
			for _, m := range p.Final {
				final = append(final, m.Name)
			}
			for _, m := range p.Create {
				create = append(create, m.Name)
			}
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					if op.Kind == OpAbandon {
						if len(op.Tasks) != 1 || op.Tasks[0].Kind != TaskForget {
							t.Errorf("abandonment of %s runs %v", op.Name, op.Tasks)
						}
						forgets = append(forgets, op.Name)
					}
				}
			}
			for _, want := range []struct {
				what      string
				want, got []string
			}{{"abandoned", c.abandoned, abandoned}, {"abandon operations", c.abandoned, forgets}, {"final", c.final, final}, {"created", c.create, create}} {
				if d := cmp.Diff(want.want, want.got); d != "" {
					t.Errorf("%s (-want +got):\n%s", want.what, d)
				}
			}
			if len(p.Delete) != 0 || len(p.Blocked) != 0 {
				t.Errorf("plan deletes %v, blocks %v", p.Delete, p.Blocked)
			}
		})
	}
}

func TestPlanDestroy_keepsAbandonedVolumes(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.Abandon = []string{"db-2"}
	s := state(g)
	volumes := map[string][]string{DefaultHost: {VolumeName("db-2", BootDeviceName), SeedVolumeName("db-2"), VolumeName("db-3", BootDeviceName)}}
	s.Inventory = kept(volumes[DefaultHost]...)
	p := PlanDestroy(s, nil, volumes, Env{})
	var deleted []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				if v.Fate == Delete {
					deleted = append(deleted, v.Volume)
				}
			}
		}
	}
	if d := cmp.Diff([]string{VolumeName("db-3", BootDeviceName)}, deleted); d != "" {
		t.Errorf("deleted (-want +got):\n%s", d)
	}
}

func TestGroup_AbandonProblems(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.Abandon = []string{"db-1", "db-9", "web-1", "db-01"}
	if d := cmp.Diff([]string{"web-1", "db-01"}, g.AbandonProblems()); d != "" {
		t.Errorf("AbandonProblems (-want +got):\n%s", d)
	}
}

// TestPlanDestroy_adoptedDisksOfTheGroupsNames: a member adopted back after an abandon keeps
// disks under the group's own volume names, which the group no longer made (abandon took them out
// of its inventory). The destroy keeps them and names them once, as the adopted member's, not
// again as volumes of the group's names it did not make.
func TestPlanDestroy_adoptedDisksOfTheGroupsNames(t *testing.T) {
	t.Parallel()
	g := group(1)
	g.AdoptExisting = true
	shape := DesiredInstance{Name: "db-1", Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 256}, Disks: []DesiredDisk{{DeviceName: "boot", Source: "db-1-boot.qcow2"}, {DeviceName: "data", Source: "db-1-data.qcow2"}}}
	hand := Observed{Name: "db-1", Index: 1, Status: StatusStopped, Unmanaged: true, UUID: "uuid-db-1", Attached: shape.Disks,
		Instance: ManagedInstance{Current: shape, Template: AdoptedTemplate(shape)}}
	o := adoptedAfter(hand, PlanGroup(state(g), []Observed{hand}, Env{}).Steps[0])
	s := stateWith(g, kept())
	p := PlanDestroy(s, []Observed{o}, map[string][]string{DefaultHost: {"db-1-boot.qcow2", "db-1-data.qcow2", "db-9-data.qcow2"}}, Env{})
	if d := cmp.Diff([]Destroyed{{Name: "db-1", Adopted: true, Takedown: TakedownNone, Kept: []string{"db-1-boot.qcow2", "db-1-data.qcow2"}}}, p.DestroyedMembers([]Observed{o})); d != "" {
		t.Errorf("destroyed members (-want +got):\n%s", d)
	}
	if d := cmp.Diff([]Left{{Host: DefaultHost, Volume: "db-9-data.qcow2"}}, p.LeftVolumes()); d != "" {
		t.Errorf("volumes left as not made by the group (-want +got):\n%s", d)
	}
}
