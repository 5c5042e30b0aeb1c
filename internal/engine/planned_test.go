package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// plannedTexts are planned actions with the text the plan shows for each: what String renders.
var plannedTexts = map[string]struct {
	planned Planned
	text    string
}{
	"nothing":                      {Planned{}, "NONE"},
	"nothing, and why":             {Planned{Why: `host "h3" cannot be reached`}, `NONE: host "h3" cannot be reached`},
	"a creation":                   {Planned{Kind: PlannedCreate}, "CREATE"},
	"a replacement":                {Planned{Kind: PlannedReplace, Why: "boot image changed"}, "REPLACE: boot image changed"},
	"a replacement, started":       {Planned{Kind: PlannedReplace, Why: "boot image changed", Then: PlannedStart}, "REPLACE: boot image changed; then START"},
	"a restart, stopped":           {Planned{Kind: PlannedRestart, Why: "vcpu 1 -> 2", Then: PlannedStop}, "RESTART: vcpu 1 -> 2; then STOP"},
	"a change of nothing, started": {Planned{Then: PlannedStart}, "NONE; then START"},
	"a start":                      {Planned{Kind: PlannedStart}, "START"},
	"an adoption":                  {Planned{Kind: PlannedAdopt, Why: "adopted: x"}, "ADOPT: adopted: x"},
	"a preservation":               {Planned{Kind: PlannedPreserve, Why: "preserved (NOW) for 24h0m0s"}, "PRESERVE: preserved (NOW) for 24h0m0s"},
	"a release":                    {Planned{Kind: PlannedRelease, Why: "preservation released by its config (preserve = NO)"}, "RELEASE: preservation released by its config (preserve = NO)"},
	"a refresh":                    {Planned{Kind: PlannedRefresh, Why: "metadata role, labels"}, "REFRESH: metadata role, labels"},
	"an older build's text":        {Planned{Kind: PlannedUnrecognized, Why: "EVACUATE: to h2; then START"}, "EVACUATE: to h2; then START"},
}

func TestPlanned_String(t *testing.T) {
	t.Parallel()
	for name, c := range plannedTexts {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.text, c.planned.String()); d != "" {
				t.Errorf("String (-want +got):\n%s", d)
			}
		})
	}
}

func TestStep_Planned(t *testing.T) {
	t.Parallel()
	reasons := []Reason{{Action: ActionReplace, What: "boot image changed"}, {Action: ActionRefresh, What: "metadata role"}}
	preserved := &PreserveDecision{Kind: "NOW", Changed: true, Why: "preserved (NOW) for 1h0m0s"}
	released := &PreserveDecision{Changed: true, Why: "preservation released by its config (preserve = NO)"}
	cases := map[string]struct {
		step Step
		want Planned
	}{
		"nothing":            {Step{}, Planned{}},
		"a start":            {Step{Power: StatusRunning}, Planned{Kind: PlannedStart}},
		"a stop":             {Step{Power: StatusStopped}, Planned{Kind: PlannedStop}},
		"a replacement":      {Step{Action: ActionReplace, Plan: InstancePlan{Changed: true, Reasons: reasons}}, Planned{Kind: PlannedReplace, Why: "boot image changed, metadata role"}},
		"a restart, stopped": {Step{Action: ActionRestart, Power: StatusStopped, Plan: InstancePlan{Changed: true}}, Planned{Kind: PlannedRestart, Then: PlannedStop}},
		"a live change with no action": {Step{Action: ActionNone, Plan: InstancePlan{Changed: true, Reasons: []Reason{{What: "labels"}}}},
			Planned{Why: "labels"}},
		"an adoption": {Step{Action: ActionRefresh, Adopt: true, Plan: InstancePlan{Changed: true, Reasons: []Reason{{What: "adopted"}}}},
			Planned{Kind: PlannedAdopt, Why: "adopted"}},
		"a preservation alone":     {Step{Preserve: preserved}, Planned{Kind: PlannedPreserve, Why: preserved.Why}},
		"a release alone":          {Step{Preserve: released}, Planned{Kind: PlannedRelease, Why: released.Why}},
		"a release with a start":   {Step{Preserve: released, Power: StatusRunning}, Planned{Kind: PlannedStart}},
		"a release with a restart": {Step{Preserve: released, Action: ActionRestart, Plan: InstancePlan{Changed: true}}, Planned{Kind: PlannedRestart}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, c.step.Planned()); d != "" {
				t.Errorf("Planned (-want +got):\n%s", d)
			}
		})
	}
}

// TestPlannedKind_rank orders every kind by disruption, as Unplanned compares them.
func TestPlannedKind_rank(t *testing.T) {
	t.Parallel()
	got := map[string]int{}
	for k := PlannedNone; k <= PlannedUnrecognized; k++ {
		got[k.String()] = k.rank()
	}
	want := map[string]int{"NONE": 0, "REFRESH": 1, "ADOPT": 1, "START": 1, "STOP": 1, "PRESERVE": 1, "RELEASE": 1,
		"RESTART": 2, "REPLACE": 3, "CREATE": 3, "ABANDON": 1, "MOVE": 2, "": 3}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("rank (-want +got):\n%s", d)
	}
}

// TestGroupPlan_Unplanned_byKind compares a plan's members with planned actions shown earlier, by
// kind: the reasons may differ, a less or equally disruptive action passes, a more disruptive one
// does not, and a deleted member that was shown is always told.
func TestGroupPlan_Unplanned_byKind(t *testing.T) {
	t.Parallel()
	p := GroupPlan{
		Final: []Member{
			{Name: "db-1", Planned: Planned{Kind: PlannedReplace, Why: "boot image changed"}},
			{Name: "db-2", Planned: Planned{Kind: PlannedRefresh, Why: "metadata role", Then: PlannedStart}},
			{Name: "db-3", Planned: Planned{Why: "autoheal waits", Unhealed: true}},
		},
		Delete: []string{"db-4"},
	}
	replace, restart := Planned{Kind: PlannedReplace, Why: "other reasons"}, Planned{Kind: PlannedRestart, Why: "vcpu"}
	cases := map[string]struct {
		shown map[string]Planned
		want  []string
	}{
		"shown as planned":      {map[string]Planned{"db-1": replace, "db-2": {Kind: PlannedRefresh, Why: "metadata role", Then: PlannedStart}, "db-3": {}}, nil},
		"shown more disruptive": {map[string]Planned{"db-1": {Kind: PlannedCreate}, "db-2": restart, "db-3": {Kind: PlannedStart}}, nil},
		"shown less disruptive": {map[string]Planned{"db-1": restart, "db-2": {Then: PlannedStart}, "db-3": {}},
			[]string{"db-1: REPLACE: boot image changed, planned RESTART: vcpu", "db-2: REFRESH: metadata role; then START, planned NONE; then START"}},
		"shown as a kind this build does not know": {map[string]Planned{"db-1": {Kind: PlannedUnrecognized, Why: "EVACUATE: to h2"}}, nil},
		"a deleted member that was shown":          {map[string]Planned{"db-4": {}}, []string{"db-4: DELETE, planned NONE"}},
		"nothing shown":                            {map[string]Planned{}, nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, p.Unplanned(c.shown)); d != "" {
				t.Errorf("Unplanned (-want +got):\n%s", d)
			}
		})
	}
}

func TestTakenOver(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		in   Planned
		want string
	}{
		"a member left as it is":      {Planned{Kind: PlannedNone}, "NONE: " + TakenOverWhy},
		"one with a health reason":    {Planned{Kind: PlannedNone, Why: "STARTING"}, "NONE: STARTING; " + TakenOverWhy},
		"already said":                {Planned{Kind: PlannedNone, Why: TakenOverWhy}, "NONE: " + TakenOverWhy},
		"a member the plan refreshes": {Planned{Kind: PlannedRefresh, Why: "metadata role changed"}, "REFRESH: metadata role changed"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := TakenOver(tt.in)
			if got.String() != tt.want {
				t.Fatalf("TakenOver(%+v) = %q, want %q", tt.in, got.String(), tt.want)
			}
		})
	}
}
