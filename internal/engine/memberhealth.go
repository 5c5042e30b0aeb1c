package engine

import (
	"fmt"
	"time"
)

// MemberHealth is a member's health as users see it (instances[*].health, the data source), with
// why and the run of failed probes the observation saw.
type MemberHealth struct {
	// Health is HEALTHY, STARTING, UNHEALTHY, FAILED or UNKNOWN.
	Health Health
	// Reason says why the member is not HEALTHY: the hypervisor's view for FAILED, the probe's own
	// words for UNHEALTHY and STARTING; "" when HEALTHY.
	Reason string
	// ConsecutiveFailures is how many probes failed in a row, up to the last one the observation
	// ran; 0 without a probe.
	ConsecutiveFailures int
}

// Grace is how long after a member was created or last repaired a probe that does not pass
// leaves it STARTING rather than UNHEALTHY: auto_healing's initial_delay, or none without
// auto_healing (with nothing to act on UNHEALTHY, a grace would only hide what the probe says).
func (g Group) Grace() time.Duration {
	if g.AutoHealing == nil {
		return 0
	}
	return durationOr(g.AutoHealing.InitialDelay, DefaultInitialDelay)
}

// graceUntil is when the member's grace ends: Grace after it was created or last repaired,
// whichever is later; zero when neither is known or there is no grace.
func (g Group) graceUntil(mi ManagedInstance) time.Time {
	since := max(mi.Created, mi.LastHeal)
	grace := g.Grace()
	if since <= 0 || grace <= 0 {
		return time.Time{}
	}
	return time.UnixMilli(since).Add(grace)
}

// Checks reports whether the group's health check judges the member, which an observation then
// probes: a RUNNING member of the group, on a host that answered. A domain adopted by a config
// runs its own image, not the template's, and the template's health check does not judge it.
func (g Group) Checks(o Observed) bool {
	return g.HealthCheck != nil && o.Status == StatusRunning && !o.Unknown && !o.Unmanaged && !o.Instance.Template.Adopted
}

// HealthOf judges a member at now, in this order: UNKNOWN (its host cannot be reached, or could
// not be asked to probe it), FAILED (the hypervisor's view, HypervisorHealth), STARTING (its probe has not
// passed and it is inside its grace), UNHEALTHY (its probe fails), HEALTHY.
//
// The probe counts only for a member the group's health check judges (Checks) that the
// observation probed (Observed.Probe); any other member is judged by the hypervisor's view
// alone. A sequence of probes that reached neither threshold (the observation's time bound cut it
// short) is judged by its last result: passed is HEALTHY, failed is UNHEALTHY and the reason says
// it was cut short. A member the bound left with no result at all was not asked: UNKNOWN, unless
// the hypervisor already says it FAILED.
func (g Group) HealthOf(o Observed, now time.Time) MemberHealth {
	health, why := HypervisorHealth(o, g.Running)
	p := o.Probe
	probed := p != nil && g.Checks(o)
	switch {
	case health == HealthUnknown:
		return MemberHealth{Health: health, Reason: why}
	case probed && p.Err != "":
		return MemberHealth{Health: HealthUnknown, Reason: "the host could not run the health check's probe: " + p.Err}
	case health != HealthHealthy || !probed:
		return MemberHealth{Health: health, Reason: why}
	case len(p.Results) == 0:
		return MemberHealth{Health: HealthUnknown, Reason: "no probe finished within the observation's time bound"}
	}
	hc := g.HealthCheck.WithDefaults()
	v := hc.Judge(p.Results)
	out := MemberHealth{Health: v.Health, Reason: v.Reason, ConsecutiveFailures: v.ConsecutiveFailures}
	if v.Health == "" {
		// Undecided: the last result says it.
		last := p.Results[len(p.Results)-1]
		if last.OK {
			return MemberHealth{Health: HealthHealthy}
		}
		out.Health = HealthUnhealthy
		if p.Unfinished {
			// No count in the words: plans show them, and the apply's own plan, which probes
			// again, must show the same.
			out.Reason = v.Reason + " (judged on its last probe: the observation's time bound cut the check short)"
		}
	}
	if out.Health == HealthHealthy {
		return MemberHealth{Health: HealthHealthy}
	}
	if until := g.graceUntil(o.Instance); now.Before(until) {
		out.Health = HealthStarting
		out.Reason = fmt.Sprintf("in its grace period until %s (auto_healing.initial_delay); probe: %s", until.UTC().Format(time.RFC3339), out.Reason)
	}
	return out
}

// Healable tells whether autohealing repairs the member now, with its health: a FAILED member
// that crashed, failed to start, was paused by an I/O error or lost a volume (crashHealable), or
// an UNHEALTHY one. A member shut down cleanly is only started, as any drift; a STARTING or
// UNKNOWN one is left alone.
func (g Group) Healable(o Observed, now time.Time) (MemberHealth, bool) {
	mh := g.HealthOf(o, now)
	switch mh.Health {
	case HealthFailed:
		return mh, crashHealable(o, g.Running)
	case HealthUnhealthy:
		return mh, true
	case HealthHealthy, HealthStarting, HealthUnknown:
		// Nothing to repair, a probe still inside its grace, or a host that could not be asked.
	}
	return mh, false
}

// failedForPreservation reports whether failed-instance preservation counts the member as failed:
// as autohealing would repair it, or in a crashed state, or UNHEALTHY.
func (g Group) failedForPreservation(o Observed, now time.Time) bool {
	_, healable := g.Healable(o, now)
	return healable || o.Status == StatusFailed
}

// HealWhy is what a heal's reasons and an unhealed member's plan say of its health: the
// hypervisor's words for a FAILED member, "UNHEALTHY: <probe>" for an UNHEALTHY one.
func (mh MemberHealth) HealWhy() string {
	if mh.Health == HealthUnhealthy {
		return string(HealthUnhealthy) + ": " + mh.Reason
	}
	return mh.Reason
}

// HealAction is the repair autohealing makes on its attempt-th consecutive try: a FAILED member
// is replaced (its domain is gone or broken); an UNHEALTHY one is restarted first, the least
// repair that gives its service a clean boot, and replaced (keeping its preserved disks) when the
// restart before did not help.
func (mh MemberHealth) HealAction(attempt int) Action {
	if mh.Health == HealthUnhealthy && attempt <= 1 {
		return ActionRestart
	}
	return ActionReplace
}

// Shown is what the plan of a member it leaves alone says of its health, after NONE: the
// health and the probe's words for a member its probe judged (UNHEALTHY, STARTING, or UNKNOWN
// when its host could not run the probe); "" otherwise, as before health checks.
func (mh MemberHealth) Shown() string {
	switch mh.Health {
	case HealthUnhealthy, HealthStarting, HealthUnknown:
		return string(mh.Health) + ": " + mh.Reason
	case HealthHealthy, HealthFailed:
		// As before health checks: the member's health field says FAILED, and a plan that
		// repairs or starts it gives its own reason.
	}
	return ""
}

// ObservationDone tells whether an observation's sequence of probes of a member (oldest first)
// has found what it looks for: a verdict (Judge), or a first probe that passed. A first pass makes
// the member HEALTHY whatever healthy_threshold says: nothing remembers an earlier failure
// between observations, so the threshold counts the passes that follow a failure of the same
// sequence (and a rollout's wait for ready), and a healthy member costs one probe.
func (hc HealthCheck) ObservationDone(results []ProbeResult) bool {
	if len(results) == 1 && results[0].OK {
		return true
	}
	return hc.Judge(results).Health != ""
}
