package engine

import (
	"fmt"
	"time"
)

// AutoHealing is the group's auto_healing block: failed members are replaced, not before
// InitialDelay after they were created, with an exponential backoff between attempts, and left
// failed after MaxConsecutiveFailures attempts.
type AutoHealing struct {
	InitialDelay           string
	Backoff                string
	MaxConsecutiveFailures int
}

// Defaults of the auto_healing block.
const (
	DefaultInitialDelay           = "120s"
	DefaultBackoff                = "60s"
	DefaultMaxConsecutiveFailures = 3
)

// HealDecision is what autohealing does with a failed member now.
type HealDecision struct {
	// Act is true when the member is to be replaced now; Attempt is then which consecutive
	// attempt this is (1 for the first).
	Act     bool
	Attempt int
	// Until is when a waiting member may be healed (initial delay or backoff); zero otherwise.
	Until time.Time
	// GaveUp is true when MaxConsecutiveFailures attempts were made: the member stays failed
	// until its template or config changes.
	GaveUp bool
	// Why renders the decision for the plan.
	Why string
}

func durationOr(text, def string) time.Duration {
	d, err := time.ParseDuration(text)
	if err != nil || d < 0 {
		d, _ = time.ParseDuration(def)
	}
	return d
}

// doubled is d doubled n times, held below 2^62 ns (146 years): a plain shift overflows into a
// negative wait once it passes 292 years (a backoff of a week after 16 failures, and
// max_consecutive_failures goes up to 100), which would make a member wait for nothing.
func doubled(d time.Duration, n int) time.Duration {
	const ceiling = time.Duration(1) << 62
	for ; n > 0 && d > 0; n-- {
		if d >= ceiling/2 {
			return ceiling
		}
		d *= 2
	}
	return d
}

// Consecutive is how many heal attempts of the member count as consecutive at now: all of them
// when the last one did not finish, else the ones made since the member last stayed up past the
// initial delay and the backoff of its last attempt. A member that recovered and ran well beyond
// that window starts again from zero.
func (a AutoHealing) Consecutive(mi ManagedInstance, now time.Time) int {
	if mi.Heals == 0 || mi.LastHeal == 0 {
		return 0
	}
	if mi.InFlight != nil {
		// The last heal did not finish: it failed, and the next attempt follows it.
		return mi.Heals
	}
	window := durationOr(a.InitialDelay, DefaultInitialDelay) + doubled(durationOr(a.Backoff, DefaultBackoff), min(mi.Heals, 20))
	if now.Sub(time.UnixMilli(mi.LastHeal)) > window {
		return 0
	}
	return mi.Heals
}

// Decide says what autohealing does at now with a member that failed for why.
func (a AutoHealing) Decide(mi ManagedInstance, now time.Time, why string) HealDecision {
	maxFailures := a.MaxConsecutiveFailures
	if maxFailures <= 0 {
		maxFailures = DefaultMaxConsecutiveFailures
	}
	if mi.Created > 0 {
		if ready := time.UnixMilli(mi.Created).Add(durationOr(a.InitialDelay, DefaultInitialDelay)); now.Before(ready) {
			return HealDecision{Until: ready, Why: fmt.Sprintf("autoheal waits for the initial delay, until %s (%s)", ready.UTC().Format(time.RFC3339), why)}
		}
	}
	n := a.Consecutive(mi, now)
	if mi.Heals >= maxFailures {
		// Given up: only a change of the template or the config starts counting again.
		n = mi.Heals
	}
	if n >= maxFailures {
		return HealDecision{GaveUp: true, Why: fmt.Sprintf("autoheal stopped after %d consecutive failures (%s); change the template or the member's config to try again", n, why)}
	}
	if n > 0 {
		next := time.UnixMilli(mi.LastHeal).Add(doubled(durationOr(a.Backoff, DefaultBackoff), n-1))
		if now.Before(next) {
			return HealDecision{Until: next, Why: fmt.Sprintf("autoheal backs off until %s after %d failures (%s)", next.UTC().Format(time.RFC3339), n, why)}
		}
	}
	return HealDecision{Act: true, Attempt: n + 1, Why: fmt.Sprintf("autoheal (%s)", why)}
}
