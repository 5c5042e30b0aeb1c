package engine

import (
	"fmt"
	"sort"
	"time"
)

// Preservation of failed members (third reference): a member kept exactly as it is, for
// analysis, instead of being healed, updated or removed.

// Values of a per-instance config's preserve, and the kind a member is preserved as.
const (
	PreserveNo         = "NO"
	PreserveNow        = "NOW"
	PreserveWhenFailed = "WHEN_FAILED"
	// PreserveAuto is a failed member preserved by the group's failed_instance_preservation.
	PreserveAuto = "AUTO"
)

// PreserveValues lists a config's preserve values as users write them.
var PreserveValues = []string{PreserveNo, PreserveNow, PreserveWhenFailed}

// DefaultPreserveTimeout is how long a member stays preserved when the group says nothing.
const DefaultPreserveTimeout = "24h"

// FailedPreservation is the group's failed_instance_preservation block.
type FailedPreservation struct {
	AutoPreserveFailedMax int
	PreserveTimeout       string
}

// timeout is how long a member stays preserved.
func (fp *FailedPreservation) timeout() time.Duration {
	if fp == nil {
		return durationOr(DefaultPreserveTimeout, DefaultPreserveTimeout)
	}
	return durationOr(fp.PreserveTimeout, DefaultPreserveTimeout)
}

// PreserveDecision is a member's preservation after the plan.
type PreserveDecision struct {
	// Kind is how the member is preserved after the plan: NOW, WHEN_FAILED, AUTO, or "" when
	// it is not; Since is when that preservation began (Unix milliseconds).
	Kind  string
	Since int64
	// Until is when the preservation ends unless released earlier.
	Until time.Time
	// Changed is true when the plan starts or releases a preservation: the member's record is
	// written.
	Changed bool
	Why     string
}

// Preserved reports whether the member is preserved after the plan.
func (d PreserveDecision) Preserved() bool { return d.Kind != "" }

// PreserveMembers decides the preservation of every member (by name) at now. A member already
// preserved stays so until its timeout (counted from when it began, with the group's current
// preserve_timeout) or until its config says NO, even when it becomes healthy again. A member that
// is not preserved becomes so when its config says NOW, when it failed (as autohealing would
// repair it: crashed, or UNHEALTHY by its health check's probe) and its config says
// WHEN_FAILED, or when it failed, its config says nothing, and fewer than auto_preserve_failed_max
// members are auto-preserved (lowest index first). When auto_preserve_failed_max drops below the
// number auto-preserved, the oldest are released first.
func PreserveMembers(s GroupState, observed []Observed, now time.Time) map[string]PreserveDecision {
	fp := s.Group.FailedPreservation
	timeout := fp.timeout()
	autoMax := 0
	if fp != nil {
		autoMax = fp.AutoPreserveFailedMax
	}
	out := map[string]PreserveDecision{}
	var autos []Observed
	var failedAuto []Observed
	for _, o := range observed {
		if o.Unmanaged {
			continue
		}
		mi, want := o.Instance, s.Configs[o.Name].Preserve
		failed := s.Group.failedForPreservation(o, now)
		switch {
		case mi.Preserved != "" && want == PreserveNo:
			out[o.Name] = PreserveDecision{Changed: true, Why: "preservation released by its config (preserve = NO)"}
		case mi.Preserved != "":
			until := time.UnixMilli(mi.PreservedSince).Add(timeout)
			if !now.Before(until) {
				out[o.Name] = PreserveDecision{Changed: true, Why: fmt.Sprintf("preservation (%s) expired at %s", mi.Preserved, until.UTC().Format(time.RFC3339))}
				continue
			}
			out[o.Name] = PreserveDecision{Kind: mi.Preserved, Since: mi.PreservedSince, Until: until,
				Why: fmt.Sprintf("preserved (%s) until %s", mi.Preserved, until.UTC().Format(time.RFC3339))}
			if mi.Preserved == PreserveAuto {
				autos = append(autos, o)
			}
		case want == PreserveNow, failed && want == PreserveWhenFailed:
			until := now.Add(timeout)
			// A preservation that begins now says how long it lasts, not until when: the apply
			// plans again a moment later, and its plan must say the same.
			out[o.Name] = PreserveDecision{Kind: want, Since: now.UnixMilli(), Until: until, Changed: true,
				Why: fmt.Sprintf("preserved (%s) for %s", want, timeout)}
		case failed && want == "":
			failedAuto = append(failedAuto, o)
		}
	}
	// The oldest auto-preserved members go first when the maximum drops.
	sort.SliceStable(autos, func(i, j int) bool { return autos[i].Instance.PreservedSince < autos[j].Instance.PreservedSince })
	for len(autos) > autoMax {
		o := autos[0]
		autos = autos[1:]
		out[o.Name] = PreserveDecision{Changed: true, Why: fmt.Sprintf("preservation (AUTO) released: auto_preserve_failed_max is %d", autoMax)}
	}
	sort.SliceStable(failedAuto, func(i, j int) bool { return failedAuto[i].Index < failedAuto[j].Index })
	for _, o := range failedAuto {
		if len(autos) >= autoMax {
			break
		}
		until := now.Add(timeout)
		out[o.Name] = PreserveDecision{Kind: PreserveAuto, Since: now.UnixMilli(), Until: until, Changed: true,
			Why: fmt.Sprintf("preserved (AUTO) for %s", timeout)}
		autos = append(autos, o)
	}
	return out
}
