package main

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// The wire-faults scenario (issue 43) puts a proxy (internal/faultproxy) between the provider and
// each libvirt daemon's unix socket: the system daemon ("default") and the harness's session
// daemon h2 (-move-h2-uri); the provider's uri and its host block name the proxies' sockets. The
// group spreads over both hosts and drains one of them: its members live on the other. Each trial
// arms one fault on one proxy, drawn at random, at a random byte of whichever connection gets
// there first: a stall for ever, a stall for a few seconds, a cut, or a trickle; then runs one
// terraform command of a random kind of operation (wireOps, wire_ops.go). The command must return
// within the group's timeouts plus 60 s (the harness kills it at that bound and reports it). Then
// the fault is cleared and apply and plan are rerun through the proxies: they must converge,
// every data disk keep its bytes, no orphan be left on either host, no member down, run twice or
// on the drained host.
//
// The harness's own inspection connections go to the daemons directly, never through a proxy.

// wireGroup is the group of the wire-faults scenario; its members are wireGroup-1 … -3.
var wireGroup = prefix + "wire"

// wireDataMiB is each member's data disk: small, random bytes.
const wireDataMiB = 8

// wireMaxSize is the group's size after a scale-out; it is wireMaxSize-1 after a scale-in. The
// data disk of member wireMaxSize is kept by delete_rule NEVER while it is scaled in, and reused,
// bytes and all, when it comes back.
const wireMaxSize = 3

// wireOpTimeout is the timeouts { create update delete } of the group and of its policy: the
// bound an apply's own calls run under. Each resource has its own (30 min by default), and a
// policy's change is applied to the members too: a stall in the policy's destroy, with no
// timeouts on the policy, ran into its 30 min (trial 4 of a run of 2026-11-29). A command may
// take this plus wireGrace before the harness calls it hung.
const wireOpTimeout = 2 * time.Minute

// wireGrace is what the issue allows past the resource timeout.
const wireGrace = 60 * time.Second

// wireHostTimeout is the provider's host_timeout: how long a refresh or plan waits on the host.
const wireHostTimeout = "5s"

// wireOps are the kinds of operation a trial runs under a fault (wirer.prepare says what each does).
var wireOps = []string{"create", "update", "seed-swap", "replace", "rollback", "probe", "move", "scale-out", "scale-in", "plan", "destroy"}

// wireFaults are the kinds of fault a trial injects.
var wireFaults = []string{"stall", "stall-for", "cut", "trickle"}

// wireTrial is one fault and the command it hit.
type wireTrial struct {
	n        int
	op       string
	fault    string
	proxy    string // the host whose proxy the fault was armed on
	detail   string // the fault's parameters
	fired    bool   // the fault took effect before the command ended
	firedAt  string // connection and byte
	exit     int
	dur      time.Duration
	hung     bool // the harness killed the command at its bound
	err      string
	log      string
	rerunLog string
	// dialFailed says how often a proxy could not reach its daemon during the trial (its
	// client then sees the connection closed mid-handshake, with no fault armed).
	dialFailed string
	// preLost are the data disks a create's undisturbed destroy before the fault lost.
	preLost []string
	outcome
}

// withinBound is the first check: the command returned by itself within its bound.
func (t wireTrial) withinBound() bool { return !t.hung }

func (t wireTrial) line() string {
	s := fmt.Sprintf("wire trial %d: %s under %s on %s's proxy (%s), ", t.n, t.op, t.fault, t.proxy, t.detail)
	if t.fired {
		s += "fired at " + t.firedAt + "; "
	} else {
		s += "did not fire before the command ended; "
	}
	if t.hung {
		s += fmt.Sprintf("DID NOT RETURN within %s, killed (log %s); ", wireOpTimeout+wireGrace, t.log)
	} else {
		s += fmt.Sprintf("exit %d in %s%s; ", t.exit, round(t.dur), bracket(t.err))
	}
	if t.dialFailed != "" {
		s += t.dialFailed + "; "
	}
	if len(t.preLost) > 0 {
		s += "BYTES LOST BY THE UNDISTURBED DESTROY BEFORE THE CREATE: " + strings.Join(t.preLost, "; ") + "; "
	}
	return s + t.outcome.line()
}

// wireResults is what the scenario measured.
type wireResults struct {
	err       string
	stopped   string // the trials stopped early, as -wire-budget asked: not a failure
	trials    []wireTrial
	destroyEx int
	destroyEr string
	leftovers []string
}

func (w *wireResults) failures() []string {
	var out []string
	if w.err != "" {
		out = append(out, "wire faults: "+w.err)
	}
	for _, t := range w.trials {
		where := fmt.Sprintf("wire trial %d (%s under %s)", t.n, t.op, t.fault)
		if t.hung {
			out = append(out, fmt.Sprintf("%s: terraform did not return within %s (log %s)", where, wireOpTimeout+wireGrace, t.log))
		}
		if !t.converged() {
			out = append(out, where+": did not converge")
		}
		for _, l := range t.preLost {
			out = append(out, where+": bytes lost by the undisturbed destroy before it: "+l)
		}
		for _, v := range t.checks.violations() {
			out = append(out, where+": "+v)
		}
		if len(t.checks.down) > 0 {
			out = append(out, where+": members down after the rerun: "+strings.Join(t.checks.down, "; "))
		}
	}
	if w.destroyEx != 0 {
		out = append(out, fmt.Sprintf("wire faults: destroy exited %d: %s", w.destroyEx, w.destroyEr))
	}
	return out
}

func (w *wireResults) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("### Wire faults: a proxy between the provider and each libvirtd\n\n")
	p("A group of %d-%d running members (TCG, 64 MiB, an empty boot disk, a %d MiB `data` disk of random bytes, `delete_rule = \"NEVER\"`, "+
		"`timeouts { create update delete = %q }`, provider `host_timeout = %q`) over two hosts, the system daemon and the session daemon h2, "+
		"each reached through a fault proxy on its socket; the group drains one host, its members live on the other. "+
		"Each trial arms one fault on one proxy drawn at random, at a random byte of whichever connection gets there first, and runs one command: "+
		"create after a destroy, description change (hot update), metadata change (seed swap: every seed rewritten, the media swapped live), "+
		"user_data flip (REPLACE), the user_data flip with a guest agent health check no member passes and `on_failure = \"ROLLBACK\"` (rollback), "+
		"the health check added (probes), the drain flipped (moves: live from the system daemon, refused by h2's daemon and made cold; "+
		"every move cold when the trial stops the group in the same apply), scale-out, scale-in, plan, destroy. "+
		"The command must return within %s; then the fault is cleared, apply (the configuration without the health check, running) and "+
		"`plan -detailed-exitcode` are rerun and both hosts are inspected.\n\n",
		wireMaxSize-1, wireMaxSize, wireDataMiB, wireOpTimeout.String(), wireHostTimeout, wireOpTimeout+wireGrace)
	if w.err != "" {
		p("**The scenario could not run to its end:** %s\n\n", cell(w.err, 1200))
	}
	if w.stopped != "" {
		p("%s.\n\n", w.stopped)
	}
	p("| fault | trials | fired | returned within bound | reruns converged | bytes lost | orphans | members left down |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	row := func(name string, f func(t wireTrial) bool) {
		var n, fired, bound, conv, lost, orph, down int
		for _, t := range w.trials {
			if !f(t) {
				continue
			}
			n++
			if t.fired {
				fired++
			}
			if t.withinBound() {
				bound++
			}
			if t.converged() {
				conv++
			}
			if len(t.checks.lost)+len(t.preLost) > 0 {
				lost++
			}
			if len(t.checks.orphanDomains)+len(t.checks.orphanVolumes) > 0 {
				orph++
			}
			if len(t.checks.down) > 0 {
				down++
			}
		}
		p("| %s | %d | %d | %d / %d | %d / %d | %d | %d | %d |\n", name, n, fired, bound, n, conv, n, lost, orph, down)
	}
	for _, k := range wireFaults {
		row(k, func(t wireTrial) bool { return t.fault == k })
	}
	row("**all**", func(wireTrial) bool { return true })
	p("\n| operation | trials | fired | returned within bound | reruns converged |\n| --- | ---: | ---: | ---: | ---: |\n")
	// A move that stops the group in the same apply is counted apart: every move in it is cold.
	for _, op := range append(slices.Clone(wireOps), "move-cold") {
		var n, fired, bound, conv int
		for _, t := range w.trials {
			if t.op != op {
				continue
			}
			n++
			if t.fired {
				fired++
			}
			if t.withinBound() {
				bound++
			}
			if t.converged() {
				conv++
			}
		}
		p("| %s | %d | %d | %d | %d |\n", op, n, fired, bound, conv)
	}
	p("\n")
	var details []string
	for _, t := range w.trials {
		if t.hung || len(t.preLost) > 0 || !t.converged() || len(t.checks.violations()) > 0 || len(t.checks.reported()) > 0 {
			details = append(details, t.line())
		}
	}
	if len(details) > 0 {
		findings(p, "Wire trials with a finding", details)
		p("\n")
	}
	p("The group's destroy at the end exited %d%s; left on the hosts after it besides its NEVER data volumes: %s.\n\n", w.destroyEx, bracket(cell(w.destroyEr, 300)), cell(listOrNothing(w.leftovers), 400))
	return b.String()
}
