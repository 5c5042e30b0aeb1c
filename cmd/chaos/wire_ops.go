package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/faultproxy"
)

// drawnOps are the operations of -wire-ops, every one of wireOps when it is empty.
func drawnOps(list string) ([]string, error) {
	if list == "" {
		return wireOps, nil
	}
	var out []string
	for _, op := range strings.Split(list, ",") {
		if !slices.Contains(wireOps, op) {
			return nil, fmt.Errorf("-wire-ops: %q is not an operation; want some of %s", op, strings.Join(wireOps, ","))
		}
		out = append(out, op)
	}
	return out, nil
}

// planArgs is a plan that says by its exit code whether it has changes.
var planArgs = []string{"plan", "-detailed-exitcode", "-input=false", "-no-color"}

// prepare turns the trial's operation into the configuration and the command it runs under the
// fault; an operation the group's state does not allow becomes one it does (a scale-out at the
// largest size a scale-in, anything but a create after a destroy that did not come back a
// create). What each does:
//
//   - create: destroys the group with no fault, then creates it again under the fault, the data
//     disks NEVER kept reused with their bytes.
//   - update: a description change (hot: the domains' definitions, no restart).
//   - seed-swap: a metadata change: every member's seed is written again and swapped live.
//   - replace: the user data flipped: every member REPLACEd, one at a time.
//   - rollback: the user data flipped with a guest agent health check and on_failure =
//     "ROLLBACK": the guests boot no operating system, so the first member replaced is never
//     ready, its wave fails and it is replaced back, whose wait fails in turn. The command fails
//     by design; the rerun, without the health check, REPLACEs every member.
//   - probe: the guest agent health check added, nothing else: the refresh and the apply probe
//     every member through its daemon (probes that time out in libvirt: there is no agent).
//   - move: the drain flipped, every member moved to the other host: live from the system
//     daemon, refused by h2's (it cannot open the system daemon's socket) and made cold. One
//     trial in two stops the group in the same apply, which makes every move cold; the rerun
//     starts it again. A group below its largest size is first scaled out with no fault, so
//     that no data disk NEVER keeps is left on the host drained (a later scale-out would not
//     find it there).
//   - scale-out, scale-in: member wireMaxSize added (its kept data disk reused) or removed.
//   - plan: a plan with a change to make (a description).
//   - destroy: the group destroyed, its data disks kept; the rerun creates it again.
func (wr *wirer) prepare(t *wireTrial, label string) (args []string, cf wireConf, err error) {
	c := wr.c
	cf = wireConf{running: true}
	args = applyArgs
	if !wr.present {
		// After a destroy whose rerun did not bring the group back, only a create makes sense.
		t.op = "create"
	}
	if t.op == "move" && wr.size < wireMaxSize {
		wr.size = wireMaxSize
		if err := wr.writeConfig(cf); err != nil {
			return nil, cf, err
		}
		if r := wr.w.apply(c.o.timeout, label+"-prescale"); r.exit != 0 {
			return nil, cf, fmt.Errorf("the scale-out before the move failed: %s", errorText(r.out, 4))
		}
	}
	switch t.op {
	case "create":
		if wr.present {
			if r := wr.w.run(c.o.timeout, label+"-predestroy", destroyArgs...); r.exit != 0 {
				return nil, cf, fmt.Errorf("the destroy before the create failed: %s", errorText(r.out, 4))
			}
			wr.present = false
			// The destroy keeps the NEVER data disks: judged now, so that a loss is put on the
			// undisturbed destroy rather than on the faulted create after it.
			if pre := wr.check(label + "-predestroy"); len(pre.lost) > 0 {
				t.preLost = pre.lost
			}
		}
	case "update":
		wr.desc++
	case "seed-swap":
		wr.gen++
	case "replace":
		wr.ud = 1 - wr.ud
	case "rollback":
		wr.ud = 1 - wr.ud
		cf.health, cf.rollback = true, true
	case "probe":
		cf.health = true
	case "move":
		wr.drain = wr.live()
		if wr.rng.IntN(2) == 0 {
			cf.running = false
			t.op = "move-cold"
		}
	case "scale-out":
		if wr.size == wireMaxSize {
			t.op = "scale-in"
			wr.size--
		} else {
			wr.size++
		}
	case "scale-in":
		if wr.size < wireMaxSize {
			t.op = "scale-out"
			wr.size++
		} else {
			wr.size--
		}
	case "plan":
		args = planArgs
		wr.desc++ // a plan with a change to make
	case "destroy":
		args = destroyArgs
	}
	return args, cf, wr.writeConfig(cf)
}

// trial draws an operation, a fault and a proxy, runs the operation under the fault, clears it,
// reruns apply and plan and checks both hosts.
func (wr *wirer) trial(n int) (t wireTrial) {
	c := wr.c
	ops, _ := drawnOps(c.o.wireOps)
	t = wireTrial{n: n, op: ops[wr.rng.IntN(len(ops))], fault: wireFaults[wr.rng.IntN(len(wireFaults))],
		proxy: wireHosts[wr.rng.IntN(len(wireHosts))]}
	label := fmt.Sprintf("wire%03d-%s-%s", n, t.op, t.fault)
	args, _, err := wr.prepare(&t, label)
	if err != nil {
		t.exit, t.err = -1, err.Error()
		return t
	}
	f, detail := wireFault(wr.rng, t.fault)
	t.detail = detail
	px := wr.proxies[t.proxy]
	dialFailed := map[string]int{}
	for h, p := range wr.proxies {
		dialFailed[h], _ = p.DialFailures()
	}
	defer func() {
		for _, h := range wireHosts {
			if n, err := wr.proxies[h].DialFailures(); n > dialFailed[h] {
				t.dialFailed += fmt.Sprintf("%s's proxy could not reach its daemon %d times (%v) ", h, n-dialFailed[h], err)
			}
		}
		t.dialFailed = strings.TrimSpace(t.dialFailed)
	}()
	// Drain events of earlier trials.
	for len(px.Fired()) > 0 {
		<-px.Fired()
	}
	px.SetFault(f)
	run, err := wr.w.start(label, args...)
	if err != nil {
		px.Clear()
		t.exit, t.err = -1, err.Error()
		return t
	}
	r := run.finish(wireOpTimeout + wireGrace)
	px.Clear()
	select {
	case ev := <-px.Fired():
		t.fired, t.firedAt = true, fmt.Sprintf("connection %d byte %d", ev.Conn, ev.At)
	default:
	}
	t.exit, t.dur, t.hung, t.log = r.exit, r.dur, r.timedOut, r.log
	t.err = errorText(r.out, 4)
	if t.op == "destroy" && r.exit == 0 {
		wr.present = false
	}
	// The rerun: the command's configuration applied with no fault, running and without the
	// health check. A destroyed group comes back (its NEVER data disks reused).
	if err := wr.writeConfig(wireConf{running: true}); err != nil {
		t.err += "; " + err.Error()
	}
	rerun, note := wr.w.applyAfterKill(c.o.timeout, label+"-rerun")
	if rerun.exit == 0 {
		wr.present = true
	}
	if rerun.exit == 0 && (t.op == "move" || t.op == "move-cold") {
		// A member that moves gets only its move in that apply, by design (the hosts schema
		// says so): a change left by an earlier trial (a plan trial's description) comes with
		// the next apply. When the faulted command did not move the members, the rerun did,
		// and a second apply is the one meant to converge.
		rerun = wr.w.apply(c.o.timeout, label+"-rerun2")
		note = strings.TrimPrefix(note+"; a second apply after the move's own", "; ")
	}
	t.rerunLog = rerun.log
	t.outcome = c.convergeIn(wr.w, wr.check, rerun, note, label)
	if t.recovered && t.recoverExit == 0 {
		wr.present = true
	}
	if providerBlamed.MatchString(r.out) {
		t.blamed = true
	}
	return t
}

// wireFault draws a fault of the kind: at a random byte of the first connection to get there,
// drawn log-uniformly from 64 B to 256 KiB: a plan's or a refresh's connections forward a few
// KiB, an apply's busiest (an upload) hundreds, and a uniform draw would miss the small ones.
func wireFault(rng *rand.Rand, kind string) (faultproxy.Fault, string) {
	f := faultproxy.Fault{Kind: faultproxy.Stall, Conn: faultproxy.AnyConn, AfterBytes: wireFaultByte(rng)}
	var detail string
	switch kind {
	case "stall":
		detail = "forever"
	case "stall-for":
		f.Duration = time.Duration(5+rng.IntN(26)) * time.Second
		detail = f.Duration.String()
	case "cut":
		f.Kind = faultproxy.Cut
		detail = "both ends closed"
	case "trickle":
		f.Kind = faultproxy.Trickle
		f.Rate = 16 << rng.IntN(8) // 16 B/s … 2 KiB/s
		detail = fmt.Sprintf("%d B/s until cleared", f.Rate)
	}
	return f, detail + fmt.Sprintf(", at byte %d", f.AfterBytes)
}

// wireFaultByte is a byte offset drawn log-uniformly from [64, 256 KiB).
func wireFaultByte(r *rand.Rand) int64 {
	return int64(math.Exp2(6 + 12*r.Float64()))
}
