package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// NeedsUserData names the members whose seed task must have the apply's own write-only user
// data: not those the engine lets keep their seed's, nor seeds without write-only user data.
func TestGroupPlan_NeedsUserData(t *testing.T) {
	t.Parallel()
	wo := DesiredInstance{Shape: Shape{CloudInit: &CloudInit{UserDataWOVersion: 2}}}
	plain := DesiredInstance{Shape: Shape{CloudInit: &CloudInit{UserData: "#cloud-config\n"}}}
	op := func(name string, tasks ...Task) Operation { return Operation{Name: name, Tasks: tasks} }
	cases := map[string]struct {
		plan GroupPlan
		want []string
	}{
		"nothing":               {GroupPlan{}, nil},
		"new member":            {GroupPlan{Waves: []Wave{{Ops: []Operation{op("g-3", Task{Kind: TaskWriteSeed, Desired: wo})}}}}, []string{"g-3"}},
		"seed kept":             {GroupPlan{Waves: []Wave{{Ops: []Operation{op("g-1", Task{Kind: TaskWriteSeed, Desired: wo, UserDataFromSeed: true})}}}}, nil},
		"swap without its seed": {GroupPlan{Waves: []Wave{{Ops: []Operation{op("g-1", Task{Kind: TaskSwapSeed, Desired: wo})}}}}, []string{"g-1"}},
		"plain user data":       {GroupPlan{Waves: []Wave{{Ops: []Operation{op("g-1", Task{Kind: TaskWriteSeed, Desired: plain})}}}}, nil},
		"two waves, one each": {GroupPlan{Waves: []Wave{
			{Ops: []Operation{op("g-1", Task{Kind: TaskWriteSeed, Desired: wo, UserDataFromSeed: true}), op("g-2", Task{Kind: TaskWriteSeed, Desired: wo}, Task{Kind: TaskSwapSeed, Desired: wo})}},
			{Ops: []Operation{op("g-4", Task{Kind: TaskWriteSeed, Desired: wo})}},
		}}, []string{"g-2", "g-4"}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(c.want, c.plan.NeedsUserData()); diff != "" {
				t.Errorf("NeedsUserData (-want +got):\n%s", diff)
			}
		})
	}
}
