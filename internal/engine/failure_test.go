package engine

import "testing"

func TestOutcomeOfFailure(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		kind           OpKind
		down, notReady bool
		want           FailedOutcome
	}{
		"create fails before anything runs":         {kind: OpCreate, want: FailedNotCreated},
		"create fails after its domain was defined": {kind: OpCreate, down: true, want: FailedNotCreated},
		"create not ready":                          {kind: OpCreate, notReady: true, want: FailedNotReady},
		"replace fails before the stop":             {kind: OpReplace, want: FailedKept},
		"replace fails after the stop":              {kind: OpReplace, down: true, want: FailedDown},
		"restart not ready":                         {kind: OpRestart, notReady: true, want: FailedNotReady},
		"live change fails":                         {kind: OpLive, want: FailedKept},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := OutcomeOfFailure(tt.kind, tt.down, tt.notReady); got != tt.want {
				t.Fatalf("OutcomeOfFailure(%v, down=%v, notReady=%v) = %d, want %d", tt.kind, tt.down, tt.notReady, got, tt.want)
			}
		})
	}
}

// TestStopsBy: the plan's warning reads how members stop from the tasks the plan runs, so that
// it says "power off" exactly when shutdown_timeout = "0s" makes the stop a power off.
func TestStopsBy(t *testing.T) {
	t.Parallel()
	noSeed := Env{Volumes: map[string]bool{"db-1-boot.qcow2": true, "db-1-data.qcow2": true}}
	replace := func(timeout string) GroupPlan {
		g := group(1)
		g.ShutdownTimeout = timeout
		g.Template.BootDisk.SourceImage = "/images/new.qcow2"
		return PlanGroup(state(g), []Observed{onHost(nil)}, noSeed)
	}
	tests := map[string]struct {
		plan GroupPlan
		want StopMethod
	}{
		"replace with the default timeout": {replace(""), StopGraceful},
		"replace with 60s":                 {replace("60s"), StopGraceful},
		"replace with 0s":                  {replace("0s"), StopPowerOff},
		"a create stops nothing":           {PlanGroup(state(group(1)), nil, Env{}), StopNone},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if got := tt.plan.StopsBy(); got != tt.want {
				t.Fatalf("StopsBy() = %d, want %d", got, tt.want)
			}
		})
	}
}
