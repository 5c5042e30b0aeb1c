// This file holds the CLI bench's cycles at one size: terraform's fixed cost, the timed commands, the counted calls.

package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
)

var (
	applyArgs   = []string{"apply", "-auto-approve", "-input=false", "-no-color"}
	planArgs    = []string{"plan", "-detailed-exitcode", "-input=false", "-no-color"}
	planNoRefr  = []string{"plan", "-refresh=false", "-detailed-exitcode", "-input=false", "-no-color"}
	destroyArgs = []string{"destroy", "-auto-approve", "-input=false", "-no-color"}
)

// fixedCost is terraform's own cost of a plan: with an empty configuration, and with one that
// configures the provider (so the plugin starts and connects) but has no resources.
type fixedCost struct {
	empty, providerOnly time.Duration
	version             string
}

func (c *cliBench) fixedCost() (fixedCost, error) {
	var f fixedCost
	if out, err := exec.Command(terraformBin, "version").Output(); err == nil {
		f.version = strings.SplitN(strings.TrimSpace(string(out)), "\n", 2)[0]
	}
	for _, v := range []struct {
		name string
		doc  string
		to   *time.Duration
	}{{"empty", "", &f.empty}, {"provider-only", tfHeader, &f.providerOnly}} {
		w, err := c.newDir(v.name)
		if err != nil {
			return f, err
		}
		if err := os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(v.doc), 0o644); err != nil {
			return f, err
		}
		var ds []time.Duration
		for r := 0; r < c.o.planReps; r++ {
			res, err := w.run("plan", c.o.timeout, false, nil, planArgs...)
			if err != nil {
				return f, err
			}
			if res.exit != 0 {
				return f, fmt.Errorf("plan of the %s configuration exited %d:\n%s", v.name, res.exit, res.tail(20))
			}
			ds = append(ds, res.dur)
		}
		*v.to = medianOf(ds)
		logf("plan, %s configuration: %s (median of %d)", v.name, secs(*v.to), c.o.planReps)
	}
	return f, nil
}

func secs(d time.Duration) string { return fmt.Sprintf("%.2f s", d.Seconds()) }

// size runs one size: the CLI cycle timed, the counted cycle when asked, the floor, and checks
// the host is clean after each.
func (c *cliBench) size(n int, calls bool) sizeResult {
	r := sizeResult{n: n}
	logf("N=%d: the provider through terraform", n)
	if err := c.cliCycle(&r); err != nil {
		r.err = err
		logf("N=%d: %v", n, err)
		c.sweep(fmt.Sprintf("after the failed N=%d cycle", n))
	}
	if interrupted.Load() {
		return r
	}
	if calls && r.err == nil {
		logf("N=%d: libvirt calls per command, through a counting socket (untimed)", n)
		if err := c.callsCycle(&r); err != nil {
			r.err = fmt.Errorf("counted cycle: %w", err)
			logf("N=%d: %v", n, r.err)
			c.sweep(fmt.Sprintf("after the failed N=%d counted cycle", n))
		}
	}
	if interrupted.Load() {
		return r
	}
	logf("N=%d: the go-libvirt floor", n)
	floor, err := runCLIFloor(c.b.Raw(), c.o.pool, n, c.o.planReps)
	if err != nil {
		if r.err == nil {
			r.err = err
		}
		logf("N=%d: %v", n, err)
		c.sweep(fmt.Sprintf("after the failed N=%d floor", n))
	}
	for i := range r.rows {
		switch r.rows[i].op {
		case "create (apply)":
			r.rows[i].floor = floor["create"]
		case "no-op plan":
			r.rows[i].floor = floor["read"]
		case "description change (apply)":
			r.rows[i].floor = floor["change"]
		case "metadata change (apply)":
			r.rows[i].floor = floor["metadata"]
		case "destroy":
			r.rows[i].floor = floor["destroy"]
		}
	}
	if floor != nil {
		logf("N=%d floor: create %s, read %s, description change %s, metadata change %s, destroy %s", n,
			secs(floor["create"]), secs(floor["read"]), secs(floor["change"]), secs(floor["metadata"]), secs(floor["destroy"]))
	}
	return r
}

// cliCycle: apply (create), no-op plans, plans with -refresh=false, a description change and the
// plan after it, destroy; each must end as expected.
func (c *cliBench) cliCycle(r *sizeResult) error {
	n := r.n
	w, err := c.newDir(fmt.Sprintf("n%d", n))
	if err != nil {
		return err
	}
	if err := c.writeGroup(w, cliGroup, n, "tfbench v1", "m1"); err != nil {
		return err
	}
	if c.o.profile {
		w.profiles = filepath.Join(c.scratch, "profiles")
	}
	step := func(op, label string, watch bool, want int, args []string) (tfResult, error) {
		res, err := c.step(w, fmt.Sprintf("N=%d", n), op, label, watch, want, args)
		if err == nil && c.o.profile {
			row, perr := profileOf(op, res)
			if perr != nil {
				return res, fmt.Errorf("%s: profile: %w", op, perr)
			}
			// A plan's runs: the last one's is kept.
			if k := len(r.profiles); k > 0 && r.profiles[k-1].op == op {
				r.profiles = r.profiles[:k-1]
			}
			r.profiles = append(r.profiles, row)
		}
		return res, err
	}
	res, err := step("create (apply)", "create", false, 0, applyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, cliRow{op: "create (apply)", cli: res.dur, outBytes: res.outBytes})
	if err := c.checkMembers(n, "tfbench v1", "m1"); err != nil {
		return fmt.Errorf("after create: %w", err)
	}
	r.stateBytes = fileSize(filepath.Join(w.dir, "terraform.tfstate"))
	for _, p := range []struct {
		op    string
		args  []string
		watch bool
	}{{"no-op plan", planArgs, true}, {"no-op plan -refresh=false", planNoRefr, false}} {
		var ds []time.Duration
		var out int64
		for rep := 0; rep < c.o.planReps; rep++ {
			res, err := step(p.op, strings.ReplaceAll(p.op, " ", "-"), p.watch, 0, p.args)
			if err != nil {
				return err
			}
			ds = append(ds, res.dur)
			out = res.outBytes
			if res.peakKiB > r.rssKiB {
				r.rssKiB = res.peakKiB
			}
			if res.plugins > r.plugins {
				r.plugins = res.plugins
			}
		}
		row := cliRow{op: p.op, cli: medianOf(ds), outBytes: out}
		if c.o.planReps > 1 {
			row.note = fmt.Sprintf("median of %d: %s", len(ds), durList(ds))
		}
		r.rows = append(r.rows, row)
	}
	// change applies the group with the description and metadata given, times it as op and
	// checks that member 1 has them.
	change := func(op, label, desc, meta string) error {
		if err := c.writeGroup(w, cliGroup, n, desc, meta); err != nil {
			return err
		}
		res, err := step(op, label, false, 0, applyArgs)
		if err != nil {
			return err
		}
		r.rows = append(r.rows, cliRow{op: op, cli: res.dur, outBytes: res.outBytes})
		if err := c.checkMembers(n, desc, meta); err != nil {
			return fmt.Errorf("after the %s: %w", strings.TrimSuffix(op, " (apply)"), err)
		}
		return nil
	}
	if err := change("description change (apply)", "change", "tfbench v2", "m1"); err != nil {
		return err
	}
	r.stateAfter = fileSize(filepath.Join(w.dir, "terraform.tfstate"))
	if err := change("metadata change (apply)", "metadata", "tfbench v2", "m2"); err != nil {
		return err
	}
	res, err = step("no-op plan after the change", "plan-after-change", false, 0, planArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, cliRow{op: "no-op plan after the change", cli: res.dur, outBytes: res.outBytes, note: "verification, not a floor comparison"})
	if err := c.neighbourCycle(r); err != nil {
		return fmt.Errorf("%d members beside %d: %w", neighbourSize, n, err)
	}
	res, err = step("destroy", "destroy", false, 0, destroyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, cliRow{op: "destroy", cli: res.dur, outBytes: res.outBytes})
	return c.destroyed(cliGroup)
}

// destroyed checks that the group's destroy left nothing of it on the host.
func (c *cliBench) destroyed(group string) error {
	left, err := benchLeftovers(c.b, c.o.pool, group)
	if err != nil {
		return fmt.Errorf("after destroy: %w", err)
	}
	if left != "" {
		return fmt.Errorf("destroy left %s", left)
	}
	return nil
}

// step runs one terraform command in w, logged under who, and fails unless it exits want.
func (c *cliBench) step(w *tfDir, who, op, label string, watch bool, want int, args []string) (tfResult, error) {
	res, err := w.run(label, c.o.timeout, watch, nil, args...)
	if err != nil {
		return res, err
	}
	logf("%s %s: exit %d in %s", who, op, res.exit, secs(res.dur))
	switch {
	case res.timedOut:
		return res, fmt.Errorf("%s: killed after %s (-timeout); log %s:\n%s", op, c.o.timeout, res.log, res.tail(15))
	case res.exit != want:
		return res, fmt.Errorf("%s: exited %d, want %d; log %s:\n%s", op, res.exit, want, res.log, res.tail(30))
	}
	return res, nil
}

func durList(ds []time.Duration) string {
	var s []string
	for _, d := range ds {
		s = append(s, fmt.Sprintf("%.2f", d.Seconds()))
	}
	return strings.Join(s, ", ") + " s"
}

func fileSize(path string) int64 {
	st, err := os.Stat(path)
	if err != nil {
		return -1
	}
	return st.Size()
}

// checkMembers checks that the group has its n members, all shut off, and that member 1 has the
// description and, in its record, the metadata.
func (c *cliBench) checkMembers(n int, desc, meta string) error {
	l := c.b.Raw()
	doms, _, err := l.ConnectListAllDomains(1, 0)
	if err != nil {
		return err
	}
	found, active := 0, 0
	var first golibvirt.Domain
	for _, d := range doms {
		if !strings.HasPrefix(d.Name, cliGroup+"-") {
			continue
		}
		found++
		if d.ID > 0 {
			active++
		}
		if d.Name == cliGroup+"-1" {
			first = d
		}
	}
	if found != n || active != 0 {
		return fmt.Errorf("found %d members (%d running), want %d stopped", found, active, n)
	}
	doc, err := l.DomainGetXMLDesc(first, 0)
	if err != nil {
		return err
	}
	if !strings.Contains(doc, "<description>"+desc+"</description>") {
		return fmt.Errorf("%s-1 does not have the description %q", cliGroup, desc)
	}
	listed, err := c.b.ListDomains(context.Background(), cliGroup+"-1")
	if err != nil {
		return err
	}
	for _, d := range listed {
		if d.Name != cliGroup+"-1" {
			continue
		}
		if d.Record == nil || d.Record.Instance.Current.Metadata["tfbench"] != meta {
			return fmt.Errorf("%s-1's record does not have the metadata tfbench = %q", cliGroup, meta)
		}
		return nil
	}
	return fmt.Errorf("%s-1 is not listed", cliGroup)
}

// callsCycle runs the same commands on a second group through the counting socket, with the
// provider's debug log on, and keeps per command the libvirt calls by procedure and the
// backend's log messages. Its times are not reported: the socket adds a hop to every call.
func (c *cliBench) callsCycle(r *sizeResult) error {
	n := r.n
	w, err := c.newDir(fmt.Sprintf("calls-n%d", n))
	if err != nil {
		return err
	}
	sock := filepath.Join(c.scratch, "libvirt-count.sock")
	counter, err := startRPCCounter(sock, "/var/run/libvirt/libvirt-sock")
	if err != nil {
		return err
	}
	defer counter.close()
	if err := c.writeGroup(w, callsGroup, n, "tfbench v1", "m1"); err != nil {
		return err
	}
	steps := []struct {
		op         string
		desc, meta string
		args       []string
	}{
		{"create (apply)", "", "", applyArgs},
		{"no-op plan", "", "", planArgs},
		{"no-op plan -refresh=false", "", "", planNoRefr},
		{"description change (apply)", "tfbench v2", "m1", applyArgs},
		{"metadata change (apply)", "tfbench v2", "m2", applyArgs},
		{"destroy", "", "", destroyArgs},
	}
	for i, s := range steps {
		if s.desc != "" {
			if err := c.writeGroup(w, callsGroup, n, s.desc, s.meta); err != nil {
				return err
			}
		}
		// One log per step: terraform appends to TF_LOG_PATH, and the two no-op plans would
		// share a file (and their counts) under the operation's first word alone.
		label := fmt.Sprintf("calls-%d-%s", i+1, strings.Fields(s.op)[0])
		logPath := filepath.Join(w.dir, "logs", label+".debug.log")
		env := []string{"LIBVIRT_DEFAULT_URI=qemu:///system?socket=" + sock, "TF_LOG_PROVIDER=DEBUG", "TF_LOG_PATH=" + logPath}
		counter.take()
		res, err := w.run(label, c.o.timeout, false, env, s.args...)
		if err != nil {
			return err
		}
		if res.exit != 0 {
			return fmt.Errorf("%s through the counting socket exited %d; log %s:\n%s", s.op, res.exit, res.log, res.tail(20))
		}
		msgs, err := backendMessages(logPath)
		if err != nil {
			return err
		}
		txn, err := transactionCounts(logPath)
		if err != nil {
			return err
		}
		cc := callCount{op: s.op, procs: counter.take(), logs: msgs, txn: txn}
		r.calls = append(r.calls, cc)
		logf("N=%d %s: %d libvirt calls (%.2f per member); record reads / writes / engine plans: %s (apply walk %s)", n, s.op, cc.total(), float64(cc.total())/float64(n), txn, txn.applyString())
	}
	return c.destroyed(callsGroup)
}
