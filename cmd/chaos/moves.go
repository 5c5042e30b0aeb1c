package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The moves scenario (issue 34) drains a group's members back and forth between two hosts, the
// system daemon ("default") and a session daemon ("h2", -move-h2-uri), and SIGKILLs terraform and
// its provider at a moment drawn uniformly from one undisturbed drain of every member. The
// daemons run on one machine with host UUIDs of their own, so the plan moves members live both
// ways: the system daemon migrates its members to h2 (live moves, killed mid-migration too),
// while h2's session daemon cannot open qemu:///system, libvirt refuses, and the provider moves
// them cold in the same apply (stop, copy and check every volume, define on the target, undefine
// the source, start, delete the source's volumes). After each kill it checks that every member's
// data disk still has a whole copy somewhere and that no member runs twice, reruns apply and
// plan, and checks: the members all on the host not drained and running, their data bytes
// unchanged, no member defined on two hosts, no volume of the group on a host where its member is
// not defined.

// moveGroup is the group the moves scenario drains; its members are moveGroup-1 … -N.
var moveGroup = prefix + "move"

// moveDataMiB is the size of each member's data disk: small, so that a move is quick.
const moveDataMiB = 8

// moveHosts are the group's hosts, in distribution_policy order (its record lives on the first).
var moveHosts = []string{"h2", "default"}

// moveKill is one apply killed (or not, when it finished first) during a drain.
type moveKill struct {
	n             int
	drain         string
	delay         time.Duration
	finishedFirst bool
	firstExit     int
	firstErr      string
	survivors     []string
	// atKill is what the hosts held right after the kill, before the rerun: members down, the
	// hosts each member was defined and running on, and the breaches of the moves' promises
	// (a member running twice, a data disk with no whole copy).
	downAtKill []string
	spreadNote string
	breaches   []string
	outcome
}

func (k moveKill) line() string {
	s := fmt.Sprintf("move kill %d: drain %s, delay %s: ", k.n, k.drain, round(k.delay))
	if k.finishedFirst {
		s += fmt.Sprintf("apply finished before the kill (exit %d%s); ", k.firstExit, bracket(k.firstErr))
	} else {
		s += fmt.Sprintf("killed with %d members down (%s), %s; ", len(k.downAtKill), listOrNothing(k.downAtKill), k.spreadNote)
	}
	if len(k.breaches) > 0 {
		s += "AT THE KILL: " + strings.Join(k.breaches, "; ") + "; "
	}
	if len(k.survivors) > 0 {
		s += "processes outlived the kill: " + strings.Join(k.survivors, ", ") + "; "
	}
	return s + k.outcome.line()
}

// moveResults is what the moves scenario measured.
type moveResults struct {
	err string
	// drains are the undisturbed drains of setup: the first moves half the members, the second
	// every member, and its duration is the window the kills are drawn from.
	drains   []outcome
	drainDur []time.Duration
	window   time.Duration
	kills    []moveKill
	// destroyExit and leftovers are the group's destroy at the end and what it left on the hosts.
	destroyExit int
	destroyErr  string
	leftovers   []string
}

func (m *moveResults) failures() []string {
	var out []string
	if m.err != "" {
		out = append(out, "moves: "+m.err)
	}
	for i, d := range m.drains {
		where := fmt.Sprintf("moves: undisturbed drain %d", i+1)
		if !d.converged() {
			out = append(out, where+": did not converge")
		}
		for _, v := range d.checks.violations() {
			out = append(out, where+": "+v)
		}
	}
	for _, k := range m.kills {
		where := fmt.Sprintf("move kill %d", k.n)
		if !k.converged() {
			out = append(out, where+": did not converge")
		}
		for _, b := range k.breaches {
			out = append(out, where+": at the kill: "+b)
		}
		for _, v := range k.checks.violations() {
			out = append(out, where+": "+v)
		}
		if len(k.survivors) > 0 {
			out = append(out, where+": processes outlived the kill: "+strings.Join(k.survivors, ", "))
		}
	}
	if m.destroyExit != 0 {
		out = append(out, fmt.Sprintf("moves: destroy exited %d: %s", m.destroyExit, m.destroyErr))
	}
	for _, l := range m.leftovers {
		out = append(out, "moves: left after the destroy: "+l)
	}
	return out
}

func (m *moveResults) markdown(o options) string {
	var b strings.Builder
	p := func(format string, args ...any) { fmt.Fprintf(&b, format, args...) }
	p("### Moves: drains between two hosts under kills\n\n")
	p("A group of %d running members (TCG, 64 MiB, a user-mode NIC, a preserved %d MiB `data` disk filled with random bytes) over the hosts %s, "+
		"drained back and forth (`drain = [\"h2\"]`, then `[\"default\"]`, …, `max_unavailable = 1`); each drain's apply is SIGKILLed with the provider "+
		"at a moment drawn uniformly from one undisturbed drain of every member (%s). Moves to h2 are live (the system daemon migrates); moves to the default host are planned live, refused by libvirt (a session daemon cannot open qemu:///system) and made cold.\n\n",
		o.moveMembers, moveDataMiB, strings.Join(moveHosts, ", "), round(m.window))
	if m.err != "" {
		p("**The scenario could not run to its end:** %s\n\n", cell(m.err, 1200))
	}
	for i, d := range m.drains {
		p("Undisturbed drain %d (%s): %s.\n\n", i+1, round(m.drainDur[i]), cell(strings.Replace(d.line(), "rerun exit", "apply exit", 1), 800))
	}
	n := len(m.kills)
	count := func(f func(k moveKill) bool) int {
		c := 0
		for _, k := range m.kills {
			if f(k) {
				c++
			}
		}
		return c
	}
	first := func(k moveKill) bool { return k.applyExit == 0 && k.planExit == 0 && !k.blamed }
	p("| move kill points | result |\n| --- | ---: |\n")
	p("| kill points | %d |\n", n)
	p("| apply finished before the kill | %d |\n", count(func(k moveKill) bool { return k.finishedFirst }))
	p("| kills with a member running on two hosts, or a data disk with no whole copy | %d |\n", count(func(k moveKill) bool { return len(k.breaches) > 0 }))
	p("| kills that left more than `max_unavailable` (1) members down | %d |\n", count(func(k moveKill) bool { return len(k.downAtKill) > 1 }))
	p("| reruns converged at the first try (apply exit 0, then plan exit 0) | %d / %d |\n", count(first), n)
	p("| … of the others, converged after one more apply | %d / %d |\n", count(func(k moveKill) bool { return !first(k) && k.converged() }), n-count(first))
	p("| kill points with bytes lost | %d |\n", count(func(k moveKill) bool { return len(k.checks.lost) > 0 }))
	p("| kill points with a member defined on two hosts | %d |\n", count(func(k moveKill) bool { return len(k.checks.doubles) > 0 }))
	p("| kill points with orphan volumes (on a host without their member) | %d |\n", count(func(k moveKill) bool { return len(k.checks.orphanVolumes) > 0 }))
	p("| kill points with orphan domains | %d |\n", count(func(k moveKill) bool { return len(k.checks.orphanDomains) > 0 }))
	p("| kill points with members left on the drained host | %d |\n", count(func(k moveKill) bool { return len(k.checks.misplaced) > 0 }))
	p("| kill points with members down after the rerun | %d |\n", count(func(k moveKill) bool { return len(k.checks.down) > 0 }))
	p("\n")
	var details []string
	for _, k := range m.kills {
		if !k.converged() || len(k.breaches) > 0 || len(k.checks.violations()) > 0 || len(k.checks.reported()) > 0 || len(k.survivors) > 0 {
			details = append(details, k.line())
		}
	}
	if len(details) > 0 {
		findings(p, "Move kill points with a finding", details)
		p("\n")
	}
	p("The group's destroy at the end exited %d%s; left on the hosts after it: %s.\n\n", m.destroyExit, bracket(cell(m.destroyErr, 300)), cell(listOrNothing(m.leftovers), 400))
	return b.String()
}

// mover is the moves scenario's state: the two hosts by name, the directory, the members' data
// checksums and the host the configuration drains now.
type mover struct {
	c     *chaos
	hosts map[string]*host
	w     *workdir
	sums  map[string]string // by member
	drain string            // "" when nothing is drained
	rng   *rand.Rand
}

func (mv *mover) members() []string {
	out := make([]string, mv.c.o.moveMembers)
	for i := range out {
		out[i] = fmt.Sprintf("%s-%d", moveGroup, i+1)
	}
	return out
}

// target is the host the members belong on: the one the configuration does not drain.
func (mv *mover) target() string {
	for _, h := range moveHosts {
		if h != mv.drain {
			return h
		}
	}
	return ""
}

func (mv *mover) writeConfig(running bool) error {
	shutdown := ""
	if !mv.c.o.noShutdownTimeout {
		shutdown = fmt.Sprintf("  shutdown_timeout = %q\n", shutdownTimeout)
	}
	drain := ""
	if mv.drain != "" {
		drain = fmt.Sprintf("    drain = [%q]\n", mv.drain)
	}
	doc := fmt.Sprintf(`# Written by cmd/chaos: a group drained back and forth between two hosts under kills.
terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

provider "virt" {
  host {
    name = "h2"
    uri  = %q
  }
}

resource "virt_stateful_group" "m" {
  name        = %q
  pool        = %q
  target_size = %d
  running     = %t
%s
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64

    disk {
      device_name = "data"
      size_mib    = %d
    }

    network_interface {
      type = "user"
    }
  }

  update_policy {
    max_unavailable = 1
  }

  distribution_policy {
    hosts = [%q, %q]
%s  }
}

resource "virt_stateful_policy" "m" {
  group = virt_stateful_group.m.name

  disk {
    device_name = "data"
    delete_rule = "ON_PERMANENT_INSTANCE_DELETION"
  }
}
`, mv.c.o.moveH2URI, moveGroup, mv.c.pool, mv.c.o.moveMembers, running, shutdown, moveDataMiB, moveHosts[0], moveHosts[1], drain)
	return os.WriteFile(filepath.Join(mv.w.dir, "main.tf"), []byte(doc), 0o644)
}

// movesScenario runs the moves scenario; its results go to res.moves.
func (c *chaos) movesScenario(res *results, rng *rand.Rand) {
	m := &moveResults{}
	res.moves = m
	h2, err := connectHost(c.o.moveH2URI, c.pool)
	if err != nil {
		m.err = fmt.Sprintf("connect to h2 (%s): %v", c.o.moveH2URI, err)
		return
	}
	mv := &mover{c: c, hosts: map[string]*host{"default": c.h, "h2": h2}, sums: map[string]string{}, rng: rng}
	mv.sweep()
	defer mv.sweep()
	if mv.w, err = c.newWorkdirWith("move", func(w *workdir) error { mv.w = w; return mv.writeConfig(false) }); err != nil {
		m.err = err.Error()
		return
	}
	mv.w.timeout = c.o.moveTimeout
	if err := mv.setup(m); err != nil {
		m.err = err.Error()
		mv.teardown(m)
		return
	}
	for i := 1; i <= c.o.moveKills; i++ {
		k := mv.killPoint(i, m.window)
		m.kills = append(m.kills, k)
		logf("%s", k.line())
	}
	mv.teardown(m)
}

// setup creates the group stopped, writes random bytes into the data disks, starts it, and runs
// two undisturbed drains: h2's half, then every member back to h2, whose duration is the window.
func (mv *mover) setup(m *moveResults) error {
	c := mv.c
	apply := func(running bool, label string) error {
		if err := mv.writeConfig(running); err != nil {
			return err
		}
		if r := mv.w.apply(c.o.timeout, label); r.exit != 0 {
			return fmt.Errorf("terraform apply (%s) in %s exited %d: %s (log %s)", label, mv.w.dir, r.exit, errorText(r.out, 6), r.log)
		}
		return nil
	}
	start := time.Now()
	if err := apply(false, "move-create"); err != nil {
		return err
	}
	if err := mv.writeData(); err != nil {
		return err
	}
	if err := apply(true, "move-start"); err != nil {
		return err
	}
	logf("moves: created %d members over %s, random bytes in their data disks, started, in %s", c.o.moveMembers, strings.Join(moveHosts, " and "), round(time.Since(start)))
	for i, drain := range []string{"h2", "default"} {
		mv.drain = drain
		if err := mv.writeConfig(true); err != nil {
			return err
		}
		label := fmt.Sprintf("move-drain%d", i+1)
		r := mv.w.apply(c.o.timeout, label)
		o := c.convergeIn(mv.w, mv.check, r, "", label)
		m.drains, m.drainDur = append(m.drains, o), append(m.drainDur, r.dur)
		logf("moves: undisturbed drain of %s: %s, %s", drain, round(r.dur), o.line())
		if r.exit != 0 {
			return fmt.Errorf("the undisturbed drain of %s failed (exit %d): %s", drain, r.exit, errorText(r.out, 6))
		}
		m.window = r.dur
	}
	return nil
}

// writeData fills each member's data volume with random bytes (guest-visible, through qemu-img,
// while the members are stopped) and remembers their checksum.
func (mv *mover) writeData() error {
	var seed [32]byte
	for i := range seed {
		seed[i] = byte(mv.rng.Uint32())
	}
	src := rand.NewChaCha8(seed)
	for _, member := range mv.members() {
		host, path, err := mv.dataVolume(member)
		if err != nil {
			return err
		}
		raw := filepath.Join(mv.c.scratch, member+".raw")
		data := make([]byte, moveDataMiB<<20)
		_, _ = src.Read(data)
		if err := os.WriteFile(raw, data, 0o600); err != nil {
			return err
		}
		if err := copyRawInto(raw, path); err != nil {
			return fmt.Errorf("host %s: %w", host, err)
		}
		os.Remove(raw)
		sum, zero, err := checksum(path, mv.c.scratch)
		if err != nil {
			return err
		}
		if zero {
			return fmt.Errorf("%s reads back all zero after random bytes were written into it", path)
		}
		mv.sums[member] = sum
	}
	logf("moves: wrote %d MiB of random bytes into %d data volumes", moveDataMiB, len(mv.sums))
	return nil
}

// dataVolume is the host and path of the one data volume of a member.
func (mv *mover) dataVolume(member string) (string, string, error) {
	var where []string
	var path, host string
	for _, h := range moveHosts {
		p, err := mv.hosts[h].volumePath(mv.c.pool, dataVolume(member))
		if err == nil {
			where, path, host = append(where, h), p, h
		}
	}
	if len(where) != 1 {
		return "", "", fmt.Errorf("data volume of %s is on hosts %v, want exactly one", member, where)
	}
	return host, path, nil
}

// killPoint flips the drain and kills its apply after a delay drawn from [0, window].
func (mv *mover) killPoint(n int, window time.Duration) moveKill {
	c := mv.c
	mv.drain = mv.target() // the host the members are on now is the one drained next
	k := moveKill{n: n, drain: mv.drain, delay: time.Duration(mv.rng.Int64N(int64(window) + 1))}
	label := fmt.Sprintf("mvkill%03d", n)
	if err := mv.writeConfig(true); err != nil {
		k.applyExit, k.applyErr = -1, err.Error()
		return k
	}
	run, err := mv.w.start(label, applyArgs...)
	if err != nil {
		k.applyExit, k.applyErr = -1, err.Error()
		return k
	}
	select {
	case <-run.done:
		r := run.result(false, nil)
		k.finishedFirst, k.firstExit, k.firstErr = true, r.exit, errorText(r.out, 4)
	case <-time.After(k.delay):
		k.survivors = run.kill().survivors
		k.downAtKill, k.spreadNote, k.breaches = mv.atKill()
	}
	rerun, note := mv.w.applyAfterKill(c.o.timeout, label+"-rerun")
	k.outcome = c.convergeIn(mv.w, mv.check, rerun, note, label)
	return k
}

// hostsView is what the two hosts hold of the group.
type hostsView struct {
	doms map[string]map[string]backend.Domain // host -> name -> domain
	vols map[string]map[string]string         // host -> volume name -> path
}

func (mv *mover) view() (hostsView, []string) {
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	v := hostsView{doms: map[string]map[string]backend.Domain{}, vols: map[string]map[string]string{}}
	var errs []string
	for _, h := range moveHosts {
		v.doms[h], v.vols[h] = map[string]backend.Domain{}, map[string]string{}
		b := mv.hosts[h].conn()
		doms, err := b.ListDomains(ctx, moveGroup+"-")
		if err != nil {
			errs = append(errs, fmt.Sprintf("list domains of %s: %v", h, err))
		}
		for _, d := range doms {
			v.doms[h][d.Name] = d
		}
		vols, err := b.ListVolumes(ctx, mv.c.pool, moveGroup+"-")
		if err != nil {
			errs = append(errs, fmt.Sprintf("list volumes of %s: %v", h, err))
		}
		for _, vol := range vols {
			v.vols[h][vol.Name] = vol.Path
		}
	}
	return v, errs
}

// definedOn are the hosts of hosts where a member is defined, and those where it runs.
func (v hostsView) definedOn(hosts []string, member string) (defined, running []string) {
	for _, h := range hosts {
		if d, ok := v.doms[h][member]; ok {
			defined = append(defined, h)
			if d.Status == engine.StatusRunning {
				running = append(running, h)
			}
		}
	}
	return defined, running
}

// atKill looks at the hosts right after a kill: the members down, where each is, and the
// promises broken even mid-move: a member running on two hosts, a data disk of which no copy on
// any host holds its bytes whole.
func (mv *mover) atKill() (down []string, note string, breaches []string) {
	v, errs := mv.view()
	breaches = append(breaches, errs...)
	var where []string
	for _, m := range mv.members() {
		defined, running := v.definedOn(moveHosts, m)
		where = append(where, fmt.Sprintf("%s on %s", strings.TrimPrefix(m, moveGroup+"-"), strings.Join(defined, "+")))
		if len(running) == 0 {
			down = append(down, m)
		}
		if len(running) > 1 {
			// The target of a live migration is paused while it starts, which the backend reads
			// as running: a copy counts where libvirt says "running" itself.
			var vcpus []string
			for _, h := range running {
				if mv.hosts[h].vcpusRun(m) {
					vcpus = append(vcpus, h)
				}
			}
			if len(vcpus) > 1 {
				breaches = append(breaches, m+" runs on "+strings.Join(vcpus, " and "))
			}
		}
		whole := false
		var seen []string
		for _, h := range moveHosts {
			p, ok := v.vols[h][dataVolume(m)]
			if !ok {
				continue
			}
			sum, _, err := checksum(p, mv.c.scratch)
			if err != nil {
				seen = append(seen, h+": "+err.Error())
				continue
			}
			if sum == mv.sums[m] {
				whole = true
				break
			}
			seen = append(seen, fmt.Sprintf("%s: checksum %.12s…", h, sum))
		}
		if !whole {
			breaches = append(breaches, fmt.Sprintf("no whole copy of %s (%s)", dataVolume(m), listOrNothing(seen)))
		}
	}
	return down, "members " + strings.Join(where, ", "), breaches
}

// check inspects the group on both hosts after an apply: every member defined on one host, the
// one not drained, running, its data bytes unchanged; no volume of the group on a host where its
// member is not defined; no other domain of the group's prefix.
func (mv *mover) check(string) checkResult {
	var r checkResult
	v, errs := mv.view()
	r.errs = append(r.errs, errs...)
	members := mv.members()
	for _, h := range moveHosts {
		for name, d := range v.doms[h] {
			if !slices.Contains(members, name) {
				r.orphanDomains = append(r.orphanDomains, fmt.Sprintf("%s on %s (%s)", name, h, d.Status))
			}
		}
		for name := range v.vols[h] {
			owner := ""
			for _, m := range members {
				if strings.HasPrefix(name, m+"-") {
					owner = m
				}
			}
			if owner == "" {
				r.orphanVolumes = append(r.orphanVolumes, fmt.Sprintf("%s on %s (no member's)", name, h))
			} else if _, ok := v.doms[h][owner]; !ok {
				r.orphanVolumes = append(r.orphanVolumes, fmt.Sprintf("%s on %s, where %s is not defined", name, h, owner))
			}
		}
	}
	for _, m := range members {
		defined, running := v.definedOn(moveHosts, m)
		switch {
		case len(defined) == 0:
			r.down = append(r.down, m+" is defined on no host")
		case len(defined) > 1:
			r.doubles = append(r.doubles, fmt.Sprintf("%s: defined on %s", m, strings.Join(defined, " and ")))
		case mv.drain != "" && defined[0] == mv.drain:
			r.misplaced = append(r.misplaced, fmt.Sprintf("%s is on %s, which the configuration drains", m, defined[0]))
		}
		if len(defined) > 0 && len(running) == 0 {
			r.down = append(r.down, m+" is not running")
		}
		if len(defined) != 1 {
			continue
		}
		p, ok := v.vols[defined[0]][dataVolume(m)]
		if !ok {
			r.lost = append(r.lost, fmt.Sprintf("%s is not on %s, where %s is", dataVolume(m), defined[0], m))
			continue
		}
		sum, _, err := checksum(p, mv.c.scratch)
		switch {
		case err != nil:
			r.errs = append(r.errs, err.Error())
		case sum != mv.sums[m]:
			r.lost = append(r.lost, fmt.Sprintf("%s on %s has checksum %.12s…, had %.12s…", dataVolume(m), defined[0], sum, mv.sums[m]))
			// Counted once: later checks compare with the bytes it has now.
			mv.sums[m] = sum
		}
	}
	slices.Sort(r.orphanVolumes)
	slices.Sort(r.orphanDomains)
	return r
}

// teardown destroys the group through terraform and reports what is left of it on either host.
func (mv *mover) teardown(m *moveResults) {
	d, _ := mv.w.rerunAfterKill(mv.c.o.timeout, "move-destroy", destroyArgs...)
	m.destroyExit, m.destroyErr = d.exit, errorText(d.out, 4)
	v, errs := mv.view()
	m.leftovers = append(m.leftovers, errs...)
	for _, h := range moveHosts {
		for name := range v.doms[h] {
			m.leftovers = append(m.leftovers, fmt.Sprintf("domain %s on %s", name, h))
		}
		for name := range v.vols[h] {
			m.leftovers = append(m.leftovers, fmt.Sprintf("volume %s on %s", name, h))
		}
		if groups, err := mv.hosts[h].conn().GroupRecordNames(moveGroup); err == nil && slices.Contains(groups, moveGroup) {
			m.leftovers = append(m.leftovers, "group record on "+h)
		}
	}
	slices.Sort(m.leftovers)
	logf("moves: destroy exited %d%s; left: %s", m.destroyExit, bracket(m.destroyErr), listOrNothing(m.leftovers))
}

// vcpusRun reports whether libvirt says the domain runs on the host (virsh domstate), not paused
// for any reason; a domain gone meanwhile does not run.
func (h *host) vcpusRun(name string) bool {
	out, err := exec.Command("virsh", "-c", h.uri, "domstate", name).Output()
	return err == nil && strings.TrimSpace(string(out)) == "running"
}

// sweep removes everything of the moves group from both hosts.
func (mv *mover) sweep() {
	for _, h := range moveHosts {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		removed, err := mv.hosts[h].sweep(ctx, moveGroup)
		cancel()
		if len(removed) > 0 {
			logf("moves: swept from %s: %s", h, strings.Join(removed, ", "))
		}
		if err != nil {
			logf("moves: sweep of %s: %v", h, err)
		}
	}
}
