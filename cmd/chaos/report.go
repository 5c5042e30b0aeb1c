package main

import (
	"fmt"
	"strings"
	"time"
)

// results is everything the run measured, for the summary and the exit status.
type results struct {
	opts            options
	shutdownTimeout bool
	setupErr        string
	setupFindings   []string // provider failures during setup that a retry got past
	scratch         string
	keptScratch     bool
	started         checkResult
	rollout         time.Duration
	undisturbed     outcome
	kills           []killPoint
	libvirtd        []libvirtdRound
	writers         *writersOutcome
	teardown        *teardownOutcome
	// rollbacks is the rollback scenario's (rollback.go); nil when it did not run.
	rollbacks *rollbackResults
	// snapshots is the snapshot scenario's (snapshot.go); nil when it did not run.
	snapshots *snapshotResults
	// moves is the moves scenario's (moves.go); nil when it did not run.
	moves *moveResults
	// wire is the wire-faults scenario's (wire.go); nil when it did not run.
	wire  *wireResults
	total time.Duration
}

// failures are the findings that make the run fail: a kill point or libvirtd round that did not
// converge, bytes lost anywhere (the destroy included), orphans, doubled identities, corrupt
// records, a race of two writers without exactly one winner.
func (r *results) failures() []string {
	var out []string
	add := func(where string, items []string) {
		for _, i := range items {
			out = append(out, where+": "+i)
		}
	}
	add("after start", r.started.violations())
	if r.rollout > 0 {
		if !r.undisturbed.converged() {
			out = append(out, "undisturbed rolling replace: did not converge")
		}
		add("undisturbed rolling replace", r.undisturbed.checks.violations())
	}
	for _, k := range r.kills {
		where := fmt.Sprintf("kill %d", k.n)
		if !k.converged() {
			out = append(out, where+": did not converge")
		}
		add(where, k.checks.violations())
	}
	for _, l := range r.libvirtd {
		where := fmt.Sprintf("libvirtd round %d", l.n)
		if !l.converged() {
			out = append(out, where+": did not converge")
		}
		add(where, l.checks.violations())
	}
	if w := r.writers; w != nil && w.ran {
		if w.err != "" {
			out = append(out, "two writers: "+w.err)
		}
		for _, t := range w.trials {
			if !t.ok {
				out = append(out, "two writers: "+t.line())
			}
		}
		if !w.outcome.converged() {
			out = append(out, "two writers: the first directory did not converge after the trials")
		}
		add("two writers", w.outcome.checks.violations())
	}
	if r.rollbacks != nil {
		out = append(out, r.rollbacks.failures()...)
	}
	if r.snapshots != nil {
		out = append(out, r.snapshots.failures()...)
	}
	if r.moves != nil {
		out = append(out, r.moves.failures()...)
	}
	if r.wire != nil {
		out = append(out, r.wire.failures()...)
	}
	if t := r.teardown; t != nil {
		if t.ran && t.destroyExit != 0 {
			out = append(out, fmt.Sprintf("destroy: exited %d: %s", t.destroyExit, t.destroyErr))
		}
		if len(t.killSurvivors) > 0 {
			out = append(out, "killed destroy: processes outlived the kill: "+strings.Join(t.killSurvivors, ", "))
		}
		add("destroy: bytes lost", t.lost)
	}
	return out
}

// count is how many kill points a finding was seen at.
func (r *results) count(f func(k killPoint) bool) int {
	n := 0
	for _, k := range r.kills {
		if f(k) {
			n++
		}
	}
	return n
}

func (r *results) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	o := r.opts
	st := "`shutdown_timeout` not set (provider default)"
	if r.shutdownTimeout {
		st = fmt.Sprintf("`shutdown_timeout = %q`", shutdownTimeout)
	}
	if o.movesOnly {
		p("## Chaos: moves between hosts\n\n`%s`, %s. Whole run: %s.\n\n", o.commandLine(), st, round(r.total))
		if r.setupErr != "" {
			p("**Setup failed, nothing else was measured:** %s\n\n", cell(r.setupErr, 1200))
		}
		if r.moves != nil {
			p("%s", r.moves.markdown(o))
		}
		r.verdict(&b)
		return b.String()
	}
	if o.wireOnly {
		p("## Chaos: faults on the wire\n\n`%s`, %s. Whole run: %s.\n\n", o.commandLine(), st, round(r.total))
		if r.setupErr != "" {
			p("**Setup failed, nothing else was measured:** %s\n\n", cell(r.setupErr, 1200))
		}
		if r.wire != nil {
			p("%s", r.wire.markdown())
		}
		r.verdict(&b)
		return b.String()
	}
	p("## Chaos: the provider killed during a rolling REPLACE\n\n")
	p("`%s`, %s. A group of %d running members (TCG, 64 MiB, "+
		"a preserved `data` disk with `delete_rule = \"NEVER\"` holding a distinct byte pattern per member, and a cloud-init seed whose metadata names the image) flips its "+
		"`source_image`; each apply is SIGKILLed together with the provider plugin at a moment drawn uniformly from "+
		"one undisturbed rolling replace (%s), then apply and `plan -detailed-exitcode` are rerun and the host is inspected. "+
		"Whole run: %s.\n\n",
		o.commandLine(), st, o.members, round(r.rollout), round(r.total))
	if len(r.setupFindings) > 0 {
		p("**The provider failed during setup, outside the chaos:** %s.\n\n", cell(strings.Join(r.setupFindings, "; "), 1200))
	}
	if r.setupErr != "" {
		p("**Setup failed, nothing else was measured:** %s\n\n", cell(r.setupErr, 1200))
	}
	if r.setupErr == "" || r.rollout > 0 {
		p("After the members started: %s.\n\n", cell(r.started.summary(), 600))
	}
	n := len(r.kills)
	seen := func(f func(c checkResult) []string) int {
		return r.count(func(k killPoint) bool { return len(f(k.checks)) > 0 })
	}
	first := func(k killPoint) bool { return k.applyExit == 0 && k.planExit == 0 && !k.blamed }
	recovered := r.count(func(k killPoint) bool { return !first(k) && k.recoverExit == 0 && k.recoverPlan == 0 })
	p("| kill loop | result |\n| --- | ---: |\n")
	p("| kill points | %d |\n", n)
	p("| apply finished before the kill | %d |\n", r.count(func(k killPoint) bool { return k.finishedFirst }))
	p("| reruns converged at the first try (apply exit 0, then plan exit 0) | %d / %d |\n", r.count(first), n)
	p("| … of the others, refused with the provider's own words (the host changed after the rerun's plan) | %d |\n", r.count(func(k killPoint) bool { return !first(k) && k.refused }))
	p("| … of the others, converged after one more apply | %d / %d |\n", recovered, n-r.count(first))
	p("| Terraform blamed the provider (\"inconsistent\", \"bug in the provider\") | %d |\n", r.count(func(k killPoint) bool { return k.blamed }))
	p("| kill points with bytes lost (a data volume changed or gone) | %d |\n", seen(func(c checkResult) []string { return c.lost }))
	p("| kill points with orphan domains | %d |\n", seen(func(c checkResult) []string { return c.orphanDomains }))
	p("| kill points with orphan volumes | %d |\n", seen(func(c checkResult) []string { return c.orphanVolumes }))
	p("| kill points with an identity with two domains | %d |\n", seen(func(c checkResult) []string { return c.doubles }))
	p("| kill points with a corrupt group record | %d |\n", seen(func(c checkResult) []string { return c.corrupt }))
	p("| kill points with stale boot volumes (backing ≠ configured image) | %d |\n", seen(func(c checkResult) []string { return c.staleBoot }))
	p("| kill points with stale cloud-init seeds (missing, or not naming the member and the configured image) | %d |\n", seen(func(c checkResult) []string { return c.staleSeed }))
	p("| kill points with members down after the rerun | %d |\n", seen(func(c checkResult) []string { return c.down }))
	p("| kills that left more than `max_unavailable` (1) members down | %d |\n", r.count(func(k killPoint) bool { return len(k.downAtKill) > 1 }))
	p("| kills that left a stale `.terraform.tfstate.lock.info` | %d |\n",
		r.count(func(k killPoint) bool { return strings.Contains(k.note, "lock.info") }))
	p("| reruns refused for the state lock (then rerun with `-lock=false`) | %d |\n",
		r.count(func(k killPoint) bool { return strings.Contains(k.note, "-lock=false") }))
	p("| processes that outlived the SIGKILL of the process group | %d |\n",
		r.count(func(k killPoint) bool { return len(k.survivors) > 0 }))
	p("\n")

	if r.rollout > 0 {
		p("One undisturbed rolling replace (%s): %s.\n\n", round(r.rollout), cell(strings.Replace(r.undisturbed.line(), "rerun exit", "apply exit", 1), 1000))
	}

	if r.rollbacks != nil {
		p("%s", r.rollbacks.markdown())
	} else if o.rollbackKills == 0 {
		p("Rollback kill points: skipped.\n\n")
	}

	if r.snapshots != nil {
		p("%s", r.snapshots.markdown())
	} else if o.snapshotKills == 0 {
		p("Snapshot kill points: skipped.\n\n")
	}

	if o.skipLibvirtd {
		p("libvirtd restarted mid-apply: skipped.\n\n")
	} else if len(r.libvirtd) > 0 {
		p("| libvirtd killed mid-apply, back after 3 s | delay | apply exit | apply error | rerun exit | plan exit | checks |\n")
		p("| --- | ---: | ---: | --- | ---: | ---: | --- |\n")
		for _, l := range r.libvirtd {
			what := fmt.Sprintf("round %d: %s", l.n, l.restart)
			if l.finishedFirst {
				what = fmt.Sprintf("round %d: apply finished first", l.n)
			}
			p("| %s | %s | %d | %s | %d | %d | %s |\n", cell(what, 200), round(l.delay), l.duringExit, cell(l.duringErr, 400),
				l.applyExit, l.planExit, cell(l.checks.summary(), 400))
		}
		p("\n")
	}

	switch w := r.writers; {
	case o.skipWriters:
		p("Two writers: skipped.\n\n")
	case w != nil && w.err != "":
		p("Two writers: could not run: %s\n\n", cell(w.err, 400))
	case w != nil:
		p("Two writers: %d races of the group's own directory (image flipped) against a second directory with a state of its own (target_size %d), both applied at once. In turn, the second declares the group as new, imports it, or holds a copy of the first's state. Exactly one may proceed; the other must be refused before it changes anything.\n\n", len(w.trials), o.members+1)
		p("| trial | kind | first exit | second exit | domains after | verdict |\n| ---: | --- | ---: | ---: | --- | --- |\n")
		for _, t := range w.trials {
			p("| %d | %s | %d%s | %d%s | %s | %s |\n", t.n, t.kind, t.exits[0], bracket(cell(t.errs[0], 300)), t.exits[1], bracket(cell(t.errs[1], 300)),
				cell(strings.Join(t.afterRace, ", "), 200), t.verdict)
		}
		p("\nThe first directory's apply and plan after the trials: %s.\n\n", cell(w.outcome.line(), 800))
	}

	if t := r.teardown; t != nil && t.ran {
		p("Teardown: a first `terraform destroy` %s; the `terraform destroy` after it exited %d%s; NEVER data volumes kept with their bytes: %d of %d%s; "+
			"the destroy left besides them: %s.\n\n",
			cell(t.killNote, 300), t.destroyExit, bracket(cell(t.destroyErr, 300)), len(t.kept), o.members, bracket(cell(strings.Join(t.lost, "; "), 400)),
			cell(listOrNothing(t.leftovers), 400))
	}

	if r.moves != nil {
		p("%s", r.moves.markdown(o))
	} else if o.moveKills == 0 {
		p("Moves between hosts: skipped.\n\n")
	}

	if r.wire != nil {
		p("%s", r.wire.markdown())
	} else if o.wireFaults == 0 {
		p("Wire faults: skipped.\n\n")
	}

	r.verdict(&b)
	return b.String()
}

// verdict is the end of the summary: pass or fail with the findings, the kill points with a
// finding, and where the logs are.
func (r *results) verdict(b *strings.Builder) {
	p := func(format string, args ...any) { fmt.Fprintf(b, format, args...) }
	fails := r.failures()
	switch {
	case r.setupErr != "":
		p("Result: **setup failed** (see above).\n")
	case len(fails) == 0 && len(r.setupFindings) > 0:
		p("Result: **pass** for the chaos invariants, but the provider failed during setup (see above).\n")
	case len(fails) == 0:
		p("Result: **pass**.\n")
	default:
		p("Result: **fail**, %d findings:\n\n", len(fails))
		for _, f := range fails {
			p("- %s\n", cell(f, 600))
		}
	}
	if details := r.details(); len(details) > 0 {
		p("\n")
		findings(p, "Kill points with a finding", details)
	}
	if r.keptScratch {
		p("\nTerraform logs: the logs directories of %s\n", r.scratch)
	}
}

// findings writes title and the lines of the trials where something was found, one item each, each
// cut to a readable length.
func findings(p func(string, ...any), title string, details []string) {
	p("%s:\n\n", title)
	for _, d := range details {
		p("- %s\n", cell(d, 2500))
	}
}

// details are the lines of the kill points where something was found, to read what happened.
func (r *results) details() []string {
	var out []string
	for _, k := range r.kills {
		if !k.converged() || len(k.checks.violations()) > 0 || len(k.checks.reported()) > 0 || len(k.survivors) > 0 || strings.Contains(k.note, "-lock=false") {
			out = append(out, k.line())
		}
	}
	return out
}

// commandLine repeats the run. The seed fixes the random draws; the delays also depend on the
// rollout measured in that run, so they repeat only as closely as its duration does.
func (o options) commandLine() string {
	s := fmt.Sprintf("go run ./cmd/chaos -kills %d -rollback-kills %d -snapshot-kills %d -members %d -seed %d", o.kills, o.rollbackKills, o.snapshotKills, o.members, o.seed)
	if o.skipLibvirtd {
		s += " -skip-libvirtd"
	} else {
		s += fmt.Sprintf(" -libvirtd-rounds %d", o.libvirtdRounds)
	}
	if o.skipWriters {
		s += " -skip-writers"
	} else {
		s += fmt.Sprintf(" -writer-trials %d", o.writerTrials)
	}
	if o.noShutdownTimeout {
		s += " -no-shutdown-timeout"
	}
	s += fmt.Sprintf(" -move-kills %d -move-members %d", o.moveKills, o.moveMembers)
	if o.movesOnly {
		s += " -moves-only"
	}
	s += fmt.Sprintf(" -wire-faults %d", o.wireFaults)
	if o.wireBudget > 0 {
		s += " -wire-budget " + o.wireBudget.String()
	}
	if o.wireOps != "" {
		s += " -wire-ops " + o.wireOps
	}
	if o.wireOnly {
		s += " -wire-only"
	}
	if o.runName != "" {
		s += " -run-name " + o.runName
	}
	return s
}

// cell makes text safe for one Markdown table cell or list item: one line, no bare pipes, cut at
// maxRunes characters.
func cell(s string, maxRunes int) string {
	s = strings.Join(strings.Fields(s), " ")
	s = strings.ReplaceAll(s, "|", `\|`)
	if r := []rune(s); len(r) > maxRunes {
		s = string(r[:maxRunes]) + "…"
	}
	return s
}
