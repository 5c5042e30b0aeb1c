package engine

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// The bounds of template.health_check and of update_policy's min_ready and ready_timeout: the
// schema's validators and defaults read them, so the rule lives here once.
var (
	// ProbeIntervalRule bounds health_check.interval: a probe a second at most, and at least one
	// an hour, or a member's health would be an hour old.
	ProbeIntervalRule = DurationRule{Min: time.Second, Max: time.Hour}
	// ProbeTimeoutRule bounds health_check.timeout, which is also at most the interval
	// (CheckProbeTimeout).
	ProbeTimeoutRule = DurationRule{Min: time.Second, Max: time.Hour}
	// MinReadyRule bounds update_policy.min_ready: "0s" starts the next wave as soon as the
	// members are HEALTHY; an hour per wave is already a very slow rollout.
	MinReadyRule = DurationRule{Max: time.Hour}
	// ReadyTimeoutRule bounds update_policy.ready_timeout: a member must be given some time, and
	// a day is more than any guest needs to boot.
	ReadyTimeoutRule = DurationRule{Positive: true, Max: 24 * time.Hour}
)

// DefaultReadyTimeout is update_policy.ready_timeout when the configuration gives none.
const DefaultReadyTimeout = 5 * time.Minute

// IntRule is the range an integer attribute accepts.
type IntRule struct {
	Min, Max int64
}

// The integer bounds of template.health_check.
var (
	// HealthThresholdRule bounds healthy_threshold and unhealthy_threshold.
	HealthThresholdRule = IntRule{Min: 1, Max: 10}
	// ProbePortRule bounds tcp and http's port.
	ProbePortRule = IntRule{Min: 1, Max: 65535}
	// ExpectStatusRule bounds http's expect_status: an HTTP status code.
	ExpectStatusRule = IntRule{Min: 100, Max: 599}
)

// Defaults of the http probe.
const (
	DefaultHTTPPath         = "/"
	DefaultHTTPExpectStatus = 200
)

// ProbeKinds lists the probe blocks of a health check, in the order the documentation gives them.
var ProbeKinds = []ProbeKind{ProbeGuestAgent, ProbeExec, ProbeTCP, ProbeHTTP}

// CheckProbeKinds checks that a health check names exactly one probe; set lists the probe blocks
// the configuration has.
func CheckProbeKinds(set []ProbeKind) error {
	if len(set) == 1 {
		return nil
	}
	names := make([]string, len(ProbeKinds))
	for i, k := range ProbeKinds {
		names[i] = string(k)
	}
	allowed := "exactly one probe block: " + strings.Join(names, ", ")
	if len(set) == 0 {
		return fmt.Errorf("no probe block; a health check needs %s", allowed)
	}
	got := make([]string, len(set))
	for i, k := range set {
		got[i] = string(k)
	}
	return fmt.Errorf("%d probe blocks (%s); a health check needs %s", len(set), strings.Join(got, " and "), allowed)
}

// CheckProbeTimeout checks that a probe ends before the next one starts.
func CheckProbeTimeout(timeout, interval time.Duration) error {
	if timeout > interval {
		return fmt.Errorf("timeout %s is longer than interval %s; a probe must end before the next begins: make timeout at most the interval", timeout, interval)
	}
	return nil
}

// CheckExecCommand checks an exec probe's command: the agent runs its first element as a path,
// with the rest as arguments, through no shell.
func CheckExecCommand(command []string) error {
	switch {
	case len(command) == 0:
		return errors.New("the command is empty; give the program and its arguments, such as [\"/bin/tiny-service\", \"status\"]")
	case command[0] == "":
		return errors.New("the command's first element, the program to run, is empty; give its path, such as \"/bin/tiny-service\"")
	}
	return nil
}
