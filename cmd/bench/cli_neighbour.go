package main

import (
	"fmt"
	"time"
)

// A group reads the definitions of the domains that can be its members only: the host's other
// domains cost it one entry each in one listing call. The neighbour cycle measures that through
// the CLI: a small group of running members, next to the N-member group while it exists, is
// created, planned and changed, and the change must restart none of its members.
const (
	neighbourGroup = benchPrefix + "nb"
	neighbourSize  = 10
)

// neighbourCycle runs the small group's cycle beside the N-member group and adds its rows to
// r.neighbour.
func (c *cliBench) neighbourCycle(r *sizeResult) error {
	w, err := c.newDir(fmt.Sprintf("n%d-neighbour", r.n))
	if err != nil {
		return err
	}
	who := fmt.Sprintf("N=%d, %d running beside:", r.n, neighbourSize)
	step := func(op, label string, args []string) (tfResult, error) {
		return c.step(w, who, op, label, false, 0, args)
	}
	if err := c.writeGroupRunning(w, neighbourGroup, neighbourSize, true, "tfbench v1", "m1"); err != nil {
		return err
	}
	res, err := step("create (apply)", "create", applyArgs)
	if err != nil {
		return err
	}
	r.neighbour = append(r.neighbour, cliRow{op: "create (apply)", cli: res.dur})
	var ds []time.Duration
	for rep := 0; rep < c.o.planReps; rep++ {
		res, err := step("no-op plan", "no-op-plan", planArgs)
		if err != nil {
			return err
		}
		ds = append(ds, res.dur)
	}
	r.neighbour = append(r.neighbour, cliRow{op: "no-op plan", cli: medianOf(ds), note: fmt.Sprintf("median of %d: %s", len(ds), durList(ds))})
	before, err := c.runningIDs(neighbourGroup, neighbourSize, "tfbench v1", "m1")
	if err != nil {
		return fmt.Errorf("after create: %w", err)
	}
	if err := c.writeGroupRunning(w, neighbourGroup, neighbourSize, true, "tfbench v2", "m1"); err != nil {
		return err
	}
	if res, err = step("description change (apply)", "change", applyArgs); err != nil {
		return err
	}
	after, err := c.runningIDs(neighbourGroup, neighbourSize, "tfbench v2", "m1")
	if err != nil {
		return fmt.Errorf("after the description change: %w", err)
	}
	for name, id := range before {
		if after[name] != id {
			return fmt.Errorf("the description change restarted %s (domain id %d, then %d)", name, id, after[name])
		}
	}
	r.neighbour = append(r.neighbour, cliRow{op: "description change (apply)", cli: res.dur, note: "no member restarted (domain ids unchanged)"})
	if _, err := step("destroy", "destroy", destroyArgs); err != nil {
		return err
	}
	return c.destroyed(neighbourGroup)
}
