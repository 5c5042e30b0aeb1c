package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// The rollback scenario kills applies inside a rollback (update_policy.on_failure = "ROLLBACK").
// The group's configuration gains a guest agent health check and a short ready_timeout: its guests
// boot no operating system, so the first member the flipped image replaces is never ready, its
// wave fails, and the provider replaces it back onto the image it had; that member is not ready
// either, so the rollback fails in turn and stops there (a rollback is never rolled back). Each
// kill point waits until the provider logs that the rollback began, then SIGKILLs terraform and
// the plugin at a moment drawn uniformly from one undisturbed rollback. The rerun applies the
// configuration without the health check (the same flipped image): it must converge, with every
// preserved byte kept, nothing orphaned and no identity doubled, as after any kill.

// rollbackReadyTimeout is the ready_timeout of the rollback configuration: short, since no member
// of this group ever becomes ready.
const rollbackReadyTimeout = "4s"

// rollbackBegun is what the provider logs (TF_LOG_PROVIDER=INFO) when it starts a rollback.
const rollbackBegun = "rolling back the rollout"

// rollbackKill is one apply killed inside its rollback (or not, when it ended first).
type rollbackKill struct {
	n     int
	image string
	delay time.Duration
	// begun is false when the apply ended without the provider logging a rollback.
	begun         bool
	finishedFirst bool
	firstExit     int
	firstErr      string
	survivors     []string
	outcome
}

func (k rollbackKill) line() string {
	s := fmt.Sprintf("rollback kill %d: image %s, %s after the rollback began: ", k.n, filepath.Base(k.image), round(k.delay))
	switch {
	case !k.begun:
		s += fmt.Sprintf("NO ROLLBACK BEGAN (apply exit %d: %s); ", k.firstExit, k.firstErr)
	case k.finishedFirst:
		s += fmt.Sprintf("apply finished before the kill (exit %d: %s); ", k.firstExit, k.firstErr)
	default:
		s += "killed; "
	}
	if len(k.survivors) > 0 {
		s += "processes outlived the kill: " + strings.Join(k.survivors, ", ") + "; "
	}
	return s + k.outcome.line()
}

// rollbackResults is what the rollback scenario measured.
type rollbackResults struct {
	// measured is one undisturbed apply that rolled back: how long its rollback took (the window
	// kills are drawn from), how it ended, and the rerun after it.
	rollback      time.Duration
	measuredBegun bool
	// measuredSaid is whether the apply's error said that it rolled back.
	measuredSaid bool
	measuredExit int
	measuredErr  string
	measured     outcome
	kills        []rollbackKill
	err          string
}

// rolledBackWords are how the provider's error of an apply that rolled back begins.
const rolledBackWords = "was rolled back"

// saysRolledBack reports whether terraform's output holds the provider's error of an apply that
// rolled back, however terraform wrapped the diagnostic's lines ("│ " before each).
func saysRolledBack(out string) bool {
	return strings.Contains(strings.Join(strings.Fields(strings.ReplaceAll(out, "│", " ")), " "), rolledBackWords)
}

// rollbackScenario measures one undisturbed rollback, then runs the rollback kill points.
func (c *chaos) rollbackScenario(res *results, rng *rand.Rand) {
	rr := &rollbackResults{}
	res.rollbacks = rr
	// The same directory and state as the kill loop, with the provider's log in terraform's
	// output, where the harness watches for the rollback to begin.
	w := &workdir{name: "rollback", dir: c.roll.dir, env: append(append([]string(nil), c.env...), "TF_LOG_PROVIDER=INFO")}

	cfg := c.flip()
	cfg.rollback = true
	if err := c.writeConfig(w, cfg); err != nil {
		rr.err = err.Error()
		return
	}
	run, err := w.start("rollback-measure", applyArgs...)
	if err != nil {
		rr.err = err.Error()
		return
	}
	begunAt, begun := waitForLog(run, rollbackBegun)
	r := run.finish(c.o.timeout)
	rr.measuredBegun, rr.measuredExit, rr.measuredErr = begun, r.exit, errorText(r.out, 6)
	rr.measuredSaid = saysRolledBack(r.out)
	if begun {
		rr.rollback = time.Since(begunAt)
	}
	logf("undisturbed rollback: began %v, apply exit %d, rollback %s: %s", begun, r.exit, round(rr.rollback), rr.measuredErr)
	rr.measured = c.rerunPlain(c.current(), "rollback-measure")

	for i := 1; i <= c.o.rollbackKills; i++ {
		label := fmt.Sprintf("rbkill%03d", i)
		cfg := c.flip()
		cfg.rollback = true
		k := rollbackKill{n: i, image: cfg.image, delay: time.Duration(rng.Int64N(int64(rr.rollback) + 1))}
		if err := c.writeConfig(w, cfg); err != nil {
			rr.err = err.Error()
			return
		}
		run, err := w.start(label, applyArgs...)
		if err != nil {
			rr.err = err.Error()
			return
		}
		_, k.begun = waitForLog(run, rollbackBegun)
		var first tfResult
		if k.begun {
			select {
			case <-run.done:
				first, k.finishedFirst = run.result(false, nil), true
			case <-time.After(k.delay):
				first = run.kill()
				k.survivors = first.survivors
			}
		} else {
			first = run.finish(c.o.timeout)
		}
		if !first.killed {
			k.firstExit, k.firstErr = first.exit, errorText(first.out, 4)
		}
		k.outcome = c.rerunPlain(c.current(), label)
		rr.kills = append(rr.kills, k)
		logf("%s", k.line())
	}
	// The kill loop and the scenarios after this one start from the plain configuration.
	if err := c.writeConfig(c.roll, c.current()); err != nil {
		rr.err = err.Error()
	}
}

// rerunPlain applies cfg without the rollback configuration after a rollback run (killed or not)
// and checks that the group converged.
func (c *chaos) rerunPlain(cfg config, label string) outcome {
	cfg.rollback = false
	if err := c.writeConfig(c.roll, cfg); err != nil {
		return outcome{applyExit: -1, applyErr: err.Error()}
	}
	rerun, note := c.roll.applyAfterKill(c.o.timeout, label+"-rerun")
	return c.converge(rerun, note, label, expectation{members: c.o.members})
}

// waitForLog waits until the run's output holds what, and says when it was seen; false when the
// run ended without it.
func waitForLog(run *tfRun, what string) (time.Time, bool) {
	for {
		if b, err := os.ReadFile(run.log); err == nil && strings.Contains(string(b), what) {
			return time.Now(), true
		}
		select {
		case <-run.done:
			b, _ := os.ReadFile(run.log)
			return time.Now(), strings.Contains(string(b), what)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// failures are the rollback scenario's findings that fail the run: an apply that did not roll
// back, a rerun that did not converge, and the host checks' violations.
func (rr *rollbackResults) failures() []string {
	var out []string
	if rr.err != "" {
		out = append(out, "rollback scenario: "+rr.err)
	}
	if !rr.measuredBegun {
		out = append(out, fmt.Sprintf("undisturbed rollback: the provider did not roll back (apply exit %d: %s)", rr.measuredExit, rr.measuredErr))
	} else if rr.measuredExit == 0 || !rr.measuredSaid {
		out = append(out, fmt.Sprintf("undisturbed rollback: the apply that rolled back exited %d, and its error says it was rolled back: %v", rr.measuredExit, rr.measuredSaid))
	}
	if !rr.measured.converged() {
		out = append(out, "undisturbed rollback: the rerun did not converge")
	}
	for _, v := range rr.measured.checks.violations() {
		out = append(out, "undisturbed rollback: "+v)
	}
	for _, k := range rr.kills {
		where := fmt.Sprintf("rollback kill %d", k.n)
		if !k.begun {
			out = append(out, where+": the provider did not roll back")
		}
		if !k.converged() {
			out = append(out, where+": did not converge")
		}
		for _, v := range k.checks.violations() {
			out = append(out, where+": "+v)
		}
	}
	return out
}

// markdown is the scenario's part of the summary.
func (rr *rollbackResults) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	if rr.err != "" {
		p("Rollback kill points: could not run: %s\n\n", cell(rr.err, 400))
	}
	p("Rollback kill points: the flipped image with a guest agent health check, `on_failure = \"ROLLBACK\"` and `ready_timeout = %q` "+
		"(no member of this group is ever healthy: the first member replaced fails its wave, is replaced back, and the rollback stops at its own wait). "+
		"Undisturbed: rollback began %v, apply exit %d (%s), rollback lasted %s; the rerun without the health check: %s.\n\n",
		rollbackReadyTimeout, rr.measuredBegun, rr.measuredExit, cell(rr.measuredErr, 600), round(rr.rollback), cell(rr.measured.line(), 600))
	if len(rr.kills) == 0 {
		return b.String()
	}
	count := func(f func(k rollbackKill) bool) int {
		n := 0
		for _, k := range rr.kills {
			if f(k) {
				n++
			}
		}
		return n
	}
	p("| rollback kill loop | result |\n| --- | ---: |\n")
	p("| kill points inside a rollback | %d |\n", len(rr.kills))
	p("| applies that did not roll back | %d |\n", count(func(k rollbackKill) bool { return !k.begun }))
	p("| rollback finished before the kill | %d |\n", count(func(k rollbackKill) bool { return k.finishedFirst }))
	p("| reruns converged (apply exit 0, then plan exit 0, or after one more apply) | %d / %d |\n", count(func(k rollbackKill) bool { return k.converged() }), len(rr.kills))
	p("| kill points with bytes lost | %d |\n", count(func(k rollbackKill) bool { return len(k.checks.lost) > 0 }))
	p("| kill points with orphans or an identity with two domains | %d |\n", count(func(k rollbackKill) bool {
		return len(k.checks.orphanDomains)+len(k.checks.orphanVolumes)+len(k.checks.doubles) > 0
	}))
	p("\n")
	for _, k := range rr.kills {
		if !k.converged() || len(k.checks.violations()) > 0 || !k.begun {
			p("- %s\n", cell(k.line(), 2500))
		}
	}
	return b.String()
}
