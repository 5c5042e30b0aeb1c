package engine

import (
	"fmt"
	"strings"
)

// Health is a member's health as users see it (instances[*].health, the data source). The
// hypervisor's view (HypervisorHealth) gives HEALTHY, FAILED or UNKNOWN; a member's probe adds
// UNHEALTHY and STARTING (Group.HealthOf).
type Health string

// Health values.
const (
	HealthHealthy = Health("HEALTHY")
	HealthFailed  = Health("FAILED")
	HealthUnknown = Health("UNKNOWN")
	// HealthUnhealthy: the domain runs, and its health check's probe fails.
	HealthUnhealthy = Health("UNHEALTHY")
	// HealthStarting: the domain runs, inside its grace period, and its probe has not passed yet.
	HealthStarting = Health("STARTING")
)

// StateReason is why a member is in its state, as its host tells it: the backend converts its
// own codes to these once, and the engine decides on them; the words are only for the plan.
type StateReason int

// Reasons for a member's state. StateReasonNone is an ordinary one, or one not worth telling.
const (
	StateReasonNone StateReason = iota
	// StateReasonShutDown: the guest shut down (from inside, or on an ACPI request).
	StateReasonShutDown
	// StateReasonDestroyed: the domain was powered off from outside (virsh destroy).
	StateReasonDestroyed
	// StateReasonCrashed: the guest or its QEMU process crashed.
	StateReasonCrashed
	// StateReasonFailedToStart: the domain failed to start.
	StateReasonFailedToStart
	// StateReasonStoppedByDaemon: the host's daemon stopped the domain.
	StateReasonStoppedByDaemon
	// StateReasonIOError: the domain was paused by an I/O error (a full disk, say).
	StateReasonIOError
	// StateReasonPausedByUser: someone paused the domain.
	StateReasonPausedByUser
	// StateReasonWatchdog: the domain's watchdog paused it.
	StateReasonWatchdog
	// StateReasonPausedUnknown: QEMU stopped the domain by itself and libvirt does not know why.
	// A host whose KVM cannot run guests does this to every kvm domain a few seconds after its
	// start ("KVM internal error ... emulation failure" in its QEMU log).
	StateReasonPausedUnknown
)

var stateReasonWords = [...]string{"", "shut down", "destroyed", "crashed", "failed to start", "stopped by the daemon",
	"I/O error", "paused by a user", "watchdog", "no reason given"}

// String says the reason in words, as plans and health_reason show it; "" for StateReasonNone.
func (r StateReason) String() string {
	if r < 0 || int(r) >= len(stateReasonWords) {
		return ""
	}
	return stateReasonWords[r]
}

// HypervisorHealth is the hypervisor's view of a member, and why: FAILED when its definition is missing,
// when it crashed, when it is shut off, paused by an I/O error or paused by QEMU for no reason
// libvirt knows while the group wants it running, or when a volume it needs is gone; HEALTHY otherwise. A member the group wants stopped
// is healthy when stopped. A member whose host cannot be reached is UNKNOWN. Group.HealthOf
// judges a member as users see it, its health check's probe included; this is its first part.
func HypervisorHealth(o Observed, running bool) (health Health, why string) {
	// told adds the host's reason to what the member is, unless it says the same.
	told := func(what string, same StateReason) string {
		if o.StateReason != StateReasonNone && o.StateReason != same {
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
		return HealthFailed, told("crashed", StateReasonCrashed)
	case running && o.Status == StatusStopped:
		return HealthFailed, told("shut off", StateReasonNone)
	case o.Status == StatusPaused && o.StateReason == StateReasonIOError:
		return HealthFailed, "paused by an I/O error"
	case running && o.Status == StatusPaused && o.StateReason == StateReasonPausedUnknown:
		// Nobody asked for this pause (a user's, a watchdog's, an I/O error's have reasons): a
		// member left HEALTHY here would be started by every plan and pause again, unreported.
		return HealthFailed, pausedUnknownWhy
	}
	return HealthHealthy, ""
}

// pausedUnknownWhy is the health reason of a member QEMU paused by itself, naming the usual cause.
const pausedUnknownWhy = `paused by QEMU, no reason given (on a host whose KVM cannot run guests every kvm member pauses so at once, its QEMU log saying "KVM internal error": use domain_type = "qemu" there)`

// crashHealable tells whether autohealing replaces a FAILED member: one that crashed (its guest
// or its QEMU process), failed to start, was paused by an I/O error or lost a volume. A member
// that was shut down or powered off cleanly (by an operator, or by an earlier running = false) is
// failed while the group wants it running, but starting it is the least repair, as for any drift.
func crashHealable(o Observed, running bool) bool {
	health, _ := HypervisorHealth(o, running)
	if health != HealthFailed {
		return false
	}
	if o.Status == StatusStopped && len(o.Missing) == 0 {
		return o.StateReason == StateReasonCrashed || o.StateReason == StateReasonFailedToStart
	}
	return true
}
