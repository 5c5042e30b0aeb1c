package main

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// writersOutcome is the two-writers scenario: two Terraform states apply to one group at once.
type writersOutcome struct {
	ran        bool
	err        string
	exits      [2]int
	errs       [2]string
	durs       [2]time.Duration
	afterRace  []string // the group's domains right after both applies ended
	sizeSecond int
	outcome
}

func (w writersOutcome) line() string {
	if w.err != "" {
		return "two writers: " + w.err
	}
	s := fmt.Sprintf("two writers: first (size %d, image flip) exited %d", w.sizeSecond-1, w.exits[0])
	if w.errs[0] != "" {
		s += " [" + w.errs[0] + "]"
	}
	s += fmt.Sprintf(", second (own state, size %d) exited %d", w.sizeSecond, w.exits[1])
	if w.errs[1] != "" {
		s += " [" + w.errs[1] + "]"
	}
	s += fmt.Sprintf("; domains after the race: %s; then the first directory's ", strings.Join(w.afterRace, ", "))
	return s + w.outcome.line()
}

// writersScenario runs the group's own directory (flipping the image) and a second directory with
// its own state and target_size M+1 at the same moment. Who may win is a later issue's business
// (the lease); this measures what happens today. The second directory is then just deleted: the
// group stays the first directory's.
func (c *chaos) writersScenario(res *results) {
	w := writersOutcome{ran: true, sizeSecond: c.o.members + 1}
	defer func() { res.writers = &w; logf("%s", w.line()) }()
	cfg := c.flip()
	second, err := c.newWorkdir("writer2")
	if err != nil {
		w.err = err.Error()
		return
	}
	// The second directory goes without a destroy: the group stays the first directory's. Its
	// terraform logs are kept beside the others, to read what the second writer did.
	defer func() {
		_ = os.Rename(filepath.Join(second.dir, "logs"), filepath.Join(c.scratch, "writer2-logs"))
		os.RemoveAll(second.dir)
	}()
	wide := cfg
	wide.size = c.o.members + 1
	if err := c.writeConfig(c.roll, cfg); err != nil {
		w.err = err.Error()
		return
	}
	if err := c.writeConfig(second, wide); err != nil {
		w.err = err.Error()
		return
	}
	runs := [2]*tfRun{}
	for i, d := range []*workdir{c.roll, second} {
		if runs[i], err = d.start("writers", applyArgs...); err != nil {
			w.err = err.Error()
			return
		}
	}
	for i, r := range runs {
		res := r.finish(c.o.timeout)
		w.exits[i], w.errs[i], w.durs[i] = res.exit, errorText(res.out, 6), res.dur
	}
	ctx, cancel := withTimeout(time.Minute)
	doms, err := c.h.conn().ListDomains(ctx, groupName+"-")
	cancel()
	if err != nil {
		w.afterRace = []string{"cannot list: " + err.Error()}
	}
	for _, d := range doms {
		w.afterRace = append(w.afterRace, d.Name+" "+d.Status)
	}
	sort.Strings(w.afterRace)
	// Scaling in from M+1 keeps the extra member's data disk: the policy's delete_rule is NEVER.
	extra := dataVolume(memberName(c.o.members + 1))
	rerun := c.roll.apply(c.o.timeout, "writers-rerun")
	w.outcome = c.converge(rerun, "", "writers", expectation{members: c.o.members,
		allowed: map[string]string{extra: "kept by delete_rule NEVER after the second writer's extra member was scaled in"}})
}
