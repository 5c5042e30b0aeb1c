package engine

import (
	"time"
)

// ProbeKind is which probe a health check runs.
type ProbeKind string

// Probe kinds: template.health_check holds exactly one.
const (
	// ProbeGuestAgent pings the QEMU guest agent through libvirt.
	ProbeGuestAgent ProbeKind = "guest_agent"
	// ProbeExec runs Command in the guest through the agent; healthy on exit status 0.
	ProbeExec ProbeKind = "exec"
	// ProbeTCP connects to Port of the member's address from where Terraform runs.
	ProbeTCP ProbeKind = "tcp"
	// ProbeHTTP sends GET Path to Port of the member's address; healthy on ExpectStatus.
	ProbeHTTP ProbeKind = "http"
)

// Probe is one probe of a health check.
type Probe struct {
	Kind         ProbeKind
	Command      []string // exec
	Port         int      // tcp, http
	Path         string   // http; "/" when empty
	ExpectStatus int      // http; 200 when 0
}

// HealthCheck is template.health_check: how a member's health is judged from inside the guest.
// Changing it changes no member (it is not part of the template's revision).
type HealthCheck struct {
	Probe              Probe
	Interval           time.Duration
	Timeout            time.Duration
	HealthyThreshold   int
	UnhealthyThreshold int
}

// Defaults of the health_check block.
const (
	DefaultProbeInterval      = 10 * time.Second
	DefaultProbeTimeout       = 5 * time.Second
	DefaultHealthyThreshold   = 1
	DefaultUnhealthyThreshold = 3
)

// ProbeResult is the outcome of one probe of a running member.
type ProbeResult struct {
	// OK is true when the probe passed.
	OK bool
	// Reason says why it failed, quoting the probe (the first 1 KiB of an exec's output, an HTTP
	// status, a connection error); "" when it passed.
	Reason string
	// At is when the probe ended.
	At time.Time
}

// ProbeOutcome is what the probes of one member found while it was observed: the results of
// one sequence of probes, oldest first. Nil on Observed when no probe ran (no health check, the
// member does not run, or its host did not answer).
type ProbeOutcome struct {
	Results []ProbeResult
	// Unfinished is true when the sequence was cut by the observation's time bound before it
	// reached either threshold.
	Unfinished bool
	// Err is why the member's host could not be asked to probe it (backend.Probe's error):
	// the member is UNKNOWN. "" when it could.
	Err string
}

// On failure of a rollout's wave (update_policy.on_failure).
const (
	OnFailureStop     = "STOP"
	OnFailureRollback = "ROLLBACK"
)

// OnFailureValues lists the allowed values of update_policy.on_failure.
var OnFailureValues = []string{OnFailureStop, OnFailureRollback}

// WithDefaults fills what the configuration left unset.
func (hc HealthCheck) WithDefaults() HealthCheck {
	if hc.Interval <= 0 {
		hc.Interval = DefaultProbeInterval
	}
	if hc.Timeout <= 0 {
		hc.Timeout = DefaultProbeTimeout
	}
	if hc.HealthyThreshold <= 0 {
		hc.HealthyThreshold = DefaultHealthyThreshold
	}
	if hc.UnhealthyThreshold <= 0 {
		hc.UnhealthyThreshold = DefaultUnhealthyThreshold
	}
	if hc.Probe.Kind == ProbeHTTP {
		if hc.Probe.Path == "" {
			hc.Probe.Path = "/"
		}
		if hc.Probe.ExpectStatus == 0 {
			hc.Probe.ExpectStatus = 200
		}
	}
	return hc
}

// Verdict is what a sequence of probe results says of a member.
type Verdict struct {
	// Health is HealthHealthy after HealthyThreshold passes in a row, HealthUnhealthy after
	// UnhealthyThreshold failures in a row, "" while neither threshold is reached.
	Health Health
	// ConsecutiveFailures is how many probes failed in a row, up to the last one.
	ConsecutiveFailures int
	// Reason quotes the last failed probe when the last probe failed; "" otherwise.
	Reason string
}

// Judge reads a sequence of probe results, oldest first: the last run of passes or failures
// decides once it reaches its threshold.
func (hc HealthCheck) Judge(results []ProbeResult) Verdict {
	hc = hc.WithDefaults()
	var v Verdict
	passes := 0
	for i := len(results) - 1; i >= 0; i-- {
		if results[i].OK {
			if v.ConsecutiveFailures > 0 {
				break
			}
			passes++
			continue
		}
		if passes > 0 {
			break
		}
		if v.ConsecutiveFailures == 0 {
			v.Reason = results[i].Reason
		}
		v.ConsecutiveFailures++
	}
	switch {
	case passes >= hc.HealthyThreshold:
		v.Health = HealthHealthy
	case v.ConsecutiveFailures >= hc.UnhealthyThreshold:
		v.Health = HealthUnhealthy
	}
	return v
}
