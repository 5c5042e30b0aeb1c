package main

import (
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// outcome is what happened after a disturbed apply: the apply that followed it, the plan after
// that, and what the host looked like then. When they did not converge, one more apply (the
// recovery) gives the next scenario a group to start from, and says whether a second try helps.
type outcome struct {
	applyExit   int
	applyErr    string
	note        string
	planExit    int
	planChanges string
	planErr     string
	checks      checkResult
	recovered   bool // a recovery apply was run
	recoverExit int
	recoverPlan int
	recoverErr  string
	// refused is set when the apply was refused with the provider's own words because the host
	// or the group changed after its plan (providerRefusal); blamed when Terraform's text blamed
	// the provider ("Provider produced inconsistent ...", "This is a bug in the provider"), in
	// the apply, the plan or the recovery: never acceptable.
	refused bool
	blamed  bool
}

// converged reports whether the group came back: the apply after the disturbance and the plan
// after it exited 0, or the apply was refused with the provider's own words (the host changed
// between its plan and its apply: a member the killed apply had asked to shut down went off)
// and the next apply and plan exited 0.
func (o outcome) converged() bool {
	if o.blamed {
		return false
	}
	if o.applyExit == 0 && o.planExit == 0 {
		return true
	}
	return o.refused && o.recovered && o.recoverExit == 0 && o.recoverPlan == 0
}

// providerRefusal is how the provider's refusals of a plan that no longer holds begin: the host
// or the group changed after the plan, or another apply holds the group.
var providerRefusal = regexp.MustCompile(`changed on the host after\s+the\s+plan\s+was\s+made|changed by another apply since this plan\s+was\s+made|being changed by another apply`)

// providerBlamed is Terraform's text for a provider whose plan or result it cannot reproduce.
var providerBlamed = regexp.MustCompile(`Provider produced inconsistent|bug in the provider`)

func (o outcome) line() string {
	s := fmt.Sprintf("rerun exit %d, plan exit %d", o.applyExit, o.planExit)
	if o.applyErr != "" {
		s += fmt.Sprintf(" [apply: %s]", o.applyErr)
	}
	if o.planChanges != "" {
		s += fmt.Sprintf(" [plan wants: %s]", o.planChanges)
	}
	if o.planErr != "" {
		s += fmt.Sprintf(" [plan: %s]", o.planErr)
	}
	if o.note != "" {
		s += " (" + o.note + ")"
	}
	if o.blamed {
		s += " (Terraform blamed the provider: \"inconsistent\" or \"bug in the provider\")"
	}
	s += "; " + o.checks.summary()
	if o.recovered {
		s += fmt.Sprintf("; recovery apply exit %d, plan exit %d", o.recoverExit, o.recoverPlan)
		if o.recoverErr != "" {
			s += " [" + o.recoverErr + "]"
		}
	}
	return s
}

// converge takes the apply that followed a disturbance, plans, and checks the host against e.
func (c *chaos) converge(apply tfResult, note, label string, e expectation) outcome {
	return c.convergeIn(c.roll, func(label string) checkResult { return c.check(label, e) }, apply, note, label)
}

// convergeIn is converge for the group of directory w, whose hosts check inspects.
func (c *chaos) convergeIn(w *workdir, check func(label string) checkResult, apply tfResult, note, label string) outcome {
	o := outcome{applyExit: apply.exit, applyErr: errorText(apply.out, 6), note: note}
	o.refused = apply.exit != 0 && providerRefusal.MatchString(apply.out)
	o.blamed = providerBlamed.MatchString(apply.out)
	if apply.timedOut {
		limit := c.o.timeout
		if w.timeout > 0 {
			limit = w.timeout
		}
		o.applyErr = fmt.Sprintf("killed after %s: %s", limit, o.applyErr)
	}
	p := w.plan(c.o.timeout, label)
	o.planExit = p.exit
	o.blamed = o.blamed || providerBlamed.MatchString(p.out)
	switch p.exit {
	case 0:
	case 2:
		o.planChanges = planChanges(p.out, 16)
	default:
		o.planErr = errorText(p.out, 4)
	}
	o.checks = check(label)
	if !o.converged() {
		o.recovered = true
		r := w.apply(c.o.timeout, label+"-recover")
		o.recoverExit, o.recoverErr = r.exit, errorText(r.out, 6)
		rp := w.plan(c.o.timeout, label+"-recover")
		o.recoverPlan = rp.exit
		o.blamed = o.blamed || providerBlamed.MatchString(r.out) || providerBlamed.MatchString(rp.out)
		if o.refused {
			// A refused rerun changed nothing, by design: the host is as the kill left it, an
			// interrupted replacement's staged volume and all, until the recovery apply. The
			// host is judged after that apply, which is the one meant to converge.
			o.checks = check(label + "-recover")
			o.note = strings.TrimPrefix(o.note+"; checks after the recovery apply (the rerun was refused)", "; ")
		}
	}
	return o
}

// killPoint is one apply killed (or not, when it finished first) during a rolling replace.
type killPoint struct {
	n             int
	image         string
	delay         time.Duration
	finishedFirst bool
	firstExit     int
	firstErr      string
	survivors     []string
	// downAtKill are the members not running right after the kill, before the rerun: the
	// rollout's budget (max_unavailable = 1) says at most one.
	downAtKill []string
	outcome
}

func (k killPoint) line() string {
	s := fmt.Sprintf("kill %d: image %s, delay %s: ", k.n, filepath.Base(k.image), round(k.delay))
	if k.finishedFirst {
		s += fmt.Sprintf("apply finished before the kill (exit %d", k.firstExit)
		if k.firstErr != "" {
			s += ": " + k.firstErr
		}
		s += "); "
	} else {
		s += fmt.Sprintf("killed with %d members down (%s); ", len(k.downAtKill), listOrNothing(k.downAtKill))
	}
	if len(k.survivors) > 0 {
		s += "processes outlived the kill: " + strings.Join(k.survivors, ", ") + "; "
	}
	return s + k.outcome.line()
}

// killLoop flips the boot image and SIGKILLs terraform and its provider at a moment drawn
// uniformly from one undisturbed rollout, then reruns apply and plan and checks the host.
func (c *chaos) killLoop(res *results, rng *rand.Rand) {
	for i := 1; i <= c.o.kills; i++ {
		cfg := c.flip()
		label := fmt.Sprintf("kill%03d", i)
		k := killPoint{n: i, image: cfg.image, delay: time.Duration(rng.Int64N(int64(c.rollout) + 1))}
		if err := c.writeConfig(c.roll, cfg); err != nil {
			res.setupErr = err.Error()
			return
		}
		run, err := c.roll.start(label, applyArgs...)
		if err != nil {
			res.setupErr = err.Error()
			return
		}
		select {
		case <-run.done:
			r := run.result(false, nil)
			k.finishedFirst, k.firstExit, k.firstErr = true, r.exit, errorText(r.out, 4)
		case <-time.After(k.delay):
			k.survivors = run.kill().survivors
			k.downAtKill = c.membersDown()
		}
		rerun, note := c.roll.applyAfterKill(c.o.timeout, label+"-rerun")
		k.outcome = c.converge(rerun, note, label, expectation{members: c.o.members})
		res.kills = append(res.kills, k)
		logf("%s", k.line())
	}
}

// membersDown are the members that are missing or not running now.
func (c *chaos) membersDown() []string {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	doms, err := c.h.conn().ListDomains(ctx, groupName+"-")
	if err != nil {
		return []string{"cannot list domains: " + err.Error()}
	}
	status := map[string]engine.Status{}
	for _, d := range doms {
		status[d.Name] = d.Status
	}
	var down []string
	for i := 1; i <= c.o.members; i++ {
		switch st, ok := status[memberName(i)]; {
		case !ok:
			down = append(down, memberName(i)+" missing")
		case st != engine.StatusRunning:
			down = append(down, memberName(i)+" "+string(st))
		}
	}
	return down
}
