package provider

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/group"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestMembersOf_probedHealth: the resource's instances show the health a member's probe judges,
// and, for a member its probe judges, why in its planned action, as the plan does.
func TestMembersOf_probedHealth(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)
	s := engine.GroupState{Group: engine.Group{Name: "db", Running: true, HealthCheck: &engine.HealthCheck{UnhealthyThreshold: 2}}}
	failing := &engine.ProbeOutcome{Results: []engine.ProbeResult{{Reason: "exit status 1: a"}, {Reason: "exit status 1: tiny-service: stopped"}}}
	o := reconcile.Observation{At: at, Observed: []engine.Observed{
		{Name: "db-1", Index: 1, Status: engine.StatusRunning, Probe: &engine.ProbeOutcome{Results: []engine.ProbeResult{{OK: true}}}},
		{Name: "db-2", Index: 2, Status: engine.StatusRunning, Probe: failing},
		{Name: "db-3", Index: 3, Status: engine.StatusStopped, StateReason: engine.StateReasonCrashed},
	}}
	type row struct {
		Health  engine.Health
		Planned string
	}
	var got []row
	for _, m := range group.MembersOf(o, s, true) {
		got = append(got, row{m.Health, m.Planned.String()})
	}
	want := []row{
		{engine.HealthHealthy, "NONE"},
		{engine.HealthUnhealthy, "NONE: UNHEALTHY: exit status 1: tiny-service: stopped"},
		{engine.HealthFailed, "NONE"},
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("members (-want +got):\n%s", d)
	}
}

// TestConsecutiveFailures: the data source's consecutive_failures is the run of failed probes of
// a probed member, else the autoheal repairs started in a row.
func TestConsecutiveFailures(t *testing.T) {
	t.Parallel()
	checked := engine.Group{Running: true, HealthCheck: &engine.HealthCheck{UnhealthyThreshold: 3}}
	failing := &engine.ProbeOutcome{Results: []engine.ProbeResult{{OK: true}, {Reason: "x"}, {Reason: "y"}}}
	tests := []struct {
		name string
		g    engine.Group
		o    engine.Observed
		want int
	}{
		{"probed: the run of failed probes", checked, engine.Observed{Status: engine.StatusRunning, Probe: failing, Instance: engine.ManagedInstance{Heals: 1}}, 2},
		{"probed and passing", checked, engine.Observed{Status: engine.StatusRunning, Probe: &engine.ProbeOutcome{Results: []engine.ProbeResult{{OK: true}}}, Instance: engine.ManagedInstance{Heals: 1}}, 0},
		{"not probed: the repairs in a row", checked, engine.Observed{Status: engine.StatusStopped, StateReason: engine.StateReasonCrashed, Instance: engine.ManagedInstance{Heals: 2}}, 2},
		{"no health check", engine.Group{Running: true}, engine.Observed{Status: engine.StatusRunning, Instance: engine.ManagedInstance{Heals: 1}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if got := group.ConsecutiveFailures(tt.g, tt.o, tt.g.HealthOf(tt.o, time.Time{})); got != tt.want {
				t.Errorf("consecutive_failures %d, want %d", got, tt.want)
			}
		})
	}
}

// TestObservationKey_healthCheck: a plan that changes the health check does not judge members by
// the probes of the observation a Read made with another check.
func TestObservationKey_healthCheck(t *testing.T) {
	t.Parallel()
	s := engine.GroupState{Group: engine.Group{Name: "db", Base: "db"}, Pool: "p"}
	exec := s
	exec.Group.HealthCheck = &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}}}
	exec2 := s
	exec2.Group.HealthCheck = &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeExec, Command: []string{"/bin/tiny-service", "status"}}}
	agent := s
	agent.Group.HealthCheck = &engine.HealthCheck{Probe: engine.Probe{Kind: engine.ProbeGuestAgent}}
	if providerdata.KeyOf(s) == providerdata.KeyOf(exec) || providerdata.KeyOf(exec) == providerdata.KeyOf(agent) {
		t.Error("another health check, the same observation key")
	}
	if providerdata.KeyOf(exec) != providerdata.KeyOf(exec2) {
		t.Error("the same health check, another observation key")
	}
}
