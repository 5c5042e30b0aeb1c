package main

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/faultproxy"
)

// wireHosts are the group's hosts, in distribution_policy order (its record lives on the first).
var wireHosts = []string{"default", "h2"}

// wirer is the scenario's state.
type wirer struct {
	c       *chaos
	proxies map[string]*faultproxy.Proxy // by host
	hosts   map[string]*host             // the harness's direct connections, by host
	w       *workdir
	rng     *rand.Rand
	sums    map[string]string // data volume -> checksum
	size    int
	desc    int
	gen     int    // the metadata generation: a seed swap bumps it
	ud      int    // which of two user data the members have: a REPLACE flips it
	drain   string // the host the group drains; its members live on the other
	present bool   // the group exists (false after a destroy, until the next apply)
}

// wireConf is what one command's configuration differs in.
type wireConf struct {
	running  bool
	health   bool // a guest agent health check (no member of this group ever passes it)
	rollback bool // on_failure = "ROLLBACK" and a short ready_timeout, with health
}

func wireMember(i int) string { return fmt.Sprintf("%s-%d", wireGroup, i) }

// live is the host the members belong on: the one not drained.
func (wr *wirer) live() string {
	if wr.drain == wireHosts[0] {
		return wireHosts[1]
	}
	return wireHosts[0]
}

// h2Socket is the unix socket of h2's daemon, from -move-h2-uri.
func h2Socket(uri string) (string, error) {
	u, err := url.Parse(uri)
	if err != nil {
		return "", err
	}
	if s := u.Query().Get("socket"); s != "" {
		return s, nil
	}
	return "", fmt.Errorf("-move-h2-uri %q names no socket= for the wire proxy to forward to", uri)
}

func (wr *wirer) writeConfig(cf wireConf) error {
	shutdown := ""
	if !wr.c.o.noShutdownTimeout {
		shutdown = fmt.Sprintf("  shutdown_timeout = %q\n", shutdownTimeout)
	}
	health, policy := "", ""
	if cf.health {
		health = "\n    health_check {\n      guest_agent {}\n      interval = \"1s\"\n      timeout  = \"1s\"\n    }\n"
	}
	if cf.rollback {
		policy = fmt.Sprintf("    on_failure    = \"ROLLBACK\"\n    ready_timeout = %q\n", rollbackReadyTimeout)
	}
	h2URI := strings.Replace(wr.c.o.moveH2URI, "socket="+mustSocket(wr.c.o.moveH2URI), "socket="+wr.proxies["h2"].Addr(), 1)
	t := wireOpTimeout.String()
	doc := fmt.Sprintf(`# Written by cmd/chaos: a group over two hosts, each reached through a fault proxy.
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

  host {
    name = "h2"
    uri  = %q
  }
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
      size_mib = %d
    }

    disk {
      device_name = "data"
      size_mib    = %d
    }

    network_interface {
      type = "user"
    }

    metadata = { generation = "%d" }
    cloud_init {
      user_data = "#cloud-config\n# chaos wire user data %d\n"
    }
%s  }

  update_policy {
    max_unavailable = 1
%s  }

  distribution_policy {
    hosts = [%q, %q]
    drain = [%q]
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

  timeouts {
    create = %q
    update = %q
    delete = %q
  }
}
`, "qemu+unix:///system?socket="+wr.proxies["default"].Addr(), wireHostTimeout, h2URI, wireGroup, wr.c.pool, wr.size, cf.running, shutdown,
		fmt.Sprintf("chaos wire %d", wr.desc), imageMiB, wireDataMiB, wr.gen, wr.ud, health, policy,
		wireHosts[0], wireHosts[1], wr.drain, t, t, t, t, t, t)
	return os.WriteFile(filepath.Join(wr.w.dir, "main.tf"), []byte(doc), 0o644)
}

func mustSocket(uri string) string {
	s, _ := h2Socket(uri)
	return s
}

// wireScenario runs the scenario; its results go to res.wire.
func (c *chaos) wireScenario(res *results, rng *rand.Rand) {
	wres := &wireResults{}
	res.wire = wres
	sock, err := h2Socket(c.o.moveH2URI)
	if err != nil {
		wres.err = err.Error()
		return
	}
	h2, err := connectHost(c.o.moveH2URI, c.pool)
	if err != nil {
		wres.err = fmt.Sprintf("connect to h2 (%s): %v", c.o.moveH2URI, err)
		return
	}
	wr := &wirer{c: c, rng: rng, sums: map[string]string{}, size: wireMaxSize, drain: "h2",
		hosts: map[string]*host{"default": c.h, "h2": h2}, proxies: map[string]*faultproxy.Proxy{}}
	// The proxies are closed when the scenario ends, however it ends.
	defer func() {
		for _, px := range wr.proxies {
			px.Close()
		}
	}()
	for h, target := range map[string]string{"default": envOr("VIRT_CHAOS_SOCKET", "/var/run/libvirt/libvirt-sock"), "h2": sock} {
		px, err := faultproxy.New("unix:"+filepath.Join(c.scratch, "wire-"+h+".sock"), "unix:"+target)
		if err != nil {
			wres.err = err.Error()
			return
		}
		wr.proxies[h] = px
	}
	wr.sweep()
	if wr.w, err = c.newWorkdirWith("wire", func(w *workdir) error { wr.w = w; return wr.writeConfig(wireConf{}) }); err != nil {
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

// setup creates wireMaxSize members stopped on the default host (h2 drained), writes random
// bytes into their data disks, then starts the group at wireMaxSize-1 members (the last
// member's data disk kept by NEVER).
func (wr *wirer) setup() error {
	c := wr.c
	apply := func(running bool, label string) error {
		if err := wr.writeConfig(wireConf{running: running}); err != nil {
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
		path, err := wr.hosts[wr.live()].volumePath(c.pool, name)
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
	logf("wire: %d members created on %s, random bytes in %d data disks, %d started, in %s", wireMaxSize, wr.live(), wireMaxSize, wr.size, round(time.Since(start)))
	return nil
}

// teardown destroys the group through terraform (no fault) and reports what it left on either
// host besides the NEVER data disks, then sweeps everything of the group.
func (wr *wirer) teardown(wres *wireResults) {
	for _, px := range wr.proxies {
		px.Clear()
	}
	if wr.w != nil {
		d, _ := wr.w.rerunAfterKill(wr.c.o.timeout, "wire-destroy", destroyArgs...)
		wres.destroyEx, wres.destroyEr = d.exit, errorText(d.out, 4)
		v, errs := wr.view()
		wres.leftovers = append(wres.leftovers, errs...)
		for _, h := range wireHosts {
			for name := range v.doms[h] {
				wres.leftovers = append(wres.leftovers, fmt.Sprintf("domain %s on %s", name, h))
			}
			for name := range v.vols[h] {
				if !strings.HasSuffix(name, "-data.qcow2") {
					wres.leftovers = append(wres.leftovers, fmt.Sprintf("volume %s on %s", name, h))
				}
			}
		}
		logf("wire: destroy exited %d%s; left: %s", wres.destroyEx, bracket(wres.destroyEr), listOrNothing(wres.leftovers))
	}
	wr.sweep()
}

// sweep removes everything of the group (its name prefix, this run's only) from both hosts.
func (wr *wirer) sweep() {
	for _, h := range wireHosts {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		removed, err := wr.hosts[h].sweep(ctx, wireGroup)
		cancel()
		if len(removed) > 0 {
			logf("wire: swept from %s: %s", h, strings.Join(removed, ", "))
		}
		if err != nil {
			logf("wire: sweep of %s: %v", h, err)
		}
	}
}
