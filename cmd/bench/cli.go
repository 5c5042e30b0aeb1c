package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// The CLI scenario (make bench-cli): one virt_stateful_group of N stopped members driven through
// the real terraform binary and the provider binary make build wrote, timed against the bare
// go-libvirt floor for the same work in the same run. Everything it makes on the host is named
// tfbench-…, and is swept before and after, on failure too.
const (
	benchPrefix = "tfbench-"
	cliGroup    = benchPrefix + "cli"
	callsGroup  = benchPrefix + "calls"
)

type cliOptions struct {
	sizes    []int
	pool     string
	repo     string
	out      string
	planReps int
	calls    bool
	timeout  time.Duration
	keep     bool
}

func parseSizes(s string) ([]int, error) {
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < 1 {
			return nil, fmt.Errorf("bad size %q in -sizes", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// cliRow is one line of the table.
type cliRow struct {
	op       string
	cli      time.Duration
	floor    time.Duration // 0: no libvirt work is needed
	outBytes int64
	note     string
}

type sizeResult struct {
	n          int
	rows       []cliRow
	rssKiB     int64
	plugins    int
	stateBytes int64 // after create
	stateAfter int64 // after the description change
	calls      []callCount
	// neighbour are the rows of the small running group measured beside this one (neighbourCycle).
	neighbour []cliRow
	err       error
}

type cliBench struct {
	o       cliOptions
	b       *libvirt.Backend
	scratch string
	bin     string
	env     []string
	started time.Time
}

func runCLI(o cliOptions) error {
	c := &cliBench{o: o, started: time.Now()}
	var err error
	c.b, err = libvirt.Connect(envOr("LIBVIRT_DEFAULT_URI", libvirt.DefaultURI))
	if err != nil {
		return err
	}
	defer c.b.Close()
	c.sweep("before")
	// A first interrupt kills the terraform command under way and stops the run, which then
	// sweeps what it made as it would after a failure; a second one exits at once.
	sig := make(chan os.Signal, 2)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	go func() {
		s := <-sig
		logf("%s: killing terraform, stopping, then sweeping tfbench- (again to exit at once, leaving them)", s)
		interrupted.Store(true)
		killCurrent()
		<-sig
		killCurrent()
		os.Exit(130)
	}()
	defer c.sweep("after")

	if err := c.build(); err != nil {
		return err
	}
	if c.scratch, err = os.MkdirTemp("/tmp", "tfbench-cli-"); err != nil {
		return err
	}
	failed := true
	defer func() { c.removeScratch(failed) }()
	if err := c.writeCLIConfig(); err != nil {
		return err
	}
	fixed, err := c.fixedCost()
	if err != nil {
		return err
	}
	var results []sizeResult
	for i, n := range o.sizes {
		if interrupted.Load() {
			break
		}
		results = append(results, c.size(n, o.calls && i == 0))
	}
	report := c.report(fixed, results)
	fmt.Print("\n" + report)
	if interrupted.Load() {
		// The table of an earlier, whole run stays where it is.
		return errInterrupted
	}
	if err := os.WriteFile(o.out, []byte(report), 0o644); err != nil {
		return err
	}
	logf("wrote %s; the whole run took %s", o.out, time.Since(c.started).Round(time.Second))
	for _, r := range results {
		if r.err != nil {
			return fmt.Errorf("members %d: %w (logs kept in %s)", r.n, r.err, c.scratch)
		}
	}
	failed = false
	return nil
}

func logf(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "%s bench: %s\n", time.Now().Format("15:04:05"), fmt.Sprintf(format, args...))
}

func (c *cliBench) sweep(when string) {
	what, err := sweepBench(c.b, c.o.pool)
	if err != nil {
		logf("sweep %s: %v", when, err)
	} else if what != "" {
		logf("swept %s: %s", when, what)
	}
}

func (c *cliBench) removeScratch(failed bool) {
	if c.scratch == "" {
		return
	}
	if failed || c.o.keep {
		logf("kept %s (terraform logs under */logs)", c.scratch)
		return
	}
	os.RemoveAll(c.scratch)
}

// build runs make build, so that the bench measures the provider as the tree has it now.
func (c *cliBench) build() error {
	start := time.Now()
	cmd := exec.Command("make", "-C", c.o.repo, "build")
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("make build: %w", err)
	}
	abs, err := filepath.Abs(filepath.Join(c.o.repo, "bin"))
	if err != nil {
		return err
	}
	c.bin = abs
	logf("built %s/terraform-provider-virt in %s", c.bin, time.Since(start).Round(100*time.Millisecond))
	return nil
}

// writeCLIConfig writes a CLI configuration whose dev_overrides run the binary just built. It
// lives in the scratch directory, and HOME points there too: nothing is read from or written to
// the user's home. With dev_overrides, terraform needs no init.
func (c *cliBench) writeCLIConfig() error {
	home := filepath.Join(c.scratch, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return err
	}
	cli := filepath.Join(c.scratch, "cli.tfrc")
	doc := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "registry.terraform.io/virtfleet/virt" = %q
  }
  direct {}
}
`, c.bin)
	if err := os.WriteFile(cli, []byte(doc), 0o644); err != nil {
		return err
	}
	for _, kv := range os.Environ() {
		if strings.HasPrefix(kv, "TF_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "CHECKPOINT_") {
			continue
		}
		c.env = append(c.env, kv)
	}
	c.env = append(c.env, "HOME="+home, "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
	return nil
}

func (c *cliBench) newDir(name string) (*tfDir, error) {
	w := &tfDir{dir: filepath.Join(c.scratch, name), env: c.env}
	return w, os.MkdirAll(w.dir, 0o755)
}

const tfHeader = `terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

provider "virt" {}
`

// writeGroup writes the group's configuration, members stopped, with the members' description
// and their metadata key tfbench set to meta.
func (c *cliBench) writeGroup(w *tfDir, group string, n int, desc, meta string) error {
	return c.writeGroupRunning(w, group, n, false, desc, meta)
}

// writeGroupRunning is writeGroup with the members' power state given.
func (c *cliBench) writeGroupRunning(w *tfDir, group string, n int, running bool, desc, meta string) error {
	doc := tfHeader + fmt.Sprintf(`
resource "virt_stateful_group" "bench" {
  name             = %q
  pool             = %q
  target_size      = %d
  running          = %t
  shutdown_timeout = "0s"

  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    description = %q
    metadata    = { tfbench = %q }

    boot_disk {
      size_mib = 16
    }
  }
}
`, group, c.o.pool, n, running, desc, meta)
	return os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(doc), 0o644)
}

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
	if out, err := exec.Command("terraform", "version").Output(); err == nil {
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
	step := func(op, label string, watch bool, want int, args []string) (tfResult, error) {
		return c.step(w, fmt.Sprintf("N=%d", n), op, label, watch, want, args)
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

func (c *cliBench) report(f fixedCost, results []sizeResult) string {
	var b strings.Builder
	host, _ := os.Hostname()
	version := strings.TrimSpace(run("git", "-C", c.o.repo, "describe", "--tags", "--always", "--dirty"))
	fmt.Fprintf(&b, "## The provider through the terraform CLI vs the go-libvirt floor\n\n")
	fmt.Fprintf(&b, "%s, %s, %d CPUs, %s; %s; provider %s (make build); pool %s. One `virt_stateful_group`, members stopped "+
		"(`running = false`), qemu, 1 vCPU, 64 MiB, one 16 MiB boot volume, `shutdown_timeout = \"0s\"`. "+
		"Wall clock of each terraform command (plugin start included); plans are the median of %d. "+
		"The floor is the same libvirt work with bare go-libvirt calls at the reconciler's concurrency (%d), in the same run: "+
		"create = a volume create and a define per member; read = one list, one XML read per member; "+
		"description change = one list, one description write per member; metadata change = one list, one metadata element write per member; destroy = one list of domains and one of volumes, "+
		"an undefine and a volume delete per member.\n\n",
		time.Now().Format("2006-01-02 15:04"), host, runtime.NumCPU(), memTotal(), f.version, version, c.o.pool, c.o.planReps, reconcile.DefaultWorkers)
	fmt.Fprintf(&b, "terraform's fixed cost, `terraform plan` with no resources: %s with an empty configuration, %s with the provider configured "+
		"(plugin started, libvirt connected).\n\n", secs(f.empty), secs(f.providerOnly))
	b.WriteString("| members | operation | provider via CLI | floor | ratio | terraform output | note |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | ---: | --- |\n")
	for _, r := range results {
		for _, row := range r.rows {
			floor, ratio := "none", "—"
			if row.floor > 0 {
				floor, ratio = secs(row.floor), fmt.Sprintf("%.2fx", float64(row.cli)/float64(row.floor))
			} else if row.op == "no-op plan after the change" {
				floor = "—"
			}
			note := row.note
			if row.op == "no-op plan -refresh=false" {
				// It needs no libvirt work at all: the ratio is to terraform's own plan.
				ratio = fmt.Sprintf("%.2fx terraform's", float64(row.cli)/float64(f.providerOnly))
				note = strings.TrimPrefix(note+"; ratio to the plan with no resources", "; ")
			}
			fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", r.n, row.op, secs(row.cli), floor, ratio, kib(row.outBytes), note)
		}
		if r.rssKiB > 0 {
			fmt.Fprintf(&b, "| %d | provider peak RSS, no-op plan | %.1f MB | | | | max VmHWM/VmRSS of %d plugin process(es) |\n", r.n, float64(r.rssKiB)/1024, r.plugins)
		}
		if r.stateBytes > 0 {
			after := ""
			if r.stateAfter > 0 {
				after = kib(r.stateAfter) + " after the description change; "
			}
			fmt.Fprintf(&b, "| %d | state file | %s | | | | %s%.0f bytes/member |\n", r.n, kib(r.stateBytes), after, float64(r.stateBytes)/float64(r.n))
		}
		if r.err != nil {
			fmt.Fprintf(&b, "| %d | **FAILED** | | | | | %s |\n", r.n, oneLine(r.err.Error()))
		}
	}
	for i, r := range results {
		if len(r.neighbour) == 0 {
			continue
		}
		if i == 0 || len(results[i-1].neighbour) == 0 {
			fmt.Fprintf(&b, "\n### %d running members beside the N-member group\n\n", neighbourSize)
			b.WriteString("A second group, `" + neighbourGroup + "`, with `running = true`, created, planned and changed while the N stopped members " +
				"exist on the same host: its plans read the definitions of its own members only.\n\n")
			b.WriteString("| beside N | operation | provider via CLI | note |\n| ---: | --- | ---: | --- |\n")
		}
		for _, row := range r.neighbour {
			fmt.Fprintf(&b, "| %d | %s | %s | %s |\n", r.n, row.op, secs(row.cli), row.note)
		}
	}
	for _, r := range results {
		if len(r.calls) == 0 {
			continue
		}
		fmt.Fprintf(&b, "\n### libvirt calls per command, N=%d\n\n", r.n)
		b.WriteString("Counted on a socket in front of libvirtd's (a second group, `" + callsGroup + "`, untimed), with `TF_LOG_PROVIDER=DEBUG`; " +
			"the debug log's backend messages are its writes and listings (per-domain reads are not logged). " +
			"Record reads / writes / engine plans are the group records read and written and the engine's plans of a group, as the provider's processes count them " +
			"(`" + reconcile.CountsMessage + "` in the debug log): the whole command (every walk: refresh, plan, apply), and of that the apply walk's process " +
			"(which plans each resource again before applying it).\n\n")
		b.WriteString("| operation | libvirt calls | per member | record reads / writes / engine plans | of which apply walk | by procedure | backend debug messages |\n| --- | ---: | ---: | ---: | ---: | --- | --- |\n")
		for _, cc := range r.calls {
			fmt.Fprintf(&b, "| %s | %d | %.2f | %s | %s | %s | %s |\n", cc.op, cc.total(), float64(cc.total())/float64(r.n), cc.txn, cc.txn.applyString(), cc.breakdown(r.n), cc.logBreakdown())
		}
	}
	fmt.Fprintf(&b, "\nWhole run: %s.\n", time.Since(c.started).Round(time.Second))
	return b.String()
}

func oneLine(s string) string {
	s = strings.ReplaceAll(s, "|", "\\|")
	return strings.Join(strings.Fields(s), " ")
}

func kib(n int64) string {
	switch {
	case n < 0:
		return "?"
	case n < 1024:
		return fmt.Sprintf("%d B", n)
	case n < 1024*1024:
		return fmt.Sprintf("%.1f KiB", float64(n)/1024)
	}
	return fmt.Sprintf("%.2f MiB", float64(n)/1024/1024)
}

func run(name string, args ...string) string {
	out, _ := exec.Command(name, args...).Output()
	return string(out)
}

func memTotal() string {
	b, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "? memory"
	}
	for _, line := range strings.Split(string(b), "\n") {
		if fs := strings.Fields(line); len(fs) >= 2 && fs[0] == "MemTotal:" {
			k, _ := strconv.ParseFloat(fs[1], 64)
			return fmt.Sprintf("%.0f GiB", k/1024/1024)
		}
	}
	return "? memory"
}
