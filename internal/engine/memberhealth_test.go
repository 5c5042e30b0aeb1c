package engine

import (
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var healthNow = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

// ago is a time in a record (Unix milliseconds), d before healthNow.
func ago(d time.Duration) int64 { return healthNow.Add(-d).UnixMilli() }

func pass() ProbeResult           { return ProbeResult{OK: true} }
func fail(why string) ProbeResult { return ProbeResult{Reason: why} }

// probed is a running member, created long ago, with the probe outcome given.
func probed(p *ProbeOutcome) Observed {
	return Observed{Name: "db-1", Index: 1, Status: StatusRunning, Instance: ManagedInstance{Created: ago(time.Hour)}, Probe: p}
}

func TestGroup_HealthOf(t *testing.T) {
	t.Parallel()
	hc := &HealthCheck{UnhealthyThreshold: 3}
	checked := Group{Running: true, HealthCheck: hc}
	healing := Group{Running: true, HealthCheck: hc, AutoHealing: &AutoHealing{InitialDelay: "120s"}}
	stopped := "exit status 1: tiny-service: stopped"
	young := func(o Observed) Observed { o.Instance.Created = ago(30 * time.Second); return o }
	healedNow := func(o Observed) Observed { o.Instance.Heals, o.Instance.LastHeal = 1, ago(time.Minute); return o }
	failing := &ProbeOutcome{Results: []ProbeResult{fail("a"), fail("b"), fail(stopped)}}
	tests := []struct {
		name string
		g    Group
		o    Observed
		want MemberHealth
	}{
		{"no health check: the hypervisor's view", Group{Running: true}, probed(failing), MemberHealth{Health: HealthHealthy}},
		{"no probe ran: the hypervisor's view", checked, probed(nil), MemberHealth{Health: HealthHealthy}},
		{"one pass", checked, probed(&ProbeOutcome{Results: []ProbeResult{pass()}}), MemberHealth{Health: HealthHealthy}},
		{"unhealthy_threshold failures in a row quote the last", checked, probed(failing),
			MemberHealth{Health: HealthUnhealthy, Reason: stopped, ConsecutiveFailures: 3}},
		{"cut short after a failure: the last result, and says so", checked, probed(&ProbeOutcome{Results: []ProbeResult{fail(stopped)}, Unfinished: true}),
			MemberHealth{Health: HealthUnhealthy, Reason: stopped + " (judged on its last probe: the observation's time bound cut the check short)", ConsecutiveFailures: 1}},
		{"cut short after a pass", Group{Running: true, HealthCheck: &HealthCheck{HealthyThreshold: 3}}, probed(&ProbeOutcome{Results: []ProbeResult{fail("a"), pass()}, Unfinished: true}),
			MemberHealth{Health: HealthHealthy}},
		{"no result within the bound: not asked", checked, probed(&ProbeOutcome{Unfinished: true}),
			MemberHealth{Health: HealthUnknown, Reason: "no probe finished within the observation's time bound"}},
		{"the host could not run the probe", checked, probed(&ProbeOutcome{Err: "connection reset"}),
			MemberHealth{Health: HealthUnknown, Reason: "the host could not run the health check's probe: connection reset"}},
		{"UNKNOWN before FAILED", checked, func() Observed {
			o := probed(&ProbeOutcome{Err: "connection reset"})
			o.Missing = []string{"db-1-data.qcow2"}
			return o
		}(), MemberHealth{Health: HealthUnknown, Reason: "the host could not run the health check's probe: connection reset"}},
		{"host unreachable", checked, Observed{Name: "db-1", Unknown: true, Host: "h2", Status: StatusUnknown}, MemberHealth{Health: HealthUnknown, Reason: unreachable("h2")}},
		{"FAILED before UNHEALTHY", checked, func() Observed {
			o := probed(failing)
			o.Missing = []string{"db-1-data.qcow2"}
			return o
		}(), MemberHealth{Health: HealthFailed, Reason: "volume missing: db-1-data.qcow2"}},
		{"a stopped member is not judged by a probe", checked, func() Observed {
			o := probed(failing)
			o.Status = StatusStopped
			return o
		}(), MemberHealth{Health: HealthFailed, Reason: "shut off"}},
		{"no grace without auto_healing", checked, young(probed(failing)), MemberHealth{Health: HealthUnhealthy, Reason: stopped, ConsecutiveFailures: 3}},
		{"STARTING inside initial_delay after creation", healing, young(probed(failing)),
			MemberHealth{Health: HealthStarting, Reason: "in its grace period until 2026-11-26T12:01:30Z (auto_healing.initial_delay); probe: " + stopped, ConsecutiveFailures: 3}},
		{"STARTING inside initial_delay after a repair", healing, healedNow(probed(failing)),
			MemberHealth{Health: HealthStarting, Reason: "in its grace period until 2026-11-26T12:01:00Z (auto_healing.initial_delay); probe: " + stopped, ConsecutiveFailures: 3}},
		{"grace over: UNHEALTHY", healing, probed(failing), MemberHealth{Health: HealthUnhealthy, Reason: stopped, ConsecutiveFailures: 3}},
		{"a passing probe is HEALTHY inside the grace", healing, young(probed(&ProbeOutcome{Results: []ProbeResult{pass()}})), MemberHealth{Health: HealthHealthy}},
		{"UNKNOWN before STARTING", healing, young(probed(&ProbeOutcome{Unfinished: true})),
			MemberHealth{Health: HealthUnknown, Reason: "no probe finished within the observation's time bound"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(tt.want, tt.g.HealthOf(tt.o, healthNow)); d != "" {
				t.Errorf("HealthOf (-want +got):\n%s", d)
			}
		})
	}
}

func TestGroup_Healable(t *testing.T) {
	t.Parallel()
	g := Group{Running: true, HealthCheck: &HealthCheck{UnhealthyThreshold: 1}, AutoHealing: &AutoHealing{InitialDelay: "60s"}}
	tests := []struct {
		name string
		o    Observed
		want bool
	}{
		{"UNHEALTHY", probed(&ProbeOutcome{Results: []ProbeResult{fail("x")}}), true},
		{"HEALTHY", probed(&ProbeOutcome{Results: []ProbeResult{pass()}}), false},
		{"STARTING", func() Observed {
			o := probed(&ProbeOutcome{Results: []ProbeResult{fail("x")}})
			o.Instance.Created = ago(time.Second)
			return o
		}(), false},
		{"UNKNOWN", probed(&ProbeOutcome{Err: "down"}), false},
		{"crashed", Observed{Status: StatusStopped, StateReason: StateReasonCrashed}, true},
		{"shut down cleanly", Observed{Status: StatusStopped, StateReason: StateReasonShutDown}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, got := g.Healable(tt.o, healthNow); got != tt.want {
				t.Errorf("Healable = %t, want %t", got, tt.want)
			}
		})
	}
}

// unhealthyGroup is a group of three running members whose health check's probe says db-2's
// service is stopped.
func unhealthyGroup(heal *AutoHealing, fp *FailedPreservation) (GroupState, []Observed) {
	g := group(3)
	g.HealthCheck = &HealthCheck{Probe: Probe{Kind: ProbeExec, Command: []string{"/bin/tiny-service", "status"}}, UnhealthyThreshold: 2}
	g.AutoHealing, g.FailedPreservation = heal, fp
	obs := observed(base(), StatusRunning, 1, 2, 3)
	for i := range obs {
		obs[i].Instance.Created = ago(time.Hour)
		obs[i].Probe = &ProbeOutcome{Results: []ProbeResult{pass()}}
	}
	obs[1].Probe = &ProbeOutcome{Results: []ProbeResult{fail("exit status 1: stopped"), fail("exit status 1: tiny-service: stopped")}}
	return state(g), obs
}

// TestPlanGroup_autohealUnhealthy: autohealing repairs an UNHEALTHY member as a FAILED one,
// restarting it first and replacing it when the restart before did not help, under the same
// delays, backoff and limit; the plan quotes the probe.
func TestPlanGroup_autohealUnhealthy(t *testing.T) {
	t.Parallel()
	heal := &AutoHealing{InitialDelay: "120s", Backoff: "60s", MaxConsecutiveFailures: 3}
	tests := []struct {
		name    string
		heal    *AutoHealing
		record  func(*ManagedInstance)
		action  Action // of db-2's step; ActionNone: no step
		heals   int
		planned string // db-2's planned action as the plan shows it
		health  Health // db-2's health in the plan
	}{
		{"without auto_healing the plan shows it, and leaves it", nil, nil, ActionNone, 0,
			"NONE: UNHEALTHY: exit status 1: tiny-service: stopped", HealthUnhealthy},
		{"first repair: RESTART", heal, nil, ActionRestart, 1,
			"RESTART: autoheal (UNHEALTHY: exit status 1: tiny-service: stopped)", HealthHealthy},
		{"the restart did not help: REPLACE", heal, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 1, ago(3*time.Minute) }, ActionReplace, 2,
			"REPLACE: autoheal (UNHEALTHY: exit status 1: tiny-service: stopped)", HealthHealthy},
		{"a replace that did not help either: REPLACE again", heal, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 2, ago(4*time.Minute) }, ActionReplace, 3,
			"REPLACE: autoheal (UNHEALTHY: exit status 1: tiny-service: stopped)", HealthHealthy},
		{"inside the grace after its repair: STARTING, left alone", heal, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 1, ago(time.Minute) }, ActionNone, 1,
			"NONE: STARTING: in its grace period until 2026-11-26T12:01:00Z (auto_healing.initial_delay); probe: exit status 1: tiny-service: stopped", HealthStarting},
		{"inside the backoff", &AutoHealing{InitialDelay: "0s", Backoff: "10m", MaxConsecutiveFailures: 3}, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 1, ago(time.Minute) }, ActionNone, 1,
			"NONE: autoheal backs off until 2026-11-26T12:09:00Z after 1 failures (UNHEALTHY: exit status 1: tiny-service: stopped)", HealthUnhealthy},
		{"given up", heal, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 3, ago(3*time.Minute) }, ActionNone, 3,
			"NONE: autoheal stopped after 3 consecutive failures (UNHEALTHY: exit status 1: tiny-service: stopped); change the template or the member's config to try again", HealthUnhealthy},
		{"a member that ran well since its last repair starts with RESTART again", heal, func(mi *ManagedInstance) { mi.Heals, mi.LastHeal = 2, ago(time.Hour) }, ActionRestart, 1,
			"RESTART: autoheal (UNHEALTHY: exit status 1: tiny-service: stopped)", HealthHealthy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, obs := unhealthyGroup(tt.heal, nil)
			if tt.record != nil {
				tt.record(&obs[1].Instance)
			}
			p := PlanGroup(s, obs, Env{Now: healthNow})
			type got struct {
				Action  Action
				Heal    int
				Planned string
				Health  Health
			}
			g := got{Action: ActionNone, Planned: p.Final[1].Planned.String(), Health: p.Final[1].Health}
			for _, st := range p.Steps {
				if st.Name != "db-2" {
					t.Errorf("step for %s, a healthy member: %+v", st.Name, st.Planned())
					continue
				}
				g.Action, g.Heal = st.Action, st.Heal
			}
			want := got{Action: tt.action, Planned: tt.planned, Health: tt.health}
			if tt.action != ActionNone {
				want.Heal = tt.heals
			}
			if d := cmp.Diff(want, g); d != "" {
				t.Errorf("db-2 (-want +got):\n%s", d)
			}
			for _, i := range []int{0, 2} {
				if f := p.Final[i]; f.Health != HealthHealthy || f.Planned.String() != "NONE" {
					t.Errorf("%s: %s, %s", f.Name, f.Health, f.Planned)
				}
			}
		})
	}
}

// TestPlanGroup_autohealUnhealthyWithDriftThatNeedsMore: the first repair of an UNHEALTHY member
// is a restart, unless its drift needs a replacement (its boot disk swapped on the host).
func TestPlanGroup_autohealUnhealthyWithDriftThatNeedsMore(t *testing.T) {
	t.Parallel()
	s, obs := unhealthyGroup(&AutoHealing{InitialDelay: "0s"}, nil)
	obs[1].Attached = slices.Clone(obs[1].Instance.Current.Disks)
	for i := range obs[1].Attached {
		if obs[1].Attached[i].DeviceName == BootDeviceName {
			obs[1].Attached[i].Source = "/srv/other.qcow2"
		}
	}
	p := PlanGroup(s, obs, Env{Now: healthNow})
	if len(p.Steps) != 1 || p.Steps[0].Action != ActionReplace || p.Steps[0].Heal != 1 {
		t.Fatalf("steps %+v", p.Steps)
	}
}

// TestRestartHeal_recordsItsCount: a heal that restarts the member writes its count and the time
// it healed in the member's final record too, so that the next heal replaces.
func TestRestartHeal_recordsItsCount(t *testing.T) {
	t.Parallel()
	s, obs := unhealthyGroup(&AutoHealing{InitialDelay: "0s"}, nil)
	p := PlanGroup(s, obs, Env{Now: healthNow})
	var op *Operation
	for _, w := range p.Waves {
		for i := range w.Ops {
			if w.Ops[i].Name == "db-2" {
				op = &w.Ops[i]
			}
		}
	}
	if op == nil || op.Kind != OpRestart {
		t.Fatalf("no restart of db-2 in %+v", p.Waves)
	}
	type written struct {
		Kind     TaskKind
		Heals    int
		LastHeal bool
	}
	var got []written
	for _, t := range op.Tasks {
		if t.Kind == TaskMark || t.Kind == TaskRecord || t.Kind == TaskDefineNext {
			got = append(got, written{t.Kind, t.Record.Heals, t.Stamp.LastHeal})
		}
	}
	want := []written{{TaskMark, 1, true}, {TaskDefineNext, 1, true}, {TaskRecord, 1, true}}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("records written (-want +got):\n%s", d)
	}
}

// TestPreserveMembers_unhealthy: failed_instance_preservation and a WHEN_FAILED config keep an
// UNHEALTHY member as they keep a FAILED one, instead of healing it; a STARTING one is not failed.
func TestPreserveMembers_unhealthy(t *testing.T) {
	t.Parallel()
	fp := &FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "1h"}
	tests := []struct {
		name     string
		fp       *FailedPreservation
		config   string
		starting bool
		want     string // db-2's preservation after the plan
		planned  string
	}{
		{"failed_instance_preservation keeps it", fp, "", false, PreserveAuto, "PRESERVE: preserved (AUTO) for 1h0m0s"},
		{"a WHEN_FAILED config keeps it", nil, PreserveWhenFailed, false, PreserveWhenFailed, "PRESERVE: preserved (WHEN_FAILED) for 24h0m0s"},
		{"a STARTING member is not failed", fp, "", true, "", "NONE: STARTING: in its grace period until 2026-11-26T12:01:30Z (auto_healing.initial_delay); probe: exit status 1: tiny-service: stopped"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s, obs := unhealthyGroup(&AutoHealing{InitialDelay: "120s"}, tt.fp)
			if tt.config != "" {
				e := DefaultConfigEntry()
				e.Preserve = tt.config
				s.Configs = map[string]ConfigEntry{"db-2": e}
			}
			if tt.starting {
				obs[1].Instance.Created = ago(30 * time.Second)
			}
			p := PlanGroup(s, obs, Env{Now: healthNow})
			if got := p.Preservation["db-2"].Kind; got != tt.want {
				t.Errorf("preservation %q, want %q", got, tt.want)
			}
			for _, st := range p.Steps {
				if st.Name == "db-2" && st.Heal > 0 {
					t.Errorf("db-2 is healed: %s", st.Planned())
				}
			}
			if got := p.Final[1].Planned.String(); got != tt.planned {
				t.Errorf("planned %q, want %q", got, tt.planned)
			}
			// A preservation that starts is written by the apply: the plan is not idle.
			if p.Idle() != (tt.want == "") {
				t.Errorf("idle %t with db-2 preserved as %q", p.Idle(), tt.want)
			}
		})
	}
}

// TestPickScaleIn_unhealthyFirst: a scale-in removes an UNHEALTHY member before healthy ones.
func TestPickScaleIn_unhealthyFirst(t *testing.T) {
	t.Parallel()
	s, obs := unhealthyGroup(nil, nil)
	s.Group.TargetSize = 2
	p := PlanGroup(s, obs, Env{Now: healthNow})
	if d := cmp.Diff([]string{"db-2"}, p.Delete); d != "" {
		t.Fatalf("deleted (-want +got):\n%s", d)
	}
	if got, want := p.DeleteReasons["db-2"], "scale-in (unhealthy: exit status 1: tiny-service: stopped)"; got != want {
		t.Errorf("reason %q, want %q", got, want)
	}
}

func TestHealthCheck_ObservationDone(t *testing.T) {
	t.Parallel()
	hc := HealthCheck{HealthyThreshold: 2, UnhealthyThreshold: 3}
	tests := []struct {
		name    string
		results []ProbeResult
		want    bool
	}{
		{"nothing yet", nil, false},
		{"a first pass", []ProbeResult{pass()}, true},
		{"a failure", []ProbeResult{fail("a")}, false},
		{"one pass after a failure is not enough", []ProbeResult{fail("a"), pass()}, false},
		{"healthy_threshold passes after a failure", []ProbeResult{fail("a"), pass(), pass()}, true},
		{"unhealthy_threshold failures", []ProbeResult{fail("a"), fail("b"), fail("c")}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := hc.ObservationDone(tt.results); got != tt.want {
				t.Errorf("ObservationDone = %t, want %t", got, tt.want)
			}
		})
	}
}

func TestGroup_Checks(t *testing.T) {
	t.Parallel()
	g := Group{Running: true, HealthCheck: &HealthCheck{}}
	adopted := probed(nil)
	adopted.Instance.Template.Adopted = true
	tests := []struct {
		name string
		g    Group
		o    Observed
		want bool
	}{
		{"a running member", g, probed(nil), true},
		{"no health check", Group{Running: true}, probed(nil), false},
		{"stopped", g, Observed{Status: StatusStopped}, false},
		{"paused", g, Observed{Status: StatusPaused}, false},
		{"its host does not answer", g, Observed{Status: StatusRunning, Unknown: true}, false},
		{"a domain a config adopts", g, Observed{Status: StatusRunning, Unmanaged: true}, false},
		{"an adopted member", g, adopted, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := tt.g.Checks(tt.o); got != tt.want {
				t.Errorf("Checks = %t, want %t", got, tt.want)
			}
		})
	}
}
