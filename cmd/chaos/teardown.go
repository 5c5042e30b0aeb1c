package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// teardownOutcome is the group's destroy and what it kept.
type teardownOutcome struct {
	ran bool
	// The first destroy is SIGKILLed, with its provider, once the group's deletion is under way
	// and not finished (killNote says how it went); the destroy checked below is the one after
	// it, which must finish the work.
	killNote      string
	killSurvivors []string
	destroyExit   int
	destroyErr    string
	kept          []string // NEVER data volumes that survived the destroy with their bytes
	lost          []string // NEVER data volumes gone or changed by the destroy
	// leftovers are what the destroy left of the group besides the NEVER data volumes:
	// domains, other volumes, the group record. Reported; the sweep removes them.
	leftovers []string
	swept     []string
	sweepErr  string
}

// teardown destroys the group through Terraform, checks that the data volumes the policy keeps
// with NEVER survived with their bytes, and removes everything of this run's names.
func (c *chaos) teardown(res *results, rng *rand.Rand) {
	t := &teardownOutcome{}
	res.teardown = t
	if c.roll != nil {
		t.ran = true
		t.killNote, t.killSurvivors = c.killDestroy(rng)
		logf("killed destroy: %s", t.killNote)
		d, note := c.roll.rerunAfterKill(c.o.timeout, "destroy", destroyArgs...)
		if note != "" {
			t.killNote += "; " + note
		}
		t.destroyExit, t.destroyErr = d.exit, errorText(d.out, 4)
		paths := map[string]string{}
		ctx, cancel := withTimeout(time.Minute)
		vols, err := c.h.conn().ListVolumes(ctx, c.pool, groupName+"-")
		cancel()
		if err != nil {
			t.lost = append(t.lost, "cannot list volumes: "+err.Error())
		}
		never := map[string]bool{}
		for i := 1; i <= c.o.members+1; i++ {
			// Member M+1's data disk is there when the two-writers scenario scaled it in.
			never[dataVolume(memberName(i))] = true
		}
		for _, v := range vols {
			paths[v.Name] = v.Path
			if !never[v.Name] {
				t.leftovers = append(t.leftovers, "volume "+v.Name)
			}
		}
		t.leftovers = append(t.leftovers, c.groupLeftovers()...)
		for i := 1; i <= c.o.members; i++ {
			name := dataVolume(memberName(i))
			want := c.sums[name]
			path, ok := paths[name]
			switch {
			case want == "":
				t.lost = append(t.lost, name+": its bytes were already lost before the destroy")
			case !ok:
				t.lost = append(t.lost, name+" was deleted by the destroy")
			default:
				if sum, _, err := checksum(path, c.scratch); err != nil {
					t.lost = append(t.lost, err.Error())
				} else if sum != want {
					t.lost = append(t.lost, fmt.Sprintf("%s has checksum %.12s…, had %.12s…", name, sum, want))
				} else {
					t.kept = append(t.kept, name)
				}
			}
		}
		logf("destroy exited %d%s; NEVER data volumes kept with their bytes: %d of %d%s; left behind besides them: %s", t.destroyExit,
			bracket(t.destroyErr), len(t.kept), c.o.members, bracket(strings.Join(t.lost, "; ")), listOrNothing(t.leftovers))
	}
	ctx, cancel := withTimeout(2 * time.Minute)
	defer cancel()
	removed, err := c.sweepHosts(ctx)
	t.swept = removed
	if err != nil {
		t.sweepErr = err.Error()
	}
	logf("removed %d of this run's objects (%s): %s%s", len(removed), strings.Join(ownNames(), ", "), listOrNothing(removed), bracket(t.sweepErr))
	if c.scratch != "" {
		if c.o.keep || len(res.failures()) > 0 || res.setupErr != "" {
			res.keptScratch = true
			logf("kept the scratch directory %s (terraform logs in roll/logs and writer2-logs)", c.scratch)
		} else {
			os.RemoveAll(c.scratch)
		}
	}
}

// killDestroy starts a destroy and SIGKILLs it with its provider inside the group's deletion:
// once the group record shows the policy gone (Terraform destroys it first) and the lease held,
// which the group's destroy takes before it touches a member, and then after a delay drawn from
// [0, one member's share of a rollout), which spreads the kill over the members' shutdown,
// undefinition and volume deletions. It samples the record every 5 ms; a destroy that finishes
// between two looks is reported, not killed, and one that never gets there is killed at the
// run's timeout.
func (c *chaos) killDestroy(rng *rand.Rand) (string, []string) {
	// The group's destroy stops and deletes its members all at once: about one member's share
	// of a rollout, which replaces them one at a time.
	span := 1500 * time.Millisecond
	if c.rollout > 0 && c.o.members > 0 {
		span = c.rollout / time.Duration(c.o.members)
	}
	extra := time.Duration(rng.Int64N(int64(span)))
	run, err := c.roll.start("killed", destroyArgs...)
	if err != nil {
		return "could not start: " + err.Error(), nil
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(c.o.timeout)
	var killAt <-chan time.Time
	for {
		select {
		case <-run.done:
			r := run.result(false, nil)
			return fmt.Sprintf("finished before the kill (exit %d%s)", r.exit, bracket(errorText(r.out, 2))), nil
		case <-deadline:
			k := run.kill()
			return fmt.Sprintf("did not reach the group's deletion in %s and was killed", c.o.timeout), k.survivors
		case <-killAt:
			gone := c.membersGone()
			k := run.kill()
			return fmt.Sprintf("was killed %s after the group's destroy took the lease, %s into the command, with %d of %d members gone",
				extra.Round(time.Millisecond), time.Since(run.start).Round(time.Millisecond), gone, c.o.members), k.survivors
		case <-tick.C:
		}
		if killAt == nil && c.groupDeletionBegun() {
			killAt = time.After(extra)
		}
	}
}

// groupDeletionBegun says whether the group record shows the policy destroyed and the lease held.
func (c *chaos) groupDeletionBegun() bool {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	s, m, err := reconcile.New(c.h.conn()).LoadRecord(ctx, groupName)
	return err == nil && m.Lease != nil && len(s.StatefulPolicy().Disks) == 0
}

// membersGone counts the members whose domain is no longer on the host.
func (c *chaos) membersGone() int {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	doms, err := c.h.conn().ListDomains(ctx, groupName+"-")
	if err != nil {
		return -1
	}
	on := map[string]bool{}
	for _, d := range doms {
		on[d.Name] = true
	}
	gone := 0
	for i := 1; i <= c.o.members; i++ {
		if !on[memberName(i)] {
			gone++
		}
	}
	return gone
}

// groupLeftovers are the group's domains and record that are still on the host.
func (c *chaos) groupLeftovers() []string {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	var out []string
	doms, err := c.h.conn().ListDomains(ctx, groupName+"-")
	if err != nil {
		out = append(out, "cannot list domains: "+err.Error())
	}
	for _, d := range doms {
		out = append(out, "domain "+d.Name)
	}
	groups, err := c.h.conn().GroupRecordNames(groupName)
	if err != nil {
		out = append(out, "cannot list group records: "+err.Error())
	}
	for _, g := range groups {
		if g == groupName {
			out = append(out, "group record "+g)
		}
	}
	return out
}

func listOrNothing(items []string) string {
	if len(items) == 0 {
		return "nothing"
	}
	return strings.Join(items, ", ")
}

func bracket(s string) string {
	if s == "" {
		return ""
	}
	return " [" + s + "]"
}
