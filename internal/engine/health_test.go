package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestHypervisorHealth(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		o       Observed
		running bool
		health  Health
		why     string
	}{
		{"running as wanted", Observed{Status: StatusRunning}, true, HealthHealthy, ""},
		{"stopped as wanted", Observed{Status: StatusStopped}, false, HealthHealthy, ""},
		{"shut off behind our back", Observed{Status: StatusStopped, StateReason: StateReasonDestroyed}, true, HealthFailed, "shut off (destroyed)"},
		{"guest crashed and stopped", Observed{Status: StatusStopped, StateReason: StateReasonCrashed}, true, HealthFailed, "shut off (crashed)"},
		{"crashed state", Observed{Status: StatusFailed, StateReason: StateReasonCrashed}, true, HealthFailed, "crashed"},
		{"paused by an I/O error", Observed{Status: StatusPaused, StateReason: StateReasonIOError}, true, HealthFailed, "paused by an I/O error"},
		{"paused by a user", Observed{Status: StatusPaused, StateReason: StateReasonPausedByUser}, true, HealthHealthy, ""},
		{"paused by QEMU, no reason (a broken KVM)", Observed{Status: StatusPaused, StateReason: StateReasonPausedUnknown}, true, HealthFailed, pausedUnknownWhy},
		{"paused by QEMU while the group wants it stopped", Observed{Status: StatusPaused, StateReason: StateReasonPausedUnknown}, false, HealthHealthy, ""},
		{"boot volume gone", Observed{Status: StatusRunning, Missing: []string{"db-1-boot.qcow2"}}, true, HealthFailed, "volume missing: db-1-boot.qcow2"},
		{"definition missing", Observed{Status: StatusMissing}, true, HealthFailed, "definition missing"},
		{"crashed state with another reason", Observed{Status: StatusFailed, StateReason: StateReasonWatchdog}, true, HealthFailed, "crashed (watchdog)"},
		{"crashed state with no reason", Observed{Status: StatusFailed}, true, HealthFailed, "crashed"},
		{"shut off with no reason", Observed{Status: StatusStopped}, true, HealthFailed, "shut off"},
		{"stopped by the daemon", Observed{Status: StatusStopped, StateReason: StateReasonStoppedByDaemon}, true, HealthFailed, "shut off (stopped by the daemon)"},
		{"paused by a watchdog", Observed{Status: StatusPaused, StateReason: StateReasonWatchdog}, true, HealthHealthy, ""},
		{"host unreachable", Observed{Unknown: true, Host: "h2", Status: StatusUnknown}, true, HealthUnknown, unreachable("h2")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h, why := HypervisorHealth(tt.o, tt.running)
			if d := cmp.Diff([2]string{string(tt.health), tt.why}, [2]string{string(h), why}); d != "" {
				t.Errorf("HypervisorHealth (-want +got):\n%s", d)
			}
		})
	}
}

func TestHealable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		o    Observed
		want bool
	}{
		{"healthy", Observed{Status: StatusRunning}, false},
		{"QEMU killed", Observed{Status: StatusStopped, StateReason: StateReasonCrashed}, true},
		{"failed to start", Observed{Status: StatusStopped, StateReason: StateReasonFailedToStart}, true},
		{"crashed state", Observed{Status: StatusFailed, StateReason: StateReasonCrashed}, true},
		{"paused by an I/O error", Observed{Status: StatusPaused, StateReason: StateReasonIOError}, true},
		{"paused by QEMU, no reason", Observed{Status: StatusPaused, StateReason: StateReasonPausedUnknown}, true},
		{"a volume gone", Observed{Status: StatusRunning, Missing: []string{"x"}}, true},
		{"powered off by an operator", Observed{Status: StatusStopped, StateReason: StateReasonDestroyed}, false},
		{"shut down cleanly", Observed{Status: StatusStopped, StateReason: StateReasonShutDown}, false},
		{"stopped by the daemon", Observed{Status: StatusStopped, StateReason: StateReasonStoppedByDaemon}, false},
		{"stopped with a volume gone", Observed{Status: StatusStopped, Missing: []string{"x"}}, true},
		{"paused by a user", Observed{Status: StatusPaused, StateReason: StateReasonPausedByUser}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if _, got := (Group{Running: true}).Healable(tt.o, time.Time{}); got != tt.want {
				t.Errorf("Healable = %v, want %v", got, tt.want)
			}
		})
	}
}

// TestStateReason_String is the words plans and health_reason show for each reason.
func TestStateReason_String(t *testing.T) {
	t.Parallel()
	got := map[StateReason]string{}
	for r := StateReasonNone; r <= StateReasonPausedUnknown+1; r++ {
		got[r] = r.String()
	}
	want := map[StateReason]string{
		StateReasonNone: "", StateReasonShutDown: "shut down", StateReasonDestroyed: "destroyed", StateReasonCrashed: "crashed",
		StateReasonFailedToStart: "failed to start", StateReasonStoppedByDaemon: "stopped by the daemon", StateReasonIOError: "I/O error",
		StateReasonPausedByUser: "paused by a user", StateReasonWatchdog: "watchdog",
		StateReasonPausedUnknown: "no reason given", StateReasonPausedUnknown + 1: "",
	}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("String (-want +got):\n%s", d)
	}
}
