package engine

import (
	"fmt"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// lostRecord observes member name of s as Observe reads a domain that lost its member record and
// that the group record holds: its record as LostRecord rebuilds it, its disks attached.
func lostRecord(s GroupState, name string, index int, status Status) Observed {
	mi := s.LostRecord(name)
	return Observed{Name: name, Index: index, Status: status, Instance: mi, RecordLost: true, Attached: mi.Current.Disks, Description: &mi.Current.Description}
}

// opsOf renders a plan's operations with their task kinds, for diffs.
func taskListOf(p GroupPlan) []string {
	var out []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			var tasks []string
			for _, t := range append(slices.Clone(op.Early), op.Tasks...) {
				tasks = append(tasks, t.Kind.String())
			}
			out = append(out, fmt.Sprintf("%s %s %v", op.Kind, op.Name, tasks))
		}
	}
	return out
}

// A member whose record was removed by hand is the member still: the plan writes its record back
// and creates nothing, and a name the group never placed is not claimed.
func TestPlanGroup_memberWhoseRecordWasLostIsWrittenBackNotCreated(t *testing.T) {
	t.Parallel()
	s := state(group(2))
	s.Placement, s.Placed = map[string]string{"db-1": DefaultHost, "db-2": DefaultHost}, true
	obs := []Observed{observed(base(), StatusRunning, 1)[0], lostRecord(s, "db-2", 2, StatusRunning)}
	p := PlanGroup(s, obs, Env{})
	if len(p.Create) != 0 || len(p.Delete) != 0 || len(p.Blocked) != 0 {
		t.Fatalf("create %v, delete %v, blocked %v: want none", p.Create, p.Delete, p.Blocked)
	}
	want := []string{"refresh db-2 [record]"}
	if d := cmp.Diff(want, taskListOf(p)); d != "" {
		t.Errorf("operations (-want +got):\n%s", d)
	}
	if op := p.Waves[0].Ops[0]; op.Reason != RecordLostWhy {
		t.Errorf("reason %q, want %q", op.Reason, RecordLostWhy)
	}
	if got := p.Waves[0].Ops[0].Step.Recorded(); got.TemplateRevision != s.Group.Template.Revision() {
		t.Errorf("record written back names revision %q, want the group template's %q", got.TemplateRevision, s.Group.Template.Revision())
	}
}

// The group's destroy deletes a member whose record was lost as it deletes any other, its
// volumes by their delete rules.
func TestPlanDestroy_deletesMembersWhoseRecordWasLost(t *testing.T) {
	t.Parallel()
	s := state(group(2))
	s.Placement, s.Placed = map[string]string{"db-1": DefaultHost, "db-2": DefaultHost}, true
	s.Policy = &Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteNever}}}
	obs := []Observed{lostRecord(s, "db-1", 1, StatusRunning), lostRecord(s, "db-2", 2, StatusStopped)}
	vols := []string{"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-boot.qcow2", "db-2-data.qcow2"}
	env := Env{Volumes: map[string]bool{}}
	for _, v := range vols {
		env.Volumes[v] = true
	}
	p := PlanDestroy(s, obs, map[string][]string{DefaultHost: vols}, env)
	var got []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, v := range op.Volumes {
				got = append(got, fmt.Sprintf("%s %s %s %s", op.Kind, op.Name, v.Volume, v.Fate))
			}
		}
	}
	want := []string{
		"delete db-1 db-1-boot.qcow2 " + Delete.String(), "delete db-1 db-1-data.qcow2 " + Release.String(),
		"delete db-2 db-2-boot.qcow2 " + Delete.String(), "delete db-2 db-2-data.qcow2 " + Release.String(),
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("volumes (-want +got):\n%s", d)
	}
}

// A destroy never makes anything: the group's destroy, and the plans of a destroy run (the
// removals of the policy and configs before it), whatever the group needs. Each case first shows
// that the same plan outside a destroy run does make something, so that it tests the rule.
func TestDestroy_makesNothing(t *testing.T) {
	t.Parallel()
	placed := func(s GroupState, names ...string) GroupState {
		s.Placement, s.Placed = map[string]string{}, true
		for _, n := range names {
			s.Placement[n] = DefaultHost
		}
		return s
	}
	twoOf := func(g Group) GroupState { return placed(state(g), "db-1", "db-2") }
	newImage := group(2)
	newImage.Template.BootDisk.SourceImage = "debian.qcow2"
	moreCPU := group(2)
	moreCPU.Template.VCPU = 2
	newDisk := group(2)
	newDisk.Template.Disks = append(newDisk.Template.Disks, Disk{DeviceName: "logs", SizeMiB: 8})
	withSeed := group(2)
	withSeed.Template.CloudInit = &CloudInit{UserData: "#cloud-config\n"}
	cases := map[string]struct {
		s   GroupState
		obs func(GroupState) []Observed
	}{
		"members missing": {placed(state(group(3)), "db-1"), func(GroupState) []Observed { return observed(base(), StatusRunning, 1) }},
		"members whose records were lost, one missing": {placed(state(group(3)), "db-1", "db-2"), func(s GroupState) []Observed {
			return []Observed{lostRecord(s, "db-1", 1, StatusRunning), lostRecord(s, "db-2", 2, StatusRunning)}
		}},
		"members stopped": {twoOf(group(2)), func(GroupState) []Observed { return observed(base(), StatusStopped, 1, 2) }},
		"a replacement":   {twoOf(newImage), func(GroupState) []Observed { return observed(base(), StatusRunning, 1, 2) }},
		"a restart":       {twoOf(moreCPU), func(GroupState) []Observed { return observed(base(), StatusRunning, 1, 2) }},
		"a disk to add":   {twoOf(newDisk), func(GroupState) []Observed { return observed(base(), StatusRunning, 1, 2) }},
		"a seed to write": {twoOf(withSeed), func(GroupState) []Observed { return observed(base(), StatusRunning, 1, 2) }},
	}
	makes := func(p GroupPlan) []string {
		var out []string
		for _, w := range p.Waves {
			for _, op := range w.Ops {
				if op.Makes() || op.Kind == OpCreate {
					out = append(out, fmt.Sprintf("%s %s", op.Kind, op.Name))
				}
			}
		}
		return out
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			obs := c.obs(c.s)
			if len(makes(PlanGroup(c.s, obs, Env{}))) == 0 {
				t.Fatal("outside a destroy run the plan makes nothing: the case tests nothing")
			}
			p := PlanGroup(c.s, obs, Env{DestroyRun: true})
			if got := makes(p); len(got) > 0 || len(p.Create) > 0 || len(p.Creating) > 0 {
				t.Errorf("a destroy run's plan makes %v, creates %v", got, p.Creating)
			}
			for _, m := range p.Final {
				if !slices.ContainsFunc(obs, func(o Observed) bool { return o.Name == m.Name }) {
					t.Errorf("a destroy run's plan shows %s, which it does not create", m.Name)
				}
			}
			for n := range p.Placement {
				if !slices.ContainsFunc(obs, func(o Observed) bool { return o.Name == n }) {
					t.Errorf("a destroy run's plan places %s, which it does not create", n)
				}
			}
			var volumes []string
			for _, o := range obs {
				for _, d := range o.Instance.Current.Disks {
					volumes = append(volumes, d.Source)
				}
			}
			if got := makes(PlanDestroy(c.s, obs, map[string][]string{DefaultHost: volumes}, Env{})); len(got) > 0 {
				t.Errorf("the group's destroy makes %v", got)
			}
		})
	}
}
