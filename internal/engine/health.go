package engine

import (
	"fmt"
	"strings"
)

// Health of a member, as the host shows it.
const (
	HealthHealthy = "HEALTHY"
	HealthFailed  = "FAILED"
	HealthUnknown = "UNKNOWN"
)

// Health judges a member from what the host shows, and says why: FAILED when its definition is
// missing, when it crashed, when it is shut off or paused by an I/O error while the group wants
// it running, or when a volume it needs is gone; HEALTHY otherwise. A member the group wants
// stopped is healthy when stopped. A member whose host cannot be reached is UNKNOWN.
func Health(o Observed, running bool) (health, why string) {
	reason := func(what string) string {
		if o.StateReason != "" && o.StateReason != what {
			return fmt.Sprintf("%s (%s)", what, o.StateReason)
		}
		return what
	}
	switch {
	case o.Unknown:
		return HealthUnknown, unreachable(o.Host)
	case o.Status == StatusMissing:
		return HealthFailed, "definition missing"
	case len(o.Missing) > 0:
		return HealthFailed, "volume missing: " + strings.Join(o.Missing, ", ")
	case o.Status == StatusFailed:
		return HealthFailed, reason("crashed")
	case running && o.Status == StatusStopped:
		return HealthFailed, reason("shut off")
	case o.Status == StatusPaused && o.StateReason == "I/O error":
		return HealthFailed, "paused by an I/O error"
	}
	return HealthHealthy, ""
}

// Healable tells whether autohealing replaces a failed member: one that crashed (its guest or
// its QEMU process), failed to start, was paused by an I/O error or lost a volume. A member that
// was shut down or powered off cleanly (by an operator, or by an earlier running = false) is
// failed while the group wants it running, but starting it is the least repair, as for any drift.
func Healable(o Observed, running bool) bool {
	health, _ := Health(o, running)
	if health != HealthFailed {
		return false
	}
	if o.Status == StatusStopped && len(o.Missing) == 0 {
		switch o.StateReason {
		case "crashed", "failed to start":
			return true
		}
		return false
	}
	return true
}
