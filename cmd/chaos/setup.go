package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
)

// imageNames are the two base images the group's source_image flips between. They are empty:
// the guests boot no operating system, and a REPLACE only needs the path to change.
var imageNames = [2]string{prefix + "img-a.qcow2", prefix + "img-b.qcow2"}

const imageMiB = 64

// chaos is the harness's state across setup, scenarios and teardown.
type chaos struct {
	o    options
	pool string
	h    *host
	// h2 is the harness's connection to h2 for the sweeps (h2Host): nil until one opens it.
	h2mu    sync.Mutex
	h2      *host
	scratch string
	env     []string
	roll    *workdir
	images  [2]string // the images' paths, as source_image names them
	cur     int       // which image the configuration now names
	// sums are the checksums each data volume must have, by volume name.
	sums map[string]string
	// rollout is one undisturbed rolling replace, measured during setup: kill delays are drawn
	// from [0, rollout].
	rollout time.Duration
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func newChaos(o options) (*chaos, error) {
	uri := envOr("LIBVIRT_DEFAULT_URI", libvirt.DefaultURI)
	h, err := connectHost(uri, envOr("VIRT_TEST_POOL", "virt"))
	if err != nil {
		return nil, err
	}
	return &chaos{o: o, pool: h.pool, h: h, sums: map[string]string{}}, nil
}

func memberName(i int) string         { return fmt.Sprintf("%s-%d", groupName, i) }
func dataVolume(member string) string { return member + "-data.qcow2" }
func bootVolume(member string) string { return member + "-boot.qcow2" }

// setup sweeps leftovers, makes the images and the Terraform directory, creates the group
// stopped, writes a pattern into every data disk, starts the group and times one rolling
// replace nothing disturbs.
func (c *chaos) setup(res *results) error {
	c.sweepAll()
	if err := c.makeImages(); err != nil {
		return err
	}
	if err := c.makeScratch(res); err != nil {
		return err
	}
	var err error
	if c.roll, err = c.newWorkdir("roll"); err != nil {
		return err
	}

	start := time.Now()
	if err := c.applyOrFail(c.roll, config{image: c.images[0], running: false, size: c.o.members}, "create-stopped"); err != nil {
		return err
	}
	logf("created %d stopped members in %s", c.o.members, round(time.Since(start)))
	if err := c.writePatterns(); err != nil {
		return err
	}
	// Starting the members is the first in-place change of the group. A provider that fails it
	// is reported, and the apply is tried once more (the state it left may already be right), so
	// that the chaos can still be measured.
	start = time.Now()
	if err := c.applyOrFail(c.roll, config{image: c.images[0], running: true, size: c.o.members}, "start"); err != nil {
		res.setupFindings = append(res.setupFindings, "starting the stopped members (running = false -> true) failed: "+err.Error())
		logf("%v; applying once more", err)
		if err := c.applyOrFail(c.roll, config{image: c.images[0], running: true, size: c.o.members}, "start-again"); err != nil {
			return fmt.Errorf("a second apply failed too: %w", err)
		}
		res.setupFindings = append(res.setupFindings, "a second apply succeeded")
	}
	logf("started the members in %s", round(time.Since(start)))
	res.started = c.checkAll("after start")
	if p := c.roll.plan(c.o.timeout, "after-start"); p.exit != 0 || len(res.started.down) > 0 {
		f := fmt.Sprintf("after the start, plan exited %d%s", p.exit, bracket(planChanges(p.out, 6)+errorText(p.out, 3)))
		if len(res.started.down) > 0 {
			f += " with members down: " + strings.Join(res.started.down, "; ")
		}
		res.setupFindings = append(res.setupFindings, f)
	}
	logf("after start: %s", res.started.summary())

	// The kill delays must be drawn from a rollout of running members, which each have to be
	// stopped first. If the start left members down, one rollout brings them up before the one
	// that is timed.
	if len(res.started.down) > 0 {
		if err := c.writeConfig(c.roll, c.flip()); err != nil {
			return err
		}
		r := c.roll.apply(c.o.timeout, "warm-up")
		logf("members were down after the start: one rolling replace to bring them up took %s (exit %d%s)",
			round(r.dur), r.exit, bracket(errorText(r.out, 4)))
		if r.exit != 0 {
			return fmt.Errorf("the rolling replace that was to bring the members up failed (exit %d): %s", r.exit, errorText(r.out, 4))
		}
	}

	// One undisturbed rolling replace: its duration is the window the kills are drawn from, and
	// its outcome shows what the provider does when nothing goes wrong.
	if err := c.writeConfig(c.roll, c.flip()); err != nil {
		return err
	}
	r := c.roll.apply(c.o.timeout, "measure")
	c.rollout = r.dur
	res.rollout = r.dur
	res.undisturbed = c.converge(r, "", "measure", expectation{members: c.o.members})
	logf("undisturbed rolling replace: %s, apply exit %d, plan exit %d; %s", round(r.dur), r.exit,
		res.undisturbed.planExit, res.undisturbed.checks.summary())
	if r.exit != 0 {
		return fmt.Errorf("the undisturbed rolling replace failed (exit %d): %s", r.exit, errorText(r.out, 4))
	}
	return nil
}

// makeScratch makes the scratch directory and the Terraform CLI configuration in it.
func (c *chaos) makeScratch(res *results) error {
	var err error
	if c.scratch, err = os.MkdirTemp("", "virt-chaos."); err != nil {
		return err
	}
	res.scratch = c.scratch
	logf("scratch directory %s", c.scratch)
	return c.writeCLIConfig()
}

// applyOrFail writes the configuration and applies it; during setup any failure stops the run.
func (c *chaos) applyOrFail(w *workdir, cfg config, label string) error {
	if err := c.writeConfig(w, cfg); err != nil {
		return err
	}
	r := w.apply(c.o.timeout, label)
	if r.exit != 0 {
		return fmt.Errorf("terraform apply (%s) in %s exited %d: %s (log %s)", label, w.dir, r.exit, errorText(r.out, 6), r.log)
	}
	return nil
}

// makeImages creates the two base images as pool volumes, so that the provider accepts them as
// sources without allow_host_paths.
func (c *chaos) makeImages() error {
	ctx, cancel := withTimeout(time.Minute)
	defer cancel()
	b := c.h.conn()
	for _, n := range imageNames {
		if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: c.pool, Name: n, SizeMiB: imageMiB}); err != nil {
			return fmt.Errorf("create image %s: %w", n, err)
		}
	}
	vols, err := b.ListVolumes(ctx, c.pool, strings.TrimSuffix(imageNames[0], "a.qcow2"))
	if err != nil {
		return err
	}
	for i, n := range imageNames {
		for _, v := range vols {
			if v.Name == n {
				c.images[i] = v.Path
			}
		}
		if c.images[i] == "" {
			return fmt.Errorf("image %s was created but is not listed in pool %s", n, c.pool)
		}
	}
	logf("images %s and %s", c.images[0], c.images[1])
	return nil
}

// writeCLIConfig writes the Terraform CLI configuration the way tools/demo.sh does: dev_overrides
// runs the binary just built, and the filesystem mirror lets `terraform init` resolve the
// provider without a registry, which this host may not reach.
func (c *chaos) writeCLIConfig() error {
	mirror := filepath.Join(c.scratch, "mirror", "registry.terraform.io", "virtfleet", "virt", "0.0.1", "linux_amd64")
	if err := os.MkdirAll(mirror, 0o755); err != nil {
		return err
	}
	if err := os.Symlink(filepath.Join(c.o.bin, "terraform-provider-virt"), filepath.Join(mirror, "terraform-provider-virt_v0.0.1")); err != nil {
		return err
	}
	cli := filepath.Join(c.scratch, "cli.tfrc")
	doc := fmt.Sprintf(`provider_installation {
  dev_overrides {
    "virtfleet/virt" = %q
  }
  filesystem_mirror {
    path    = %q
    include = ["virtfleet/virt"]
  }
  direct {
    exclude = ["virtfleet/virt"]
  }
}
`, c.o.bin, filepath.Join(c.scratch, "mirror"))
	if err := os.WriteFile(cli, []byte(doc), 0o644); err != nil {
		return err
	}
	c.env = append(os.Environ(), "TF_CLI_CONFIG_FILE="+cli, "TF_IN_AUTOMATION=1", "TF_INPUT=0", "CHECKPOINT_DISABLE=1")
	return nil
}

// newWorkdir makes a Terraform working directory under the scratch directory and runs init.
func (c *chaos) newWorkdir(name string) (*workdir, error) {
	return c.newWorkdirWith(name, func(w *workdir) error { return c.writeConfig(w, config{image: c.images[0], size: c.o.members}) })
}

// newWorkdirWith is newWorkdir with the first configuration that write writes.
func (c *chaos) newWorkdirWith(name string, write func(*workdir) error) (*workdir, error) {
	w := &workdir{name: name, dir: filepath.Join(c.scratch, name), env: c.env}
	if err := os.MkdirAll(w.dir, 0o755); err != nil {
		return nil, err
	}
	if err := write(w); err != nil {
		return nil, err
	}
	if r := w.run(5*time.Minute, "init", "init", "-input=false", "-no-color"); r.exit != 0 {
		return nil, fmt.Errorf("terraform init in %s exited %d: %s", w.dir, r.exit, strings.TrimSpace(r.out))
	}
	return w, nil
}

// config is what varies between the configurations the harness applies.
type config struct {
	image   string
	running bool
	size    int
	// extra is appended to the configuration (import blocks).
	extra string
	// rollback gives the template a guest agent health check and the update policy
	// on_failure = "ROLLBACK" with a short ready_timeout: the guests boot no operating system, so
	// no member ever becomes healthy, and the first member replaced fails its wave and is
	// rolled back (rollback.go).
	rollback bool
	// snapshot gives the update policy a snapshot block with retention (snapshot.go).
	snapshot  bool
	retention string
}

// current is the kill loop's configuration: running, with the image c.cur names.
func (c *chaos) current() config {
	return config{image: c.images[c.cur], running: true, size: c.o.members}
}

func (c *chaos) flip() config {
	c.cur = 1 - c.cur
	return c.current()
}

func (c *chaos) writeConfig(w *workdir, cfg config) error {
	shutdown := ""
	if !c.o.noShutdownTimeout {
		shutdown = fmt.Sprintf("  shutdown_timeout = %q\n", shutdownTimeout)
	}
	health, policy := "", ""
	if cfg.rollback {
		health = "\n    health_check {\n      guest_agent {}\n      interval = \"1s\"\n      timeout  = \"1s\"\n    }\n"
		policy = fmt.Sprintf("    on_failure      = \"ROLLBACK\"\n    ready_timeout   = %q\n", rollbackReadyTimeout)
	}
	if cfg.snapshot {
		policy += fmt.Sprintf("    snapshot {\n      retention = %q\n    }\n", cfg.retention)
	}
	doc := fmt.Sprintf(`# Written by cmd/chaos: a group flipped between two boot images under kills.
terraform {
  required_providers {
    virt = {
      source = "virtfleet/virt"
    }
  }
}

provider "virt" {}

resource "virt_stateful_group" "x" {
  name        = %q
  pool        = %q
  target_size = %d
  running     = %t
%s
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64

    boot_disk {
      source_image = %q
      size_mib     = %d
    }

    disk {
      device_name = "data"
      size_mib    = 16
    }

    # Each member's seed says which image it runs: the flip rewrites every seed with it.
    metadata = { image = %q }
    cloud_init {
      user_data = "#cloud-config\n"
    }
%s  }

  update_policy {
    max_unavailable = 1
%s  }
}

resource "virt_stateful_policy" "x" {
  group = virt_stateful_group.x.name

  disk {
    device_name = "data"
    delete_rule = "NEVER"
  }
}
%s`, groupName, c.pool, cfg.size, cfg.running, shutdown, cfg.image, imageMiB, filepath.Base(cfg.image), health, policy, cfg.extra)
	return os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(doc), 0o644)
}

// writePatterns fills the first MiB of each member's data volume with its own byte while the
// members are stopped (qemu-io needs the image's write lock), and remembers the checksums.
func (c *chaos) writePatterns() error {
	for i := 1; i <= c.o.members; i++ {
		name := dataVolume(memberName(i))
		path, err := c.h.volumePath(c.pool, name)
		if err != nil {
			return err
		}
		pattern := byte(0x40 + i%0xbf)
		if err := writePattern(path, pattern); err != nil {
			return err
		}
		sum, zero, err := checksum(path, c.scratch)
		if err != nil {
			return err
		}
		if zero {
			return fmt.Errorf("volume %s reads back all zero after qemu-io wrote 0x%02x into it", name, pattern)
		}
		c.sums[name] = sum
	}
	logf("wrote a distinct pattern into %d data volumes", c.o.members)
	return nil
}

// sweepAll removes every domain, volume and group record of this run's names (ownNames) from
// both hosts (sweepHosts): leftovers of an interrupted run before, everything this run made
// after. Another run's objects (another -run-name) are left alone.
func (c *chaos) sweepAll() {
	ctx, cancel := withTimeout(2 * time.Minute)
	defer cancel()
	removed, err := c.sweepHosts(ctx)
	if len(removed) > 0 {
		logf("swept %s", strings.Join(removed, ", "))
	}
	if err != nil {
		logf("sweep: %v", err)
	}
}

// sweepHosts sweeps this run's names from the system daemon and from h2 (-move-h2-uri), where the
// moves and wire scenarios put members and volumes: an interrupt in the middle of one of them
// left its objects on h2 otherwise. A run without h2 (no session daemon) sweeps the system
// daemon alone, and says so.
func (c *chaos) sweepHosts(ctx context.Context) ([]string, error) {
	removed, err := c.h.sweepOwn(ctx)
	h2, cerr := c.h2Host(ctx)
	if cerr != nil {
		logf("h2 (%s) not swept: %v", c.o.moveH2URI, cerr)
		return removed, err
	}
	more, err2 := h2.sweepOwn(ctx)
	for _, r := range more {
		removed = append(removed, r+" on h2")
	}
	if err2 != nil {
		err2 = fmt.Errorf("h2: %w", err2)
	}
	return removed, errors.Join(err, err2)
}

// h2Host is the harness's connection to h2, opened at the first sweep that needs it and kept:
// within ctx, so that a sweep on the way out (an interrupt) never waits on a daemon that does
// not answer.
func (c *chaos) h2Host(ctx context.Context) (*host, error) {
	c.h2mu.Lock()
	defer c.h2mu.Unlock()
	if c.h2 != nil {
		return c.h2, nil
	}
	b, err := libvirt.ConnectContext(ctx, c.o.moveH2URI)
	if err != nil {
		return nil, err
	}
	c.h2 = &host{uri: c.o.moveH2URI, pool: c.pool, b: b}
	return c.h2, nil
}

// sweepHelpers undefines the snapshot helper domains (snapshot.<volume>) of the volumes named p…:
// a run cut off inside a snapshot call leaves one defined, and its name does not begin with p.
func (h *host) sweepHelpers(ctx context.Context, p string) ([]string, error) {
	if !strings.HasPrefix(p, prefix) {
		return nil, fmt.Errorf("refusing to sweep helpers of %q: only %s… objects are the harness's", p, prefix)
	}
	b := h.conn()
	doms, err := b.ListDomains(ctx, "snapshot."+p)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, d := range doms {
		if err := b.UndefineDomain(ctx, d.Name); err != nil {
			errs = append(errs, err)
			continue
		}
		removed = append(removed, "domain "+d.Name)
	}
	return removed, errors.Join(errs...)
}

// sweepOwn sweeps each of this run's name prefixes from the host.
func (h *host) sweepOwn(ctx context.Context) ([]string, error) {
	var removed []string
	var errs []error
	for _, p := range ownNames() {
		r, err := h.sweep(ctx, p)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
		r, err = h.sweepHelpers(ctx, p)
		removed = append(removed, r...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

func round(d time.Duration) time.Duration { return d.Round(100 * time.Millisecond) }
