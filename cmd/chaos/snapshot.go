package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"sync"
	"time"
)

// The snapshot scenario kills applies inside the snapshots of update_policy.snapshot (issue 46):
// the snapshot a rollout takes of a member's data disk after its stop, the revert a rollback
// makes of it, the rollback as a whole, and the deletion of snapshots past their retention.
//
// Its rollouts are the rollback scenario's (rollback.go) with a snapshot block: the first member
// the flipped image replaces is never ready, and the rollback replaces it back. While that member
// runs the new image, the harness writes a new byte pattern into its data disk through its QEMU
// (the monitor's qemu-io): what a database's first boot on a new image does when it migrates its
// files. A rollback that puts the disk back to the snapshot leaves the pre-rollout bytes; one
// that did not leaves the new pattern. Each kill point waits for its anchor in the provider's log,
// SIGKILLs terraform and the plugin at a moment drawn uniformly from a window of one undisturbed
// run, then applies the configuration without the health check (snapshots still on) and checks,
// besides what every kill point checks, that every byte is accounted for:
//
//   - each member's live data disk has its pre-rollout bytes, or the new pattern when (and only
//     when) the pattern was written and the rollback's revert did not run, and then a snapshot the
//     group's inventory holds has the pre-rollout bytes;
//   - every snapshot the inventory holds is in its volume's qcow2 file, and holds bytes the
//     volume had before a rollout; every snapshot of the provider's in a volume is in the
//     inventory;
//   - no snapshot helper domain (snapshot.<volume>) is left, and no member carries libvirt
//     snapshot metadata.
//
// The deletion kill points apply a rollout that succeeds with retention = "0s", then kill the
// apply that deletes its snapshots (live, through the running members); the rerun must leave no
// snapshot in any volume nor in the inventory.

// Kinds of snapshot kill points, taken in turn.
const (
	snapKindSnapshot = "snapshot"
	snapKindRevert   = "revert"
	snapKindRollback = "rollback"
	snapKindDeletion = "deletion"
)

var snapKinds = []string{snapKindSnapshot, snapKindRevert, snapKindRollback, snapKindDeletion}

// snapRetention is the retention of the rollback kinds' configuration: longer than the run, so
// that no snapshot expires between their applies.
const snapRetention = "1h"

// snapWindow is where a kind's kill delays are drawn from: [lo, hi] after its anchor event.
type snapWindow struct {
	anchor string // what the anchor is, for the summary
	lo, hi time.Duration
}

func (w snapWindow) String() string {
	return fmt.Sprintf("%s after %s", formatRange(w.lo, w.hi), w.anchor)
}

func formatRange(lo, hi time.Duration) string {
	return fmt.Sprintf("[%s, %s]", lo.Round(10*time.Millisecond), hi.Round(10*time.Millisecond))
}

// snapRun is what one apply under the snapshot configuration did: whether its rollout's member
// got the new pattern, whether the rollback put its disk back, how it ended.
type snapRun struct {
	exit   int
	killed bool
	err    string
	// anchorSeen is false when the apply ended before the kill point's anchor was logged.
	anchorSeen bool
	delay      time.Duration
	survivors  []string
	// wrote is the member whose data disk got the new pattern while it ran the new image.
	wrote    string
	writeErr string
	// writeUncertain: the write failed, and may have changed part of the disk.
	writeUncertain bool
	rolledBack     bool // the provider logged that the rollback began
	putBack        bool // the provider logged the revert of a disk to its snapshot
	noPutBack      bool // the provider logged a revert that found no snapshot
	snapshots      int  // snapshots taken, as logged
	deleted        int  // snapshots deleted, as logged
	dur            time.Duration
	events         []logEvent
}

func (r snapRun) line() string {
	var s string
	switch {
	case r.killed:
		s = fmt.Sprintf("killed %s after its anchor", round(r.delay))
	case !r.anchorSeen:
		s = fmt.Sprintf("ANCHOR NOT LOGGED, apply exit %d", r.exit)
	default:
		s = fmt.Sprintf("apply finished first, exit %d", r.exit)
	}
	if r.err != "" {
		s += " [" + r.err + "]"
	}
	var did []string
	if r.snapshots > 0 {
		did = append(did, fmt.Sprintf("%d snapshots taken", r.snapshots))
	}
	if r.wrote != "" {
		did = append(did, "new pattern written into "+r.wrote)
	} else if r.writeErr != "" {
		did = append(did, "no pattern written ("+r.writeErr+")")
	}
	if r.rolledBack {
		did = append(did, "rollback began")
	}
	if r.putBack {
		did = append(did, "disk put back")
	}
	if r.noPutBack {
		did = append(did, "revert found no snapshot")
	}
	if r.deleted > 0 {
		did = append(did, fmt.Sprintf("%d snapshots deleted", r.deleted))
	}
	if len(did) > 0 {
		s += "; " + strings.Join(did, ", ")
	}
	if len(r.survivors) > 0 {
		s += "; processes outlived the kill: " + strings.Join(r.survivors, ", ")
	}
	return s
}

// snapKill is one kill point of the scenario (or one of its undisturbed runs: n 0).
type snapKill struct {
	n      int
	kind   string
	image  string
	window snapWindow
	first  snapRun
	outcome
	snap snapCheck
	// cost is the kill point's whole time: its applies, plans and checks.
	cost time.Duration
	// err stops the scenario (it could not go on); problem is a finding that fails the run.
	err     string
	problem string
}

func (k snapKill) line() string {
	what := fmt.Sprintf("snapshot kill %d (%s)", k.n, k.kind)
	if k.n == 0 {
		what = "undisturbed " + k.kind
	}
	if k.err != "" {
		return what + ": could not run: " + k.err
	}
	if k.problem != "" {
		what += " [" + k.problem + "]"
	}
	return fmt.Sprintf("%s: %s; rerun: %s; snapshots: %s (%s)", what, k.first.line(), k.outcome.line(), k.snap.summary(), round(k.cost))
}

func (k snapKill) failed() []string {
	where := fmt.Sprintf("snapshot kill %d (%s)", k.n, k.kind)
	if k.n == 0 {
		where = "undisturbed " + k.kind
	}
	var out []string
	if k.err != "" {
		return []string{where + ": " + k.err}
	}
	if k.problem != "" {
		out = append(out, where+": "+k.problem)
	}
	if !k.first.anchorSeen {
		out = append(out, where+": the apply ended before its anchor was logged ("+k.window.anchor+")")
	}
	if !k.converged() {
		out = append(out, where+": did not converge")
	}
	for _, v := range k.checks.violations() {
		out = append(out, where+": "+v)
	}
	for _, v := range k.snap.violations() {
		out = append(out, where+": "+v)
	}
	return out
}

// snapshotResults is what the snapshot scenario measured.
type snapshotResults struct {
	windows  map[string]snapWindow
	measured []snapKill // the undisturbed rollback and the undisturbed deletion
	kills    []snapKill
	err      string
}

func (sr *snapshotResults) failures() []string {
	var out []string
	if sr.err != "" {
		out = append(out, "snapshot scenario: "+sr.err)
	}
	for _, k := range sr.measured {
		out = append(out, k.failed()...)
		if k.kind == "rollback" && (!k.first.rolledBack || !k.first.putBack) {
			out = append(out, "undisturbed rollback with snapshots: "+k.first.line()+": want a rollback that puts the disk back")
		}
	}
	for _, k := range sr.kills {
		out = append(out, k.failed()...)
	}
	return out
}

func (sr *snapshotResults) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("Snapshot kill points (`update_policy.snapshot`): the rollback configuration with a snapshot block; while the first member replaced runs the new image, " +
		"a new byte pattern is written into its data disk through its QEMU (a migration on first boot); the rollback must put the disk back. " +
		"Deletion points: a rollout that succeeds with `retention = \"0s\"`, then the apply that deletes its snapshots live. " +
		"After each rerun: live bytes pre-rollout (or the new pattern with a snapshot of the pre-rollout bytes, when the revert did not run), every inventory snapshot in its qcow2 with pre-rollout bytes, no provider snapshot outside the inventory, no helper domain, no snapshot metadata.\n\n")
	if sr.err != "" {
		p("Could not run: %s\n\n", cell(sr.err, 600))
	}
	if len(sr.windows) > 0 {
		var ws []string
		for _, kind := range snapKinds {
			if w, ok := sr.windows[kind]; ok {
				ws = append(ws, kind+" "+w.String())
			}
		}
		p("Kill windows: %s.\n\n", strings.Join(ws, "; "))
	}
	for _, k := range sr.measured {
		p("- %s\n", cell(k.line(), 2500))
	}
	p("\n")
	if len(sr.kills) == 0 {
		return b.String()
	}
	p("| snapshot kill point | anchor logged | killed | rerun converged | violations | cost |\n| --- | --- | --- | --- | ---: | ---: |\n")
	var total time.Duration
	for _, k := range sr.kills {
		total += k.cost
		p("| %d %s | %v | %v | %v | %d | %s |\n", k.n, k.kind, k.first.anchorSeen, k.first.killed, k.converged(), len(k.failed()), round(k.cost))
	}
	p("\nMean cost of a snapshot kill point: %s.\n\n", round(total/time.Duration(len(sr.kills))))
	for _, k := range sr.kills {
		p("- %s\n", cell(k.line(), 2500))
	}
	p("\n")
	return b.String()
}

// snapshotScenario measures one undisturbed rollback with snapshots and one undisturbed
// deletion, then runs the kill points, the kinds in turn.
func (c *chaos) snapshotScenario(res *results, rng *rand.Rand) {
	sr := &snapshotResults{windows: map[string]snapWindow{}}
	res.snapshots = sr
	w := &workdir{name: "snapshot", dir: c.roll.dir, env: append(append([]string(nil), c.env...), "TF_LOG_PROVIDER=INFO")}
	defer func() {
		// The scenarios after this one start from the plain configuration.
		if err := c.writeConfig(c.roll, c.current()); err != nil && sr.err == "" {
			sr.err = err.Error()
		}
	}()
	// Every byte each data volume had before a rollout: what its snapshots may hold.
	pres := map[string][]string{}

	// The undisturbed rollback: its events give the snapshot, revert and rollback windows.
	m := c.snapRollbackPoint(w, 0, snapKindRollback, snapWindow{}, nil, pres)
	sr.measured = append(sr.measured, m)
	logf("%s", m.line())
	if m.err != "" {
		sr.err = m.err
		return
	}
	evs := m.first.events
	start, ok := firstTimes(evs)
	if !ok {
		sr.err = "the undisturbed rollback's log lacks the events the windows are measured from: " + m.first.line()
		return
	}
	sr.windows[snapKindSnapshot] = snapWindow{anchor: "the rollout's power-off", lo: 0, hi: start.waitReady.Sub(start.powerOff)}
	sr.windows[snapKindRevert] = snapWindow{anchor: "the rollback's start", lo: start.rbPowerOff.Sub(start.rollback), hi: start.putBack.Sub(start.rollback) + 300*time.Millisecond}
	sr.windows[snapKindRollback] = snapWindow{anchor: "the rollback's start", lo: 0, hi: start.end.Sub(start.rollback)}

	// The undisturbed deletion: its apply gives the deletion window.
	d, dwin := c.snapDeletionPoint(w, 0, snapWindow{}, nil, pres)
	sr.measured = append(sr.measured, d)
	logf("%s", d.line())
	if d.err != "" {
		sr.err = d.err
		return
	}
	sr.windows[snapKindDeletion] = dwin

	for i := 1; i <= c.o.snapshotKills; i++ {
		kind := snapKinds[(i-1)%len(snapKinds)]
		win := sr.windows[kind]
		var k snapKill
		if kind == snapKindDeletion {
			k, _ = c.snapDeletionPoint(w, i, win, rng, pres)
		} else {
			k = c.snapRollbackPoint(w, i, kind, win, rng, pres)
		}
		sr.kills = append(sr.kills, k)
		logf("%s", k.line())
		if k.err != "" {
			sr.err = k.err
			return
		}
	}
}

// snapTimes are the moments of an undisturbed rollback the windows are measured from.
type snapTimes struct {
	powerOff, waitReady, rollback, rbPowerOff, putBack, end time.Time
}

// firstTimes reads an undisturbed rollback's events: the rollout's power-off and its member's
// wait, the rollback's start, its power-off and revert, and its last event.
func firstTimes(evs []logEvent) (snapTimes, bool) {
	var t snapTimes
	po, i := firstEvent(evs, 0, evPowerOff)
	if i < 0 {
		return t, false
	}
	wr, j := firstEvent(evs, i, evWaitReady)
	rb, k := firstEvent(evs, j, evRollback)
	rpo, l := firstEvent(evs, k, evPowerOff)
	pb, m := firstEvent(evs, l, evPutBack)
	if j < 0 || k < 0 || l < 0 || m < 0 {
		return t, false
	}
	t = snapTimes{powerOff: po.at, waitReady: wr.at, rollback: rb.at, rbPowerOff: rpo.at, putBack: pb.at, end: evs[len(evs)-1].at}
	return t, true
}

// draw is a delay drawn uniformly from the window.
func (w snapWindow) draw(rng *rand.Rand) time.Duration {
	if w.hi <= w.lo {
		return w.lo
	}
	return w.lo + time.Duration(rng.Int64N(int64(w.hi-w.lo)+1))
}

// preBytes are the members' data volumes' digests now, before a rollout, added to pres.
func (c *chaos) preBytes(pres map[string][]string) (map[string]string, error) {
	pre := map[string]string{}
	for i := 1; i <= c.o.members; i++ {
		name := dataVolume(memberName(i))
		path, err := c.h.volumePath(c.pool, name)
		if err != nil {
			return nil, err
		}
		sum, _, err := checksum(path, c.scratch)
		if err != nil {
			return nil, err
		}
		pre[name] = sum
		if !slices.Contains(pres[name], sum) {
			pres[name] = append(pres[name], sum)
		}
	}
	return pre, nil
}

// snapApply runs one apply of the snapshot scenario: killed delay after the first event anchor
// matches (rng nil: not killed), and, with write, the rollout's member's data disk written with
// pattern while it runs the new image, before the rollback begins.
func (c *chaos) snapApply(w *workdir, label string, anchor func(string) bool, win snapWindow, rng *rand.Rand, write bool, pattern byte) snapRun {
	var r snapRun
	run, err := w.start(label, applyArgs...)
	if err != nil {
		r.exit, r.err = -1, err.Error()
		return r
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	var wmu sync.Mutex
	if write {
		wg.Add(1)
		go func() {
			defer wg.Done()
			member, uncertain, err := c.writeWhenReady(run, stop, pattern)
			wmu.Lock()
			r.wrote, r.writeUncertain = member, uncertain
			if err != nil && member == "" {
				r.writeErr = err.Error()
			}
			wmu.Unlock()
		}()
	}
	var res tfResult
	if rng == nil {
		res = run.finish(c.o.timeout)
		r.anchorSeen = true
	} else {
		r.delay = win.draw(rng)
		at, seen := run.start, true
		if anchor != nil {
			at, seen = waitForEvent(run, anchor)
		}
		r.anchorSeen = seen
		if seen {
			select {
			case <-run.done:
				res = run.result(false, nil)
			case <-time.After(time.Until(at.Add(r.delay))):
				res = run.kill()
				r.killed = true
				r.survivors = res.survivors
			}
		} else {
			res = run.finish(c.o.timeout)
		}
	}
	close(stop)
	wg.Wait()
	r.exit, r.dur = res.exit, res.dur
	if !res.killed {
		r.err = errorText(res.out, 4)
	}
	evs := logEvents(res.out)
	r.events = evs
	for _, e := range evs {
		switch {
		case evRollback(e.msg):
			r.rolledBack = true
		case evPutBack(e.msg):
			r.putBack = true
		case evNoPutBack(e.msg):
			r.noPutBack = true
		case evSnapshot(e.msg):
			r.snapshots++
		case evDeleted(e.msg):
			r.deleted++
		}
	}
	return r
}

// writeWhenReady waits for the rollout's first member to start on the new image (the provider
// logs that it waits for it to be ready) and writes pattern into its data disk while it still
// runs: before the rollback powers it off, which is when its disk becomes the rollback's to put
// back. The provider's wait logs only after the member's start, and with the short ready_timeout
// it is over at once; the member then still runs through the rollback's graceful stop (the
// shutdown_timeout), as a guest that writes while it shuts down. It returns the member written;
// uncertain is set when the write failed part-way (QEMU powered off under it).
func (c *chaos) writeWhenReady(run *tfRun, stop chan struct{}, pattern byte) (member string, uncertain bool, err error) {
	for {
		b, _ := os.ReadFile(run.log)
		evs := logEvents(string(b))
		if e, i := firstEvent(evs, 0, evWaitReady); i >= 0 {
			if _, rb := firstEvent(evs, i, evRollback); rb >= 0 {
				if _, off := firstEvent(evs, rb, evPowerOff); off >= 0 {
					return "", false, fmt.Errorf("the rollback powered the member off before the harness saw it start")
				}
			}
			member := readyMember(e.msg)
			wrote, err := c.writeRunning(member, dataVolume(member), pattern)
			switch {
			case wrote:
				return member, false, err
			case err != nil:
				return "", true, err
			}
			return member, false, nil
		}
		select {
		case <-stop:
			return "", false, fmt.Errorf("the apply ended before the member started on the new image")
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// snapRollbackPoint is one rollback with snapshots (rng nil: undisturbed), and the rerun after it.
func (c *chaos) snapRollbackPoint(w *workdir, n int, kind string, win snapWindow, rng *rand.Rand, pres map[string][]string) (k snapKill) {
	began := time.Now()
	label := fmt.Sprintf("snap%03d", n)
	if n == 0 {
		label = "snap-measure"
	}
	k = snapKill{n: n, kind: kind, window: win}
	defer func() { k.cost = time.Since(began) }()
	pre, err := c.preBytes(pres)
	if err != nil {
		k.err = err.Error()
		return k
	}
	cfg := c.flip()
	cfg.rollback, cfg.snapshot, cfg.retention = true, true, snapRetention
	k.image = cfg.image
	if err := c.writeConfig(w, cfg); err != nil {
		k.err = err.Error()
		return k
	}
	anchor := evRollback
	if kind == snapKindSnapshot {
		anchor = evPowerOff
	}
	// Each kill point writes a pattern of its own, unlike any member's first one.
	pattern := byte(0xa0 + n%0x50)
	k.first = c.snapApply(w, label, anchor, win, rng, true, pattern)
	if !k.first.killed && k.first.anchorSeen && (k.first.exit == 0 || !k.first.rolledBack) {
		k.problem = fmt.Sprintf("the apply did not roll back: %s", k.first.line())
	}
	garbage := ""
	if k.first.wrote != "" {
		if garbage, err = patternChecksum(16, pattern, c.scratch); err != nil {
			k.err = err.Error()
			return k
		}
	}
	// A rollback that ran to its end put the disk back: the new pattern may stay only when the
	// revert was not reached.
	reverted := k.first.putBack || (!k.first.killed && k.first.rolledBack)
	cfg.rollback = false
	if err := c.writeConfig(w, cfg); err != nil {
		k.err = err.Error()
		return k
	}
	k.outcome = c.snapRerun(w, label)
	k.snap = c.snapInspect(pre, pres, k.first.wrote, garbage, reverted, false)
	if k.first.writeUncertain && !reverted {
		// A write cut off by the power-off may have left part of the pattern: the live bytes are
		// then nobody's to predict; the snapshot still must hold the pre-rollout bytes.
		k.snap.lost, k.snap.notes = partialWrite(k.snap.lost, k.snap.notes)
	}
	return k
}

// snapDeletionPoint is a rollout that succeeds with retention 0s, then the apply that deletes its
// snapshots (rng nil: undisturbed; its window is returned), and the rerun after it.
func (c *chaos) snapDeletionPoint(w *workdir, n int, win snapWindow, rng *rand.Rand, pres map[string][]string) (k snapKill, _ snapWindow) {
	began := time.Now()
	label := fmt.Sprintf("snapdel%03d", n)
	if n == 0 {
		label = "snapdel-measure"
	}
	k = snapKill{n: n, kind: snapKindDeletion, window: win}
	defer func() { k.cost = time.Since(began) }()
	if _, err := c.preBytes(pres); err != nil {
		k.err = err.Error()
		return k, win
	}
	cfg := c.flip()
	cfg.snapshot, cfg.retention = true, "0s"
	k.image = cfg.image
	if err := c.writeConfig(w, cfg); err != nil {
		k.err = err.Error()
		return k, win
	}
	r := w.apply(c.o.timeout, label+"-rollout")
	if r.exit != 0 {
		k.err = fmt.Sprintf("the rollout that takes the snapshots failed (exit %d): %s", r.exit, errorText(r.out, 4))
		return k, win
	}
	taken := 0
	for _, e := range logEvents(r.out) {
		if evSnapshot(e.msg) {
			taken++
		}
	}
	if taken != c.o.members {
		k.err = fmt.Sprintf("the rollout took %d snapshots, want one per member (%d)", taken, c.o.members)
		return k, win
	}
	pre, err := c.preBytes(pres)
	if err != nil {
		k.err = err.Error()
		return k, win
	}
	// The deletions of a wave run at once, through the members' QEMUs, in tens to hundreds of
	// milliseconds, and terraform relays the provider's log late enough that a kill drawn after
	// its reconciliation event came after the apply had ended: the delays are drawn from the
	// apply's start (nil anchor), around its reconciliation and deletions as one undisturbed
	// apply timed them.
	applyBegan := time.Now()
	k.first = c.snapApply(w, label, nil, win, rng, false, 0)
	if rng == nil {
		evs := k.first.events
		rc, i := firstEvent(evs, 0, evReconciles)
		last, ok := lastEvent(evs, evDeleted)
		if i < 0 || !ok || k.first.deleted != c.o.members || k.first.exit != 0 {
			k.err = fmt.Sprintf("the apply after a rollout with retention 0s did not delete one snapshot per member: %s", k.first.line())
			return k, win
		}
		win = snapWindow{anchor: "the deleting apply's start", lo: max(0, rc.at.Sub(applyBegan)-2*time.Second), hi: last.at.Sub(applyBegan) + time.Second}
		k.window = win
	}
	k.outcome = c.snapRerun(w, label)
	k.snap = c.snapInspect(pre, pres, "", "", false, true)
	return k, win
}

// snapRerun applies the configuration w holds after a kill, in w (the provider's log in its
// output), and checks the group as every kill point does.
func (c *chaos) snapRerun(w *workdir, label string) outcome {
	rerun, note := w.applyAfterKill(c.o.timeout, label+"-rerun")
	e := c.snapExpectation()
	return c.convergeIn(w, func(label string) checkResult { return c.check(label, e) }, rerun, note, label)
}

// snapExpectation is the common checks' expectation, with the data volumes' bytes left to
// snapInspect: a rollout that was not put back leaves the new pattern by design.
func (c *chaos) snapExpectation() expectation {
	for i := 1; i <= c.o.members; i++ {
		c.sums[dataVolume(memberName(i))] = ""
	}
	return expectation{members: c.o.members}
}
