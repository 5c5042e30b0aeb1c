package main

import (
	"fmt"
	"os"
	"strings"
	"time"
)

// teardownOutcome is the group's destroy and what it kept.
type teardownOutcome struct {
	ran         bool
	destroyExit int
	destroyErr  string
	kept        []string // NEVER data volumes that survived the destroy with their bytes
	lost        []string // NEVER data volumes gone or changed by the destroy
	// leftovers are what the destroy left of the group besides the NEVER data volumes:
	// domains, other volumes, the group record. Reported; the sweep removes them.
	leftovers []string
	swept     []string
	sweepErr  string
}

// teardown destroys the group through Terraform, checks that the data volumes the policy keeps
// with NEVER survived with their bytes, and removes everything tfchaos-….
func (c *chaos) teardown(res *results) {
	t := &teardownOutcome{}
	res.teardown = t
	if c.roll != nil {
		t.ran = true
		d := c.roll.run(c.o.timeout, "destroy", "destroy", "-auto-approve", "-input=false", "-no-color")
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
	removed, err := c.h.sweep(ctx, prefix)
	t.swept = removed
	if err != nil {
		t.sweepErr = err.Error()
	}
	logf("removed %d tfchaos- objects: %s%s", len(removed), listOrNothing(removed), bracket(t.sweepErr))
	if c.scratch != "" {
		if c.o.keep || len(res.failures()) > 0 || res.setupErr != "" {
			res.keptScratch = true
			logf("kept the scratch directory %s (terraform logs in roll/logs and writer2-logs)", c.scratch)
		} else {
			os.RemoveAll(c.scratch)
		}
	}
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
