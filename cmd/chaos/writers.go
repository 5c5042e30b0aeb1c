package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"
)

// writerTrial is one race of two Terraform states applying to the group at once.
type writerTrial struct {
	n         int
	kind      string // "second state creates" or "import takes over"
	exits     [2]int
	errs      [2]string
	afterRace []string
	// verdict is "one proceeded" when exactly one apply succeeded and the other failed with a
	// refusal, else what went wrong.
	verdict string
	ok      bool
}

func (t writerTrial) line() string {
	return fmt.Sprintf("trial %d (%s): first exit %d%s, second exit %d%s; domains after: %s; %s",
		t.n, t.kind, t.exits[0], bracket(t.errs[0]), t.exits[1], bracket(t.errs[1]), strings.Join(t.afterRace, ", "), t.verdict)
}

// writersOutcome is the two-writers scenario.
type writersOutcome struct {
	ran    bool
	err    string
	trials []writerTrial
	outcome
}

func (w writersOutcome) line() string {
	if w.err != "" {
		return "two writers: " + w.err
	}
	ok := 0
	for _, t := range w.trials {
		if t.ok {
			ok++
		}
	}
	return fmt.Sprintf("two writers: %d of %d trials with exactly one apply proceeding and the other refused before changing anything; then the first directory's %s",
		ok, len(w.trials), w.outcome.line())
}

// refusal is how a refused writer's error starts: another state owns the group, another apply
// holds its lease, or the group exists already.
var refusal = regexp.MustCompile(`already exists|belongs to another Terraform state|being changed by another apply|changed by another apply since this plan\s+was\s+made|changed on the host after\s+the\s+plan\s+was\s+made`)

// writersScenario races the group's own directory against a second directory, trials times, in
// turn: the second declares the group as a new one in a state of its own (it must be refused with
// the import hint); it imports the group and scales it out (both may change it; exactly one may
// proceed, the lease and the ownership decide which); it holds a copy of the first's state and
// scales out (the lease, or the record having changed since its plan, refuses one).
// Whoever won, the first directory gets the group back (by importing it again when it lost it),
// and its next plan must be empty.
func (c *chaos) writersScenario(res *results) {
	w := writersOutcome{ran: true}
	defer func() { res.writers = &w; logf("%s", w.line()) }()
	second, err := c.newWorkdir("writer2")
	if err != nil {
		w.err = err.Error()
		return
	}
	defer func() {
		_ = os.Rename(filepath.Join(second.dir, "logs"), filepath.Join(c.scratch, "writer2-logs"))
		os.RemoveAll(second.dir)
	}()
	for n := 1; n <= c.o.writerTrials; n++ {
		t := c.writerTrial(n, second)
		logf("two writers: %s", t.line())
		w.trials = append(w.trials, t)
	}
	rerun := c.roll.apply(c.o.timeout, "writers-rerun")
	w.outcome = c.converge(rerun, "", "writers", expectation{members: c.o.members, allowed: c.extraMemberVolumes()})
}

// extraMemberVolumes are the data volumes a won scale-out leaves after the scale-in back: kept by
// the policy's delete_rule NEVER.
func (c *chaos) extraMemberVolumes() map[string]string {
	return map[string]string{dataVolume(memberName(c.o.members + 1)): "kept by delete_rule NEVER after a second writer's extra member was scaled in"}
}

func (c *chaos) writerTrial(n int, second *workdir) writerTrial {
	t := writerTrial{n: n, kind: "second state creates"}
	importing, copying := n%3 == 2, n%3 == 0
	switch {
	case importing:
		t.kind = "import takes over"
	case copying:
		t.kind = "copy of the state"
	}
	// The second directory starts from an empty state each time, or from a copy of the first's.
	for _, f := range []string{"terraform.tfstate", "terraform.tfstate.backup"} {
		os.Remove(filepath.Join(second.dir, f))
	}
	if copying {
		b, err := os.ReadFile(filepath.Join(c.roll.dir, "terraform.tfstate"))
		if err == nil {
			err = os.WriteFile(filepath.Join(second.dir, "terraform.tfstate"), b, 0o600)
		}
		if err != nil {
			t.verdict = err.Error()
			return t
		}
	}
	mine := c.flip()
	theirs := mine
	theirs.size = c.o.members + 1
	if importing {
		theirs.extra = importBlocks()
	}
	if err := c.writeConfig(c.roll, mine); err != nil {
		t.verdict = err.Error()
		return t
	}
	if err := c.writeConfig(second, theirs); err != nil {
		t.verdict = err.Error()
		return t
	}
	runs := [2]*tfRun{}
	for i, d := range []*workdir{c.roll, second} {
		r, err := d.start(fmt.Sprintf("writers%d", n), applyArgs...)
		if err != nil {
			t.verdict = err.Error()
			return t
		}
		runs[i] = r
	}
	var outs [2]string
	for i, r := range runs {
		res := r.finish(c.o.timeout)
		t.exits[i], t.errs[i], outs[i] = res.exit, errorText(res.out, 3), res.out
	}
	ctx, cancel := withTimeout(time.Minute)
	doms, err := c.h.conn().ListDomains(ctx, groupName+"-")
	cancel()
	if err != nil {
		t.afterRace = []string{"cannot list: " + err.Error()}
	}
	for _, d := range doms {
		t.afterRace = append(t.afterRace, d.Name)
	}
	sort.Strings(t.afterRace)
	won := -1
	switch {
	case t.exits[0] == 0 && t.exits[1] != 0 && refusal.MatchString(outs[1]):
		won = 0
	case t.exits[1] == 0 && t.exits[0] != 0 && refusal.MatchString(outs[0]):
		won = 1
	}
	wantSize := c.o.members
	if won == 1 {
		wantSize++
	}
	switch {
	case providerBlamed.MatchString(outs[0]) || providerBlamed.MatchString(outs[1]):
		t.verdict = "Terraform blamed the provider (\"inconsistent\" or \"bug in the provider\")"
	case won < 0:
		t.verdict = "no clean winner"
	case !importing && !copying && won == 1:
		t.verdict = "the second state's create was not refused"
	case !importing && !copying && !strings.Contains(outs[1], "terraform import"):
		t.verdict = "the refused create gave no import hint"
	case len(doms) != wantSize:
		t.verdict = fmt.Sprintf("%d domains after the race, want the winner's %d", len(doms), wantSize)
	default:
		t.ok = true
		t.verdict = fmt.Sprintf("one proceeded (%s), the other was refused", []string{"first", "second"}[won])
	}
	if won == 1 && copying {
		// The copy scaled the group out: the first directory, the same owner, plans from what
		// the host has and puts its configuration back.
		c.roll.apply(c.o.timeout, fmt.Sprintf("writers%d-back", n))
	} else if won == 1 {
		// The second directory took the group over: the first takes it back the same way, and
		// scales it back in.
		back := mine
		back.extra = importBlocks()
		for _, a := range [][]string{{"state", "rm", "virt_stateful_group.x", "virt_stateful_policy.x"}} {
			c.roll.run(c.o.timeout, fmt.Sprintf("writers%d-forget", n), a...)
		}
		if err := c.writeConfig(c.roll, back); err == nil {
			c.roll.apply(c.o.timeout, fmt.Sprintf("writers%d-takeback", n))
		}
		_ = c.writeConfig(c.roll, mine)
	}
	return t
}

// importBlocks bring the group and its policy into a state that did not create them. A function,
// not a variable: -run-name renames groupName after package initialisation.
func importBlocks() string {
	return fmt.Sprintf(`
import {
  to = virt_stateful_group.x
  id = %q
}

import {
  to = virt_stateful_policy.x
  id = %q
}
`, groupName, groupName)
}
