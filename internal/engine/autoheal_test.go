package engine

import (
	"strings"
	"testing"
	"time"
)

func TestAutoHealing_Decide(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	ms := func(d time.Duration) int64 { return now.Add(-d).UnixMilli() }
	a := AutoHealing{InitialDelay: "120s", Backoff: "60s", MaxConsecutiveFailures: 3}
	tests := []struct {
		name    string
		mi      ManagedInstance
		act     bool
		attempt int
		gaveUp  bool
		why     string
	}{
		{"first failure of an old member", ManagedInstance{Created: ms(time.Hour)}, true, 1, false, "autoheal (crashed)"},
		{"creation time unknown counts as old", ManagedInstance{}, true, 1, false, "autoheal (crashed)"},
		{"too young: the initial delay", ManagedInstance{Created: ms(30 * time.Second)}, false, 0, false, "autoheal waits for the initial delay, until 2026-11-23T12:01:30Z"},
		{"second failure inside the backoff", ManagedInstance{Created: ms(time.Hour), Heals: 1, LastHeal: ms(30 * time.Second)}, false, 0, false, "autoheal backs off until 2026-11-23T12:00:30Z after 1 failures"},
		{"second failure after the backoff", ManagedInstance{Created: ms(time.Hour), Heals: 1, LastHeal: ms(61 * time.Second)}, true, 2, false, "autoheal (crashed)"},
		{"the backoff doubles", ManagedInstance{Created: ms(time.Hour), Heals: 2, LastHeal: ms(90 * time.Second)}, false, 0, false, "autoheal backs off until 2026-11-23T12:00:30Z after 2 failures"},
		{"gives up at the maximum", ManagedInstance{Created: ms(time.Hour), Heals: 3, LastHeal: ms(10 * time.Second)}, false, 0, true, "autoheal stopped after 3 consecutive failures"},
		{"stays given up past any window", ManagedInstance{Created: ms(time.Hour), Heals: 3, LastHeal: ms(48 * time.Hour)}, false, 0, true, "autoheal stopped after 3"},
		{"a member that ran well past its last heal starts again", ManagedInstance{Created: ms(time.Hour), Heals: 2, LastHeal: ms(time.Hour)}, true, 1, false, "autoheal (crashed)"},
		{"a heal that did not finish counts, whatever the window", ManagedInstance{Created: ms(time.Hour), Heals: 1, LastHeal: ms(time.Hour), InFlight: &DesiredInstance{}}, true, 2, false, "autoheal (crashed)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := a.Decide(tt.mi, now, "crashed")
			if d.Act != tt.act || d.Attempt != tt.attempt || d.GaveUp != tt.gaveUp || !strings.HasPrefix(d.Why, tt.why) {
				t.Fatalf("decision %+v, want act %t attempt %d gave up %t why %q", d, tt.act, tt.attempt, tt.gaveUp, tt.why)
			}
		})
	}
}

func TestPlanGroup_autohealReplacesFailedMembers(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 23, 12, 0, 0, 0, time.UTC)
	g := group(3)
	g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "60s", MaxConsecutiveFailures: 2}
	obs := observed(base(), StatusRunning, 1, 2, 3)
	obs[0].Status, obs[0].StateReason = StatusStopped, StateReasonCrashed
	obs[1].Status, obs[1].StateReason = StatusStopped, StateReasonCrashed
	obs[1].Instance.Heals, obs[1].Instance.LastHeal = 2, now.Add(-time.Minute).UnixMilli()
	p := PlanGroup(state(g), obs, Env{Now: now})
	if len(p.Steps) != 1 || p.Steps[0].Name != "db-1" || p.Steps[0].Action != ActionReplace || p.Steps[0].Heal != 1 ||
		p.Steps[0].Planned().String() != "REPLACE: autoheal (shut off (crashed)); then START" {
		t.Fatalf("steps %+v", p.Steps)
	}
	if f := p.Final[1]; f.Status != StatusStopped || !strings.HasPrefix(f.Planned.String(), "NONE: autoheal stopped after 2 consecutive failures") {
		t.Fatalf("member 2: %+v", f)
	}
	// A member shut off cleanly is started, not replaced.
	obs[2].Status, obs[2].StateReason = StatusStopped, StateReasonDestroyed
	p = PlanGroup(state(g), obs, Env{Now: now})
	if len(p.Steps) != 2 || p.Steps[1].Name != "db-3" || p.Steps[1].Planned().String() != "START" {
		t.Fatalf("steps with a member shut off cleanly %+v", p.Steps)
	}
	// Without the block, the same failure is repaired like any drift: started again.
	g.AutoHealing = nil
	p = PlanGroup(state(g), obs, Env{Now: now})
	if len(p.Steps) != 3 || p.Steps[0].Planned().String() != "START" {
		t.Fatalf("steps without auto_healing %+v", p.Steps)
	}
}

func TestPlanGroup_aMemberThatLostItsDefinitionIsHealed(t *testing.T) {
	t.Parallel()
	g := group(2)
	obs := observed(base(), StatusRunning, 1)
	env := Env{Volumes: map[string]bool{"db-2-boot.qcow2": true}}
	// The group made db-2's boot volume: its inventory holds it.
	inv := kept("db-2-boot.qcow2")
	if p := PlanGroup(stateWith(g, inv), obs, env); p.Final[1].Planned.String() != PlannedCreate.String() {
		t.Fatalf("without auto_healing: %q", p.Final[1].Planned.String())
	}
	g.AutoHealing = &AutoHealing{}
	if p := PlanGroup(stateWith(g, inv), obs, env); p.Final[1].Planned.String() != "REPLACE: autoheal (definition missing)" || len(p.Create) != 1 {
		t.Fatalf("with auto_healing: %q", p.Final[1].Planned.String())
	}
	if p := PlanGroup(state(g), obs, Env{}); p.Final[1].Planned.String() != PlannedCreate.String() {
		t.Fatalf("a new member: %q", p.Final[1].Planned.String())
	}
}
