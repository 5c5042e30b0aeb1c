// The provider's log as the snapshot scenario reads it: its INFO events, when each happened, and
// the messages the scenario times its kills from.

package main

import (
	"os"
	"regexp"
	"strings"
	"time"
)

// logEvent is one line of the provider's log (TF_LOG_PROVIDER=INFO): when and what.
type logEvent struct {
	at  time.Time
	msg string
}

// logLine is a provider log line as terraform writes it: its timestamp, level, the plugin's
// name, the message, then its fields after ": " (key=value, the first may be @caller=…).
var logLine = regexp.MustCompile(`(?m)^(\S+) \[(?:INFO|WARN|ERROR)\]\s+provider\.[^:]*: (.*?)(?:: [@\w.]+=|:?$)`)

// logEvents are the provider's INFO events in the output, in order.
func logEvents(out string) []logEvent {
	var evs []logEvent
	for _, m := range logLine.FindAllStringSubmatch(out, -1) {
		at, err := parseLogTime(m[1])
		if err != nil {
			continue
		}
		evs = append(evs, logEvent{at: at, msg: m[2]})
	}
	return evs
}

func parseLogTime(s string) (time.Time, error) {
	var err error
	for _, layout := range []string{"2006-01-02T15:04:05.000Z0700", "2006-01-02T15:04:05.000Z07:00", time.RFC3339Nano} {
		var t time.Time
		if t, err = time.Parse(layout, s); err == nil {
			return t, nil
		}
	}
	return time.Time{}, err
}

// The provider's messages the scenario times and waits for.
var (
	evPowerOff  = func(m string) bool { return strings.HasPrefix(m, "member did not shut down in time") }
	evWaitReady = func(m string) bool {
		return strings.HasPrefix(m, "waiting for ") && strings.HasSuffix(m, " to be ready")
	}
	evRollback   = func(m string) bool { return strings.Contains(m, rollbackBegun) }
	evPutBack    = func(m string) bool { return m == "volume put back to its snapshot" }
	evNoPutBack  = func(m string) bool { return strings.HasPrefix(m, "no snapshot to put back") }
	evSnapshot   = func(m string) bool { return m == "volume snapshotted" }
	evDeleted    = func(m string) bool { return m == "snapshot deleted" }
	evReconciles = func(m string) bool { return m == "reconciling group" }
)

// firstEvent is the first event at or after index from that f matches, and its index; -1 if none.
func firstEvent(evs []logEvent, from int, f func(string) bool) (logEvent, int) {
	for i := max(from, 0); i < len(evs); i++ {
		if f(evs[i].msg) {
			return evs[i], i
		}
	}
	return logEvent{}, -1
}

// lastEvent is the last event f matches; false if none.
func lastEvent(evs []logEvent, f func(string) bool) (logEvent, bool) {
	for i := len(evs) - 1; i >= 0; i-- {
		if f(evs[i].msg) {
			return evs[i], true
		}
	}
	return logEvent{}, false
}

// readyMember is the member a "waiting for X to be ready" event names.
func readyMember(msg string) string {
	return strings.TrimSuffix(strings.TrimPrefix(msg, "waiting for "), " to be ready")
}

// waitForEvent waits until the run's log holds an event f matches, and returns the event's own
// time; false when the run ended without one.
func waitForEvent(run *tfRun, f func(string) bool) (time.Time, bool) {
	for {
		b, _ := os.ReadFile(run.log)
		if e, i := firstEvent(logEvents(string(b)), 0, f); i >= 0 {
			return e.at, true
		}
		select {
		case <-run.done:
			b, _ := os.ReadFile(run.log)
			e, i := firstEvent(logEvents(string(b)), 0, f)
			return e.at, i >= 0
		case <-time.After(10 * time.Millisecond):
		}
	}
}
