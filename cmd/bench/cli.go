package main

import (
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
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
	profile  bool
	// hosts > 0 runs the many-hosts case instead of sizes: hostsSize members over that many
	// session daemons (cli_hosts.go).
	hosts, hostsSize int
	// running is the size of the running case (cli_running.go), 0 for none; runShutdown its
	// group's shutdown_timeout.
	running     int
	runShutdown time.Duration
}

// parseSizes reads -sizes; an empty list runs no stopped group (the running case alone).
func parseSizes(s string) ([]int, error) {
	var out []int
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
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
	// profiles are the breakdowns of the timed commands (-profile).
	profiles []profileRow
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
	// version is the tree make build built, as git describes it then (commits made while the run
	// goes on do not change what it measures).
	version string
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
	if o.hosts > 0 {
		report, err := c.runHosts(fixed)
		fmt.Print("\n" + report)
		if err == nil || !interrupted.Load() {
			if werr := os.WriteFile(o.out, []byte(report), 0o644); werr != nil && err == nil {
				err = werr
			}
		}
		if err == nil {
			failed = false
			logf("wrote %s; the whole run took %s", o.out, time.Since(c.started).Round(time.Second))
		}
		return err
	}
	var results []sizeResult
	for i, n := range o.sizes {
		if interrupted.Load() {
			break
		}
		results = append(results, c.size(n, o.calls && i == 0))
	}
	var running *runningResult
	if o.running > 0 && !interrupted.Load() {
		rr := c.runningCase()
		running = &rr
	}
	report := c.report(fixed, results, running)
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
	if running != nil && running.err != nil {
		return fmt.Errorf("%d running members: %w (logs kept in %s)", running.n, running.err, c.scratch)
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
	if failed || c.o.keep || c.o.profile {
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
	c.version = strings.TrimSpace(run("git", "-C", c.o.repo, "describe", "--tags", "--always", "--dirty"))
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
