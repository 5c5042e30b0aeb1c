package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// planCases are group plans as the config status and the group's idleness see them.
var planCases = map[string]struct {
	plan       GroupPlan
	wantStatus ConfigStatus // of db-1's config
	wantIdle   bool
}{
	"nothing to do":                {GroupPlan{}, ConfigEffective, true},
	"only a power change":          {GroupPlan{Steps: []Step{{Name: "db-1", Power: StatusRunning}}}, ConfigEffective, false},
	"another instance changes":     {GroupPlan{Steps: []Step{{Name: "db-2", Plan: InstancePlan{Changed: true}}}}, ConfigEffective, false},
	"a step that changes nothing":  {GroupPlan{Steps: []Step{{Name: "db-1"}}}, ConfigEffective, true},
	"beyond target_size":           {GroupPlan{Waiting: []string{"db-1"}}, ConfigWaiting, true},
	"waiting, and another created": {GroupPlan{Waiting: []string{"db-1"}, Create: []NewMember{{Name: "db-2"}}}, ConfigWaiting, false},
	"to be created":                {GroupPlan{Create: []NewMember{{Name: "db-1"}}}, ConfigUnapplied, false},
	"to be changed":                {GroupPlan{Steps: []Step{{Name: "db-1", Plan: InstancePlan{Changed: true}}}}, ConfigUnapplied, false},
	"blocked":                      {GroupPlan{Blocked: []Blocked{{Name: "db-1"}}}, ConfigUnapplied, false},
	"another deleted":              {GroupPlan{Delete: []string{"db-2"}}, ConfigEffective, false},
	"another abandoned":            {GroupPlan{Abandon: []Observed{{Name: "db-2"}}}, ConfigEffective, false},
	"a preservation starts":        {GroupPlan{Steps: []Step{{Name: "db-1", Preserve: &PreserveDecision{Kind: PreserveAuto, Changed: true}}}}, ConfigEffective, false},
	"a preservation is released":   {GroupPlan{Steps: []Step{{Name: "db-1", Preserve: &PreserveDecision{Changed: true}}}}, ConfigEffective, false},
}

func TestGroupPlan_ConfigStatus(t *testing.T) {
	t.Parallel()
	for name, c := range planCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.wantStatus, c.plan.ConfigStatus("db-1")); d != "" {
				t.Errorf("ConfigStatus(db-1) (-want +got):\n%s", d)
			}
		})
	}
}

func TestGroupPlan_Idle(t *testing.T) {
	t.Parallel()
	for name, c := range planCases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.wantIdle, c.plan.Idle()); d != "" {
				t.Errorf("Idle (-want +got):\n%s", d)
			}
		})
	}
}
