// This file holds the CLI bench's many-hosts case (-hosts N, make bench-cli BENCH_HOSTS=N): one
// group of M stopped members spread over N libvirt session daemons on this machine
// (tools/bench-hosts.sh starts them, as users tfbench-h01..), through the terraform CLI against its
// go-libvirt floor over the same daemons; the same M members on the one system host, for the plan's
// ratio to one host; and what each host costs by itself: dialling one, and a group of no members
// planned over the N hosts and over one.

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

const (
	hostsGroup = benchPrefix + "hosts"  // the M members over the N hosts
	hostsEmpty = benchPrefix + "hosts0" // no members, over the N hosts
	oneGroup   = benchPrefix + "one"    // the M members on the system host alone
	oneEmpty   = benchPrefix + "one0"   // no members, on the system host alone
)

// benchHost is one of the bench's session daemons, with the bench's own connection to it (the
// floor's and the checks').
type benchHost struct {
	name, uri string
	b         *libvirt.Backend
}

// hostsRow is one line of the many-hosts table: a command over the N hosts (or on one, for the
// reference rows), its floor when it has one.
type hostsRow struct {
	what  string
	cli   time.Duration
	floor time.Duration
	note  string
}

type hostsResult struct {
	hosts, size int
	upTime      time.Duration
	// dials are the times to connect to each host in turn (dial and libvirt's connection open).
	dials []time.Duration
	rows  []hostsRow
	// perHost are the members each host had after the create, in host order.
	perHost []int
	// rssKiB is the provider's peak RSS in the no-op plans over the N hosts; daemonsKiB the bench
	// daemons' summed RSS with the group's members defined, daemons how many were read.
	rssKiB, daemonsKiB int64
	// oneRSSKiB is the provider's peak RSS in the no-op plans of the same group on one host.
	oneRSSKiB int64
	daemons   int
	// loadStart is the load average when the case started.
	loadStart string
	err       error
}

// runHosts runs the many-hosts case and returns its markdown.
func (c *cliBench) runHosts(f fixedCost) (string, error) {
	r := hostsResult{hosts: c.o.hosts, size: c.o.hostsSize, loadStart: loadAvg()}
	hosts, err := c.hostsUp(&r)
	// Down even when the daemons did not all come up or cannot be reached: it stops those that run.
	defer c.hostsDown(hosts)
	if err == nil {
		err = c.hostsCycles(&r, hosts)
	}
	r.err = err
	return c.hostsReport(f, r), err
}

// script runs tools/bench-hosts.sh with args, its output to stderr as it comes, and returns it.
func (c *cliBench) script(timeout time.Duration, args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", append([]string{filepath.Join(c.o.repo, "tools", "bench-hosts.sh")}, args...)...)
	cmd.Env = append(os.Environ(), "VIRT_POOL="+c.o.pool)
	// A daemon the script starts keeps no pipe of ours (transports-up.sh's detached), but do not
	// wait on one forever.
	cmd.WaitDelay = 10 * time.Second
	var out strings.Builder
	cmd.Stdout = &out
	cmd.Stderr = &out
	err := cmd.Run()
	if args[0] != "uris" || err != nil {
		fmt.Fprint(os.Stderr, out.String())
	}
	if err != nil {
		return out.String(), fmt.Errorf("bash tools/bench-hosts.sh %s: %w", strings.Join(args, " "), err)
	}
	return out.String(), nil
}

// hostsUp starts the N daemons (timed), connects to each, times a dial of each in turn, and sweeps
// them.
func (c *cliBench) hostsUp(r *hostsResult) ([]benchHost, error) {
	n := c.o.hosts
	logf("hosts: starting %d session daemons (tools/bench-hosts.sh up %d)", n, n)
	start := time.Now()
	if _, err := c.script(20*time.Minute, "up", strconv.Itoa(n)); err != nil {
		return nil, err
	}
	r.upTime = time.Since(start)
	out, err := c.script(time.Minute, "uris", strconv.Itoa(n))
	if err != nil {
		return nil, err
	}
	uris := strings.Fields(out)
	if len(uris) != n {
		return nil, fmt.Errorf("bench-hosts.sh uris %d gave %d URIs", n, len(uris))
	}
	// Each host dialled, opened and closed in turn, as a provider process's first call to a host
	// does (libvirt.ConnectContext is the provider's own connection).
	for _, u := range uris {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		t0 := time.Now()
		b, err := libvirt.ConnectContext(ctx, u)
		d := time.Since(t0)
		cancel()
		if err != nil {
			return nil, err
		}
		b.Close()
		r.dials = append(r.dials, d)
	}
	hosts := make([]benchHost, n)
	for i, u := range uris {
		b, err := libvirt.Connect(u)
		if err != nil {
			for _, h := range hosts[:i] {
				h.b.Close()
			}
			return nil, err
		}
		hosts[i] = benchHost{name: fmt.Sprintf("h%02d", i+1), uri: u, b: b}
	}
	logf("hosts: %d up in %s; dial+open of one host: median %s, max %s", n, r.upTime.Round(100*time.Millisecond),
		ms3(medianOf(r.dials)), ms3(maxOf(r.dials)))
	c.sweepHosts(hosts, "before")
	return hosts, nil
}

// hostsDown sweeps the hosts, closes the bench's connections and, unless -keep, stops the daemons
// (which removes whatever they still kept); with no hosts (they did not all come up), it only
// stops the daemons.
func (c *cliBench) hostsDown(hosts []benchHost) {
	c.sweepHosts(hosts, "after")
	for _, h := range hosts {
		h.b.Close()
	}
	if c.o.keep {
		logf("hosts: -keep: the %d daemons stay up (bash tools/bench-hosts.sh down stops them)", len(hosts))
		return
	}
	if _, err := c.script(5*time.Minute, "down"); err != nil {
		logf("hosts: %v", err)
	}
}

// sweepHosts sweeps tfbench- objects from every host, the hosts in parallel.
func (c *cliBench) sweepHosts(hosts []benchHost, when string) {
	var wg sync.WaitGroup
	for _, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			what, err := sweepBench(h.b, c.o.pool)
			if err != nil {
				logf("sweep %s %s: %v", h.name, when, err)
			} else if what != "" {
				logf("swept %s %s: %s", h.name, when, what)
			}
		}()
	}
	wg.Wait()
}

// hostsCycles: the no-member groups (over the N hosts, then on one), the M members over the N
// hosts, their floor, then the M members on the system host.
func (c *cliBench) hostsCycles(r *hostsResult, hosts []benchHost) error {
	n, m := len(hosts), r.size
	empty := func(group string, on []benchHost, label string) error {
		w, err := c.newDir(group)
		if err != nil {
			return err
		}
		if err := c.writeHostsGroup(w, group, 0, on, "tfbench v1"); err != nil {
			return err
		}
		who := fmt.Sprintf("0 members, %s", label)
		if _, err := c.step(w, who, "create (apply)", "create", false, 0, applyArgs); err != nil {
			return err
		}
		ds, _, err := c.plans(w, who)
		if err != nil {
			return err
		}
		r.rows = append(r.rows, hostsRow{what: "no-op plan, 0 members, " + label, cli: medianOf(ds), note: "median of " + durList(ds)})
		if _, err := c.step(w, who, "destroy", "destroy", false, 0, destroyArgs); err != nil {
			return err
		}
		return nil
	}
	if err := empty(hostsEmpty, hosts, fmt.Sprintf("over %d hosts", n)); err != nil {
		return err
	}
	if err := empty(oneEmpty, nil, "one host"); err != nil {
		return err
	}
	if err := c.hostsCycle(r, hosts); err != nil {
		return err
	}
	logf("hosts: the go-libvirt floor over %d hosts", n)
	floor, err := runHostsFloor(hosts, c.o.pool, m, c.o.planReps)
	if err != nil {
		return fmt.Errorf("floor: %w", err)
	}
	for i := range r.rows {
		switch r.rows[i].what {
		case "create (apply)":
			r.rows[i].floor = floor.t["create"]
		case "no-op plan":
			r.rows[i].floor = floor.t["read"]
			r.rows[i].note += fmt.Sprintf("; floor read with the hosts in parallel: %s", secs(floor.t["read-parallel"]))
		case "description change (apply)":
			r.rows[i].floor = floor.t["change"]
		case "destroy":
			r.rows[i].floor = floor.t["destroy"]
		}
	}
	if interrupted.Load() {
		return errInterrupted
	}
	logf("hosts: the same %d members on the system host alone", m)
	return c.oneHostCycle(r)
}

// plans runs planReps no-op plans in w, watched, and returns their times and the peak RSS.
func (c *cliBench) plans(w *tfDir, who string) ([]time.Duration, int64, error) {
	var ds []time.Duration
	var peak int64
	for rep := 0; rep < c.o.planReps; rep++ {
		res, err := c.step(w, who, "no-op plan", "plan", true, 0, planArgs)
		if err != nil {
			return nil, 0, err
		}
		ds = append(ds, res.dur)
		peak = max(peak, res.peakKiB)
	}
	return ds, peak, nil
}

// hostsCycle: the M members over the N hosts: create, placement, no-op plans, a description
// change, destroy.
func (c *cliBench) hostsCycle(r *hostsResult, hosts []benchHost) error {
	m := r.size
	who := fmt.Sprintf("%d members over %d hosts", m, len(hosts))
	w, err := c.newDir(hostsGroup)
	if err != nil {
		return err
	}
	if err := c.writeHostsGroup(w, hostsGroup, m, hosts, "tfbench v1"); err != nil {
		return err
	}
	res, err := c.step(w, who, "create (apply)", "create", false, 0, applyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "create (apply)", cli: res.dur})
	if r.perHost, err = checkHostMembers(hosts, hostsGroup, m, "tfbench v1"); err != nil {
		return fmt.Errorf("after create: %w", err)
	}
	r.daemonsKiB, r.daemons = daemonsRSS(len(hosts))
	ds, peak, err := c.plans(w, who)
	if err != nil {
		return err
	}
	r.rssKiB = peak
	r.rows = append(r.rows, hostsRow{what: "no-op plan", cli: medianOf(ds), note: "median of " + durList(ds)})
	res, err = c.step(w, who, "no-op plan -refresh=false", "plan-no-refresh", false, 0, planNoRefr)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "no-op plan -refresh=false", cli: res.dur, note: "reads no host"})
	if err := c.writeHostsGroup(w, hostsGroup, m, hosts, "tfbench v2"); err != nil {
		return err
	}
	res, err = c.step(w, who, "description change (apply)", "change", false, 0, applyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "description change (apply)", cli: res.dur})
	if _, err := checkHostMembers(hosts, hostsGroup, m, "tfbench v2"); err != nil {
		return fmt.Errorf("after the description change: %w", err)
	}
	res, err = c.step(w, who, "destroy", "destroy", false, 0, destroyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "destroy", cli: res.dur})
	for _, h := range hosts {
		left, err := benchLeftovers(h.b, c.o.pool, hostsGroup)
		if err != nil {
			return fmt.Errorf("after destroy, %s: %w", h.name, err)
		}
		if left != "" {
			return fmt.Errorf("destroy left %s on %s", left, h.name)
		}
	}
	return nil
}

// oneHostCycle: the M members on the system host alone, created, planned and destroyed, for the
// plan's ratio to one host (its floor is the single-host bench's, make bench-cli BENCH_SIZES=M).
func (c *cliBench) oneHostCycle(r *hostsResult) error {
	m := r.size
	who := fmt.Sprintf("%d members on one host", m)
	w, err := c.newDir(oneGroup)
	if err != nil {
		return err
	}
	if err := c.writeHostsGroup(w, oneGroup, m, nil, "tfbench v1"); err != nil {
		return err
	}
	res, err := c.step(w, who, "create (apply)", "create", false, 0, applyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "create (apply), one host", cli: res.dur, note: "the system daemon"})
	ds, peak, err := c.plans(w, who)
	if err != nil {
		return err
	}
	r.oneRSSKiB = peak
	r.rows = append(r.rows, hostsRow{what: "no-op plan, one host", cli: medianOf(ds), note: "median of " + durList(ds)})
	res, err = c.step(w, who, "destroy", "destroy", false, 0, destroyArgs)
	if err != nil {
		return err
	}
	r.rows = append(r.rows, hostsRow{what: "destroy, one host", cli: res.dur})
	return c.destroyed(oneGroup)
}

// writeHostsGroup writes the group of writeGroup over hosts (each a host block of the provider,
// all of them the group's distribution_policy hosts, in order: the group record is on the first);
// with no hosts, on the provider's own host, the system daemon.
func (c *cliBench) writeHostsGroup(w *tfDir, group string, n int, hosts []benchHost, desc string) error {
	provider, policy := `provider "virt" {}`, ""
	if len(hosts) > 0 {
		var p, names strings.Builder
		p.WriteString("provider \"virt\" {\n")
		for i, h := range hosts {
			fmt.Fprintf(&p, "  host {\n    name = %q\n    uri  = %q\n  }\n", h.name, h.uri)
			if i > 0 {
				names.WriteString(", ")
			}
			fmt.Fprintf(&names, "%q", h.name)
		}
		p.WriteString("}")
		provider = p.String()
		policy = fmt.Sprintf("\n  distribution_policy {\n    hosts = [%s]\n  }\n", names.String())
	}
	doc := strings.Replace(tfHeader, `provider "virt" {}`, provider, 1) + fmt.Sprintf(`
resource "virt_stateful_group" "bench" {
  name             = %q
  pool             = %q
  target_size      = %d
  running          = false
  shutdown_timeout = "0s"
%s
  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = 64
    description = %q
    metadata    = { tfbench = "m1" }

    boot_disk {
      size_mib = 16
    }
  }
}
`, group, c.o.pool, n, policy, desc)
	return os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(doc), 0o644)
}

// checkHostMembers checks that the group has its m members over the hosts, all shut off, each
// with the description desc, and returns how many each host has.
func checkHostMembers(hosts []benchHost, group string, m int, desc string) ([]int, error) {
	per := make([]int, len(hosts))
	errs := make([]error, len(hosts))
	var wg sync.WaitGroup
	for i, h := range hosts {
		wg.Add(1)
		go func() {
			defer wg.Done()
			per[i], errs[i] = checkHost(h, group, desc)
		}()
	}
	wg.Wait()
	total := 0
	for i, err := range errs {
		if err != nil {
			return nil, fmt.Errorf("%s: %w", hosts[i].name, err)
		}
		total += per[i]
	}
	if total != m {
		return nil, fmt.Errorf("found %d members over the hosts (%v), want %d", total, per, m)
	}
	return per, nil
}

// checkHost counts the group's members on one host, and checks that each is shut off and has the
// description desc.
func checkHost(h benchHost, group, desc string) (int, error) {
	l := h.b.Raw()
	doms, _, err := l.ConnectListAllDomains(1, 0)
	if err != nil {
		return 0, err
	}
	var mine []golibvirt.Domain
	for _, d := range doms {
		if strings.HasPrefix(d.Name, group+"-") {
			if d.ID > 0 {
				return 0, fmt.Errorf("%s is running", d.Name)
			}
			mine = append(mine, d)
		}
	}
	return len(mine), parallel(len(mine), func(i int) error {
		doc, err := l.DomainGetXMLDesc(mine[i-1], 0)
		if err != nil {
			return err
		}
		if !strings.Contains(doc, "<description>"+desc+"</description>") {
			return fmt.Errorf("%s does not have the description %q", mine[i-1].Name, desc)
		}
		return nil
	})
}

// daemonsRSS sums the VmRSS of the bench's n session daemons that run (tools/bench-hosts.sh:
// user tfbench-hNN, pid file /run/tfbench-hNN/libvirt/libvirtd.pid).
func daemonsRSS(n int) (int64, int) {
	var total int64
	count := 0
	for i := 1; i <= n; i++ {
		b, err := os.ReadFile(fmt.Sprintf("/run/tfbench-h%02d/libvirt/libvirtd.pid", i))
		if err != nil {
			continue
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
		if err != nil {
			continue
		}
		if kib := statusKiB(pid, "VmRSS:"); kib > 0 {
			total += kib
			count++
		}
	}
	return total, count
}

func statusKiB(pid int, field string) int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if fs := strings.Fields(s.Text()); len(fs) >= 2 && fs[0] == field {
			v, _ := strconv.ParseInt(fs[1], 10, 64)
			return v
		}
	}
	return 0
}

// hostsFloor is the floor's times over the hosts.
type hostsFloor struct{ t map[string]time.Duration }

// runHostsFloor does the work of the many-hosts cycle with bare go-libvirt calls on the bench's
// one connection per host, at the provider's concurrency: the provider reads a group's hosts one
// after another (reconcile's observeOnce; each host's member definitions 8 at a time, the
// backend's readConcurrency), and runs an apply's member operations reconcile.DefaultWorkers at a
// time over the whole group, whatever host each is on (waveRun.phase). So: create, description
// change and destroy run DefaultWorkers member operations at once over all the hosts; the read
// lists and reads each host in turn (and, for comparison, all hosts at once); each host's listing
// of the change and the destroy is in turn too. Members are placed as the provider places them:
// member i on host (i-1) mod N.
func runHostsFloor(hosts []benchHost, pool string, m, reps int) (hostsFloor, error) {
	f := hostsFloor{t: map[string]time.Duration{}}
	n := len(hosts)
	pools := make([]golibvirt.StoragePool, n)
	for i, h := range hosts {
		p, err := h.b.Raw().StoragePoolLookupByName(pool)
		if err != nil {
			return f, fmt.Errorf("%s: %w", h.name, err)
		}
		pools[i] = p
	}
	hostOf := func(i int) int { return (i - 1) % n }
	if err := timed(f.t, "create", func() error {
		return parallel(m, func(i int) error {
			if interrupted.Load() {
				return errInterrupted
			}
			k := hostOf(i)
			l := hosts[k].b.Raw()
			if _, err := l.StorageVolCreateXML(pools[k], volXML(floorName(i)+"-boot.qcow2", 16), 0); err != nil {
				return err
			}
			_, err := l.DomainDefineXMLFlags(floorDomXML(floorName(i), pool, "tfbench floor v1"), 0)
			return err
		})
	}); err != nil {
		return f, fmt.Errorf("create: %w", err)
	}
	// listAll lists each host's floor domains, the hosts one after another; work runs per member.
	type hostDom struct {
		k int
		d golibvirt.Domain
	}
	listAll := func() ([]hostDom, error) {
		var out []hostDom
		for k, h := range hosts {
			mine, err := floorDomains(h.b.Raw())
			if err != nil {
				return nil, err
			}
			for _, d := range mine {
				out = append(out, hostDom{k, d})
			}
		}
		if len(out) != m {
			return nil, fmt.Errorf("listed %d floor domains over the hosts, want %d", len(out), m)
		}
		return out, nil
	}
	readHost := func(h benchHost) error {
		l := h.b.Raw()
		mine, err := floorDomains(l)
		if err != nil {
			return err
		}
		return parallelN(len(mine), 8, func(i int) error {
			_, err := l.DomainGetXMLDesc(mine[i-1], 0)
			return err
		})
	}
	var serial, par []time.Duration
	for rep := 0; rep < reps && !interrupted.Load(); rep++ {
		t0 := time.Now()
		for _, h := range hosts {
			if err := readHost(h); err != nil {
				return f, fmt.Errorf("read %s: %w", h.name, err)
			}
		}
		serial = append(serial, time.Since(t0))
		t0 = time.Now()
		if err := parallelN(n, n, func(k int) error { return readHost(hosts[k-1]) }); err != nil {
			return f, fmt.Errorf("read: %w", err)
		}
		par = append(par, time.Since(t0))
	}
	f.t["read"], f.t["read-parallel"] = medianOf(serial), medianOf(par)
	if err := timed(f.t, "change", func() error {
		all, err := listAll()
		if err != nil {
			return err
		}
		return parallel(len(all), func(i int) error {
			x := all[i-1]
			return hosts[x.k].b.Raw().DomainSetMetadata(x.d, int32(golibvirt.DomainMetadataDescription), golibvirt.OptString{"tfbench floor v2"},
				nil, nil, golibvirt.DomainAffectConfig)
		})
	}); err != nil {
		return f, fmt.Errorf("description change: %w", err)
	}
	if err := timed(f.t, "destroy", func() error {
		all, err := listAll()
		if err != nil {
			return err
		}
		vols := make([]map[string]golibvirt.StorageVol, n)
		for k, h := range hosts {
			vs, _, err := h.b.Raw().StoragePoolListAllVolumes(pools[k], 1, 0)
			if err != nil {
				return err
			}
			vols[k] = map[string]golibvirt.StorageVol{}
			for _, v := range vs {
				vols[k][v.Name] = v
			}
		}
		return parallel(len(all), func(i int) error {
			x := all[i-1]
			l := hosts[x.k].b.Raw()
			if err := l.DomainUndefineFlags(x.d, 0); err != nil {
				return err
			}
			v, ok := vols[x.k][x.d.Name+"-boot.qcow2"]
			if !ok {
				return fmt.Errorf("volume %s-boot.qcow2 not listed on %s", x.d.Name, hosts[x.k].name)
			}
			return l.StorageVolDelete(v, 0)
		})
	}); err != nil {
		return f, fmt.Errorf("destroy: %w", err)
	}
	logf("hosts floor: create %s, read %s (hosts in parallel %s), description change %s, destroy %s",
		secs(f.t["create"]), secs(f.t["read"]), secs(f.t["read-parallel"]), secs(f.t["change"]), secs(f.t["destroy"]))
	return f, nil
}

func maxOf(ds []time.Duration) time.Duration {
	var m time.Duration
	for _, d := range ds {
		m = max(m, d)
	}
	return m
}

func sumOf(ds []time.Duration) time.Duration {
	var s time.Duration
	for _, d := range ds {
		s += d
	}
	return s
}

// loadAvg is the 1, 5 and 15 minute load averages.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if fs := strings.Fields(string(b)); err == nil && len(fs) >= 3 {
		return strings.Join(fs[:3], " ")
	}
	return "?"
}

func ms3(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

func (c *cliBench) hostsReport(f fixedCost, r hostsResult) string {
	var b strings.Builder
	host, _ := os.Hostname()
	fmt.Fprintf(&b, "## %d stopped members over %d hosts through the terraform CLI vs the go-libvirt floor\n\n", r.size, r.hosts)
	fmt.Fprintf(&b, "%s, %s, %d CPUs, %s, load average %s at the start, %s at the end; %s; provider %s (make build); pool %s. "+
		"One `virt_stateful_group` of %d members stopped (qemu, 1 vCPU, 64 MiB, one 16 MiB boot volume), `distribution_policy` over %d libvirt "+
		"session daemons on this machine (tools/bench-hosts.sh: users tfbench-h01.., root reaching each by its socket), the group record on the first. "+
		"Plans are the median of %d. The floor is the same libvirt work with bare go-libvirt calls on one connection per host, at the provider's "+
		"concurrency: member operations %d at a time over the whole group, whatever their host; reads host after host (each host's definitions 8 at a time), "+
		"as the provider reads them. `one host`: the same group on the system daemon alone, in the same run.\n\n",
		time.Now().Format("2006-01-02 15:04"), host, runtime.NumCPU(), memTotal(), r.loadStart, loadAvg(),
		f.version, c.version, c.o.pool, r.size, r.hosts, c.o.planReps, reconcile.DefaultWorkers)
	fmt.Fprintf(&b, "terraform's fixed cost, `terraform plan` with no resources: %s with an empty configuration, %s with the provider configured.\n\n",
		secs(f.empty), secs(f.providerOnly))
	b.WriteString("| work | provider via CLI | floor | ratio | note |\n| --- | ---: | ---: | ---: | --- |\n")
	var plan, onePlan, empty, oneEmptyPlan time.Duration
	for _, row := range r.rows {
		floor, ratio := "—", "—"
		if row.floor > 0 {
			floor, ratio = secs(row.floor), fmt.Sprintf("%.2fx", float64(row.cli)/float64(row.floor))
		}
		switch {
		case row.what == "no-op plan":
			plan = row.cli
			floor += " (read)"
		case row.what == "no-op plan, one host":
			onePlan = row.cli
		case strings.HasPrefix(row.what, "no-op plan, 0 members, over"):
			empty = row.cli
		case row.what == "no-op plan, 0 members, one host":
			oneEmptyPlan = row.cli
		}
		if row.what == "no-op plan -refresh=false" {
			ratio = fmt.Sprintf("%.2fx terraform's", float64(row.cli)/float64(f.providerOnly))
		}
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s |\n", row.what, secs(row.cli), floor, ratio, oneLine(row.note))
	}
	if plan > 0 && onePlan > 0 {
		fmt.Fprintf(&b, "| no-op plan, %d hosts / one host | | | %.2fx | the issue's goal: ≤ 1.5x |\n", r.hosts, float64(plan)/float64(onePlan))
	}
	if empty > 0 && oneEmptyPlan > 0 && r.hosts > 1 {
		fmt.Fprintf(&b, "| a host's cost in a plan | %s | | | (0 members over %d hosts − 0 on one) / %d |\n",
			ms3((empty-oneEmptyPlan)/time.Duration(r.hosts-1)), r.hosts, r.hosts-1)
	}
	if len(r.dials) > 0 {
		fmt.Fprintf(&b, "| dial + open one host | %s | | | median of %d hosts, max %s, %s for all in turn (libvirt.ConnectContext) |\n",
			ms3(medianOf(r.dials)), len(r.dials), ms3(maxOf(r.dials)), ms3(sumOf(r.dials)))
	}
	if len(r.perHost) > 0 {
		lo, hi := r.perHost[0], r.perHost[0]
		for _, k := range r.perHost {
			lo, hi = min(lo, k), max(hi, k)
		}
		per := fmt.Sprintf("every one of the %d hosts", len(r.perHost))
		if lo != hi {
			var ks []string
			for _, k := range r.perHost {
				ks = append(ks, strconv.Itoa(k))
			}
			per = "by host: " + strings.Join(ks, " ")
		}
		fmt.Fprintf(&b, "| placement | %d to %d members a host | | | %s |\n", lo, hi, per)
	}
	if r.rssKiB > 0 {
		one := ""
		if r.oneRSSKiB > 0 {
			one = fmt.Sprintf("%.1f MB on one host", float64(r.oneRSSKiB)/1024)
		}
		fmt.Fprintf(&b, "| provider peak RSS, no-op plan | %.1f MB | | | %s |\n", float64(r.rssKiB)/1024, one)
	}
	if r.daemons > 0 {
		fmt.Fprintf(&b, "| session daemons' RSS with the members | %.0f MB | | | %d daemons, %.1f MB each |\n",
			float64(r.daemonsKiB)/1024, r.daemons, float64(r.daemonsKiB)/1024/float64(r.daemons))
	}
	if r.upTime > 0 {
		fmt.Fprintf(&b, "| tools/bench-hosts.sh up %d | %s | | | setup, untimed: users made, daemons started, pools, QEMU capabilities probed once per user and cached |\n", r.hosts, secs(r.upTime))
	}
	if r.err != nil {
		fmt.Fprintf(&b, "| **FAILED** | | | | %s |\n", oneLine(r.err.Error()))
	}
	fmt.Fprintf(&b, "\nWhole run: %s.\n", time.Since(c.started).Round(time.Second))
	return b.String()
}
