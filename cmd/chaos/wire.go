package main

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/faultproxy"
)

// The wire-faults scenario (issue 43) puts a proxy (internal/faultproxy) between the provider and
// the system daemon's unix socket: the provider's uri names the proxy's socket. Each trial arms
// one fault at a random byte of whichever connection gets there first: a stall for ever, a stall
// for a few seconds, a cut, or a trickle; then runs one terraform command of a random kind of
// operation against a small group. The command must return within the group's timeouts plus
// 60 s (the harness kills it at that bound and reports it). Then the fault is cleared and apply
// and plan are rerun through the proxy: they must converge, every data disk keep its bytes, no
// orphan be left, no member down.
//
// The harness's own inspection connection goes to the daemon directly, never through the proxy.

// wireGroup is the group of the wire-faults scenario; its members are wireGroup-1 … -3.
const wireGroup = prefix + "wire"

// wireDataMiB is each member's data disk: small, random bytes.
const wireDataMiB = 8

// wireMaxSize is the group's size after a scale-out; it is wireMaxSize-1 after a scale-in. The
// data disk of member wireMaxSize is kept by delete_rule NEVER while it is scaled in, and reused,
// bytes and all, when it comes back.
const wireMaxSize = 3

// wireOpTimeout is the group's timeouts { create update delete }: the bound an apply's own calls
// run under. A command may take this plus wireGrace before the harness calls it hung.
const wireOpTimeout = 2 * time.Minute

// wireGrace is what the issue allows past the resource timeout.
const wireGrace = 60 * time.Second

// wireHostTimeout is the provider's host_timeout: how long a refresh or plan waits on the host.
const wireHostTimeout = "5s"

// wireOps are the kinds of operation a trial runs under a fault.
var wireOps = []string{"create", "update", "replace", "scale-out", "scale-in", "plan", "destroy"}

// wireFaults are the kinds of fault a trial injects.
var wireFaults = []string{"stall", "stall-for", "cut", "trickle"}

// wireTrial is one fault and the command it hit.
type wireTrial struct {
	n        int
	op       string
	fault    string
	detail   string // the fault's parameters
	fired    bool   // the fault took effect before the command ended
	firedAt  string // connection and byte
	exit     int
	dur      time.Duration
	hung     bool // the harness killed the command at its bound
	err      string
	log      string
	rerunLog string
	// preLost are the data disks a create's undisturbed destroy before the fault lost.
	preLost []string
	outcome
}

// withinBound is the first check: the command returned by itself within its bound.
func (t wireTrial) withinBound() bool { return !t.hung }

func (t wireTrial) line() string {
	s := fmt.Sprintf("wire trial %d: %s under %s (%s), ", t.n, t.op, t.fault, t.detail)
	if t.fired {
		s += "fired at " + t.firedAt + "; "
	} else {
		s += "did not fire before the command ended; "
	}
	if t.hung {
		s += fmt.Sprintf("DID NOT RETURN within %s, killed (log %s); ", wireOpTimeout+wireGrace, t.log)
	} else {
		s += fmt.Sprintf("exit %d in %s%s; ", t.exit, round(t.dur), bracket(t.err))
	}
	if len(t.preLost) > 0 {
		s += "BYTES LOST BY THE UNDISTURBED DESTROY BEFORE THE CREATE: " + strings.Join(t.preLost, "; ") + "; "
	}
	return s + t.outcome.line()
}

// wireResults is what the scenario measured.
type wireResults struct {
	err       string
	stopped   string // the trials stopped early, as -wire-budget asked: not a failure
	trials    []wireTrial
	destroyEx int
	destroyEr string
	leftovers []string
}

func (w *wireResults) failures() []string {
	var out []string
	if w.err != "" {
		out = append(out, "wire faults: "+w.err)
	}
	for _, t := range w.trials {
		where := fmt.Sprintf("wire trial %d (%s under %s)", t.n, t.op, t.fault)
		if t.hung {
			out = append(out, fmt.Sprintf("%s: terraform did not return within %s (log %s)", where, wireOpTimeout+wireGrace, t.log))
		}
		if !t.converged() {
			out = append(out, where+": did not converge")
		}
		for _, l := range t.preLost {
			out = append(out, where+": bytes lost by the undisturbed destroy before it: "+l)
		}
		for _, v := range t.checks.violations() {
			out = append(out, where+": "+v)
		}
		if len(t.checks.down) > 0 {
			out = append(out, where+": members down after the rerun: "+strings.Join(t.checks.down, "; "))
		}
	}
	if w.destroyEx != 0 {
		out = append(out, fmt.Sprintf("wire faults: destroy exited %d: %s", w.destroyEx, w.destroyEr))
	}
	return out
}

func (w *wireResults) markdown() string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("### Wire faults: a proxy between the provider and libvirtd\n\n")
	p("A group of %d-%d running members (TCG, 64 MiB, a %d MiB `data` disk of random bytes, `delete_rule = \"NEVER\"`, "+
		"`timeouts { create update delete = %q }`, provider `host_timeout = %q`) reached through a fault proxy on the system daemon's socket. "+
		"Each trial arms one fault at a random byte of whichever connection gets there first and runs one command (create after a destroy, "+
		"description change, boot image flip (REPLACE), scale-out, scale-in, plan, destroy); the command must return within %s; "+
		"then the fault is cleared, apply and `plan -detailed-exitcode` are rerun and the host is inspected.\n\n",
		wireMaxSize-1, wireMaxSize, wireDataMiB, wireOpTimeout.String(), wireHostTimeout, wireOpTimeout+wireGrace)
	if w.err != "" {
		p("**The scenario could not run to its end:** %s\n\n", cell(w.err, 1200))
	}
	if w.stopped != "" {
		p("%s.\n\n", w.stopped)
	}
	p("| fault | trials | fired | returned within bound | reruns converged | bytes lost | orphans | members left down |\n")
	p("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	row := func(name string, f func(t wireTrial) bool) {
		var n, fired, bound, conv, lost, orph, down int
		for _, t := range w.trials {
			if !f(t) {
				continue
			}
			n++
			if t.fired {
				fired++
			}
			if t.withinBound() {
				bound++
			}
			if t.converged() {
				conv++
			}
			if len(t.checks.lost)+len(t.preLost) > 0 {
				lost++
			}
			if len(t.checks.orphanDomains)+len(t.checks.orphanVolumes) > 0 {
				orph++
			}
			if len(t.checks.down) > 0 {
				down++
			}
		}
		p("| %s | %d | %d | %d / %d | %d / %d | %d | %d | %d |\n", name, n, fired, bound, n, conv, n, lost, orph, down)
	}
	for _, k := range wireFaults {
		row(k, func(t wireTrial) bool { return t.fault == k })
	}
	row("**all**", func(wireTrial) bool { return true })
	p("\n| operation | trials | fired | returned within bound | reruns converged |\n| --- | ---: | ---: | ---: | ---: |\n")
	for _, op := range wireOps {
		var n, fired, bound, conv int
		for _, t := range w.trials {
			if t.op != op {
				continue
			}
			n++
			if t.fired {
				fired++
			}
			if t.withinBound() {
				bound++
			}
			if t.converged() {
				conv++
			}
		}
		p("| %s | %d | %d | %d | %d |\n", op, n, fired, bound, conv)
	}
	p("\n")
	var details []string
	for _, t := range w.trials {
		if t.hung || len(t.preLost) > 0 || !t.converged() || len(t.checks.violations()) > 0 || len(t.checks.reported()) > 0 {
			details = append(details, t.line())
		}
	}
	if len(details) > 0 {
		findings(p, "Wire trials with a finding", details)
		p("\n")
	}
	p("The group's destroy at the end exited %d%s; left on the host after it besides its NEVER data volumes: %s.\n\n", w.destroyEx, bracket(cell(w.destroyEr, 300)), cell(listOrNothing(w.leftovers), 400))
	return b.String()
}

// wirer is the scenario's state.
type wirer struct {
	c       *chaos
	proxy   *faultproxy.Proxy
	w       *workdir
	rng     *rand.Rand
	sums    map[string]string // data volume -> checksum
	size    int
	img     int
	desc    int
	present bool // the group exists (false after a destroy, until the next apply)
}

func wireMember(i int) string { return fmt.Sprintf("%s-%d", wireGroup, i) }

func (wr *wirer) writeConfig(running bool) error {
	shutdown := ""
	if !wr.c.o.noShutdownTimeout {
		shutdown = fmt.Sprintf("  shutdown_timeout = %q\n", shutdownTimeout)
	}
	t := wireOpTimeout.String()
	doc := fmt.Sprintf(`# Written by cmd/chaos: a group reached through a fault proxy.
terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

provider "virt" {
  uri          = %q
  host_timeout = %q
}

resource "virt_stateful_group" "w" {
  name        = %q
  pool        = %q
  target_size = %d
  running     = %t
%s
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    description = %q

    boot_disk {
      source_image = %q
      size_mib     = %d
    }

    disk {
      device_name = "data"
      size_mib    = %d
    }

    metadata = { image = %q }
    cloud_init {
      user_data = "#cloud-config\n"
    }
  }

  update_policy {
    max_unavailable = 1
  }

  timeouts {
    create = %q
    update = %q
    delete = %q
  }
}

resource "virt_stateful_policy" "w" {
  group = virt_stateful_group.w.name

  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}
`, "qemu+unix:///system?socket="+wr.proxy.Addr(), wireHostTimeout, wireGroup, wr.c.pool, wr.size, running, shutdown,
		fmt.Sprintf("chaos wire %d", wr.desc), wr.c.images[wr.img], imageMiB, wireDataMiB, filepath.Base(wr.c.images[wr.img]), t, t, t)
	return os.WriteFile(filepath.Join(wr.w.dir, "main.tf"), []byte(doc), 0o644)
}

// wireScenario runs the scenario; its results go to res.wire.
func (c *chaos) wireScenario(res *results, rng *rand.Rand) {
	wres := &wireResults{}
	res.wire = wres
	px, err := faultproxy.New("unix:"+filepath.Join(c.scratch, "wire.sock"), "unix:"+envOr("VIRT_CHAOS_SOCKET", "/var/run/libvirt/libvirt-sock"))
	if err != nil {
		wres.err = err.Error()
		return
	}
	defer px.Close()
	wr := &wirer{c: c, proxy: px, rng: rng, sums: map[string]string{}, size: wireMaxSize}
	wr.sweep()
	if wr.w, err = c.newWorkdirWith("wire", func(w *workdir) error { wr.w = w; return wr.writeConfig(false) }); err != nil {
		wres.err = err.Error()
		return
	}
	if err := wr.setup(); err != nil {
		wres.err = err.Error()
		wr.teardown(wres)
		return
	}
	begun := time.Now()
	for i := 1; i <= c.o.wireFaults; i++ {
		if c.o.wireBudget > 0 && time.Since(begun) > c.o.wireBudget {
			wres.stopped = fmt.Sprintf("-wire-budget %s spent: %d of %d trials ran", c.o.wireBudget, i-1, c.o.wireFaults)
			logf("wire: %s", wres.stopped)
			break
		}
		t := wr.trial(i)
		wres.trials = append(wres.trials, t)
		logf("%s", t.line())
	}
	wr.teardown(wres)
}

// setup creates wireMaxSize members stopped, writes random bytes into their data disks, then
// starts the group at wireMaxSize-1 members (the last member's data disk kept by NEVER).
func (wr *wirer) setup() error {
	c := wr.c
	apply := func(running bool, label string) error {
		if err := wr.writeConfig(running); err != nil {
			return err
		}
		if r := wr.w.apply(c.o.timeout, label); r.exit != 0 {
			return fmt.Errorf("terraform apply (%s) in %s exited %d: %s (log %s)", label, wr.w.dir, r.exit, errorText(r.out, 6), r.log)
		}
		return nil
	}
	start := time.Now()
	if err := apply(false, "wire-create"); err != nil {
		return err
	}
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(wr.rng.Uint32())
	}
	src := rand.NewChaCha8(seed)
	for i := 1; i <= wireMaxSize; i++ {
		name := dataVolume(wireMember(i))
		path, err := c.h.volumePath(c.pool, name)
		if err != nil {
			return err
		}
		raw := filepath.Join(c.scratch, name+".raw")
		data := make([]byte, wireDataMiB<<20)
		_, _ = src.Read(data)
		if err := os.WriteFile(raw, data, 0o600); err != nil {
			return err
		}
		if err := copyRawInto(raw, path); err != nil {
			return err
		}
		os.Remove(raw)
		sum, zero, err := checksum(path, c.scratch)
		if err != nil {
			return err
		}
		if zero {
			return fmt.Errorf("%s reads back all zero after random bytes were written into it", path)
		}
		wr.sums[name] = sum
	}
	wr.size = wireMaxSize - 1
	if err := apply(true, "wire-start"); err != nil {
		return err
	}
	wr.present = true
	logf("wire: %d members created, random bytes in %d data disks, %d started, in %s", wireMaxSize, wireMaxSize, wr.size, round(time.Since(start)))
	return nil
}

// trial draws an operation and a fault, runs the operation under it, clears the fault, reruns
// apply and plan and checks the host.
func (wr *wirer) trial(n int) wireTrial {
	c := wr.c
	t := wireTrial{n: n, op: wireOps[wr.rng.IntN(len(wireOps))], fault: wireFaults[wr.rng.IntN(len(wireFaults))]}
	label := fmt.Sprintf("wire%03d-%s-%s", n, t.op, t.fault)
	if !wr.present && t.op != "create" {
		// After a destroy whose rerun did not bring the group back, only a create makes sense.
		t.op = "create"
	}
	// Prepare the configuration; a create first destroys the group, with no fault.
	args := applyArgs
	switch t.op {
	case "create":
		if wr.present {
			if r := wr.w.run(c.o.timeout, label+"-predestroy", destroyArgs...); r.exit != 0 {
				t.exit, t.err = -1, "the destroy before the create failed: "+errorText(r.out, 4)
				return t
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
	case "replace":
		wr.img = 1 - wr.img
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
		args = []string{"plan", "-detailed-exitcode", "-input=false", "-no-color"}
		wr.desc++ // a plan with a change to make
	case "destroy":
		args = destroyArgs
	}
	if err := wr.writeConfig(true); err != nil {
		t.exit, t.err = -1, err.Error()
		return t
	}
	// The fault: at a random byte of the first connection to get there, drawn log-uniformly
	// from 64 B to 256 KiB: a plan's or a refresh's connections forward a few KiB, an apply's
	// busiest (an upload) hundreds, and a uniform draw would miss the small ones.
	f := faultproxy.Fault{Kind: faultproxy.Stall, Conn: faultproxy.AnyConn, AfterBytes: wireFaultByte(wr.rng)}
	switch t.fault {
	case "stall":
		t.detail = "forever"
	case "stall-for":
		f.Duration = time.Duration(5+wr.rng.IntN(26)) * time.Second
		t.detail = f.Duration.String()
	case "cut":
		f.Kind = faultproxy.Cut
		t.detail = "both ends closed"
	case "trickle":
		f.Kind = faultproxy.Trickle
		f.Rate = 16 << wr.rng.IntN(8) // 16 B/s … 2 KiB/s
		t.detail = fmt.Sprintf("%d B/s until cleared", f.Rate)
	}
	t.detail += fmt.Sprintf(", at byte %d", f.AfterBytes)
	// Drain events of earlier trials.
	for len(wr.proxy.Fired()) > 0 {
		<-wr.proxy.Fired()
	}
	wr.proxy.SetFault(f)
	run, err := wr.w.start(label, args...)
	if err != nil {
		wr.proxy.Clear()
		t.exit, t.err = -1, err.Error()
		return t
	}
	r := run.finish(wireOpTimeout + wireGrace)
	wr.proxy.Clear()
	select {
	case ev := <-wr.proxy.Fired():
		t.fired, t.firedAt = true, fmt.Sprintf("connection %d byte %d", ev.Conn, ev.At)
	default:
	}
	t.exit, t.dur, t.hung, t.log = r.exit, r.dur, r.timedOut, r.log
	t.err = errorText(r.out, 4)
	if t.op == "destroy" && r.exit == 0 {
		wr.present = false
	}
	// The rerun: the command's configuration applied with no fault. A destroyed group comes
	// back (its NEVER data disks reused).
	rerun, note := wr.w.applyAfterKill(c.o.timeout, label+"-rerun")
	if rerun.exit == 0 {
		wr.present = true
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

// wireFaultByte is a byte offset drawn log-uniformly from [64, 256 KiB).
func wireFaultByte(r *rand.Rand) int64 {
	return int64(math.Exp2(6 + 12*r.Float64()))
}

// check inspects the group on the host through the harness's direct connection: members
// 1..size defined and running, no other domain; no volume but members' own and the data disks
// kept by NEVER; every data disk's bytes as written.
func (wr *wirer) check(string) checkResult {
	c := wr.c
	var r checkResult
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	b := c.h.conn()
	doms, err := b.ListDomains(ctx, wireGroup+"-")
	if err != nil {
		r.errs = append(r.errs, "list domains: "+err.Error())
	}
	members := map[string]bool{}
	for i := 1; i <= wr.size; i++ {
		members[wireMember(i)] = true
	}
	seen := map[string]engine.Status{}
	for _, d := range doms {
		seen[d.Name] = d.Status
		if !members[d.Name] {
			r.orphanDomains = append(r.orphanDomains, fmt.Sprintf("%s (%s)", d.Name, d.Status))
		}
	}
	if err == nil {
		for i := 1; i <= wr.size; i++ {
			st, ok := seen[wireMember(i)]
			switch {
			case !ok:
				r.down = append(r.down, wireMember(i)+" has no domain")
			case st != engine.StatusRunning:
				r.down = append(r.down, fmt.Sprintf("%s is %s", wireMember(i), st))
			}
		}
	}
	vols, err := b.ListVolumes(ctx, c.pool, wireGroup+"-")
	if err != nil {
		r.errs = append(r.errs, "list volumes: "+err.Error())
		return r
	}
	paths := map[string]string{}
	for _, v := range vols {
		paths[v.Name] = v.Path
		owned := false
		for i := 1; i <= wireMaxSize; i++ {
			m := wireMember(i)
			switch {
			case v.Name == dataVolume(m):
				owned = true // kept by NEVER when its member is scaled in
			case members[m] && (v.Name == bootVolume(m) || v.Name == engine.SeedVolumeName(m)):
				owned = true
			}
		}
		if !owned {
			r.orphanVolumes = append(r.orphanVolumes, v.Name)
		}
	}
	for i := 1; i <= wireMaxSize; i++ {
		name := dataVolume(wireMember(i))
		path, ok := paths[name]
		if !ok {
			if wr.sums[name] != "" {
				r.lost = append(r.lost, name+" is gone")
				wr.sums[name] = ""
			}
			continue
		}
		sum, _, err := checksum(path, c.scratch)
		switch {
		case err != nil:
			r.errs = append(r.errs, err.Error())
		case wr.sums[name] == "":
			wr.sums[name] = sum
		case sum != wr.sums[name]:
			r.lost = append(r.lost, fmt.Sprintf("%s has checksum %.12s…, had %.12s…", name, sum, wr.sums[name]))
			wr.sums[name] = sum
		}
	}
	slices.Sort(r.orphanVolumes)
	slices.Sort(r.orphanDomains)
	return r
}

// teardown destroys the group through terraform (no fault) and reports what it left besides
// the NEVER data disks, then sweeps everything of the group.
func (wr *wirer) teardown(wres *wireResults) {
	wr.proxy.Clear()
	if wr.w != nil {
		d, _ := wr.w.rerunAfterKill(wr.c.o.timeout, "wire-destroy", destroyArgs...)
		wres.destroyEx, wres.destroyEr = d.exit, errorText(d.out, 4)
		ctx, cancel := withTimeout(time.Minute)
		b := wr.c.h.conn()
		doms, err := b.ListDomains(ctx, wireGroup+"-")
		if err != nil {
			wres.leftovers = append(wres.leftovers, err.Error())
		}
		for _, d := range doms {
			wres.leftovers = append(wres.leftovers, "domain "+d.Name)
		}
		vols, err := b.ListVolumes(ctx, wr.c.pool, wireGroup+"-")
		if err != nil {
			wres.leftovers = append(wres.leftovers, err.Error())
		}
		for _, v := range vols {
			if !strings.HasSuffix(v.Name, "-data.qcow2") {
				wres.leftovers = append(wres.leftovers, "volume "+v.Name)
			}
		}
		cancel()
		logf("wire: destroy exited %d%s; left: %s", wres.destroyEx, bracket(wres.destroyEr), listOrNothing(wres.leftovers))
	}
	wr.sweep()
}

func (wr *wirer) sweep() {
	ctx, cancel := withTimeout(2 * time.Minute)
	defer cancel()
	removed, err := wr.c.h.sweep(ctx, wireGroup)
	if len(removed) > 0 {
		logf("wire: swept %s", strings.Join(removed, ", "))
	}
	if err != nil {
		logf("wire: sweep: %v", err)
	}
}
