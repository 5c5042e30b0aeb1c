package engine

import "testing"

func TestHealth(t *testing.T) {
	tests := []struct {
		name        string
		o           Observed
		running     bool
		health, why string
	}{
		{"running as wanted", Observed{Status: StatusRunning}, true, HealthHealthy, ""},
		{"stopped as wanted", Observed{Status: StatusStopped}, false, HealthHealthy, ""},
		{"shut off behind our back", Observed{Status: StatusStopped, StateReason: "destroyed"}, true, HealthFailed, "shut off (destroyed)"},
		{"guest crashed and stopped", Observed{Status: StatusStopped, StateReason: "crashed"}, true, HealthFailed, "shut off (crashed)"},
		{"crashed state", Observed{Status: StatusFailed, StateReason: "crashed"}, true, HealthFailed, "crashed"},
		{"paused by an I/O error", Observed{Status: StatusPaused, StateReason: "I/O error"}, true, HealthFailed, "paused by an I/O error"},
		{"paused by a user", Observed{Status: StatusPaused, StateReason: "paused by a user"}, true, HealthHealthy, ""},
		{"boot volume gone", Observed{Status: StatusRunning, Missing: []string{"db-1-boot.qcow2"}}, true, HealthFailed, "volume missing: db-1-boot.qcow2"},
		{"definition missing", Observed{Status: StatusMissing}, true, HealthFailed, "definition missing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, why := Health(tt.o, tt.running)
			if h != tt.health || why != tt.why {
				t.Fatalf("Health = %s %q, want %s %q", h, why, tt.health, tt.why)
			}
		})
	}
}

func TestHealable(t *testing.T) {
	tests := []struct {
		name string
		o    Observed
		want bool
	}{
		{"healthy", Observed{Status: StatusRunning}, false},
		{"QEMU killed", Observed{Status: StatusStopped, StateReason: "crashed"}, true},
		{"failed to start", Observed{Status: StatusStopped, StateReason: "failed to start"}, true},
		{"crashed state", Observed{Status: StatusFailed, StateReason: "crashed"}, true},
		{"paused by an I/O error", Observed{Status: StatusPaused, StateReason: "I/O error"}, true},
		{"a volume gone", Observed{Status: StatusRunning, Missing: []string{"x"}}, true},
		{"powered off by an operator", Observed{Status: StatusStopped, StateReason: "destroyed"}, false},
		{"shut down cleanly", Observed{Status: StatusStopped, StateReason: "shut down"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Healable(tt.o, true); got != tt.want {
				t.Fatalf("Healable = %t, want %t", got, tt.want)
			}
		})
	}
}
