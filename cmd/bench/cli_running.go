// This file holds the CLI bench's running case: a group of N running members booting the tiny
// guest, created, changed live and destroyed through the terraform CLI, against the bare
// go-libvirt calls for the same work in the same run.

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// Everything the running case makes is named tfbench-run-…: the image volume, the group's
// members (tfbench-run-cli-<i>), the floor's domains (tfbench-run-floor-<i>) and the group with no
// members that measures the fixed cost of an apply (tfbench-run-fixed).
const (
	runPrefix      = benchPrefix + "run-"
	runGroup       = runPrefix + "cli"
	runFloorPrefix = runPrefix + "floor-"
	runFixedGroup  = runPrefix + "fixed"
	runImageVolume = runPrefix + "image.qcow2"
	// runMemoryMiB is the members' memory: what the acceptance tests give the tiny guest.
	runMemoryMiB = 128
	// runPollInterval is how often the floor reads a domain's state while it waits for it to stop:
	// the provider's (internal/backend/libvirt.stopPollInterval).
	runPollInterval = 150 * time.Millisecond
)

func runFloorName(i int) string { return fmt.Sprintf("%s%d", runFloorPrefix, i) }

// runningResult is the running case's rows, the fixed costs of an apply each hot change is judged
// with, and the load averages it ran under.
type runningResult struct {
	n        int
	rows     []cliRow
	fixed    map[string]fixedApply // by the hot change's op: measured just before it
	shutdown time.Duration
	loads    []string // the 1, 5 and 15 minute load averages at each step, as /proc/loadavg says
	// others is how many domains not the bench's were on the host at the CLI's create: a group
	// without a record reads them all (engine.GroupState.Candidates).
	others int
	err    error
}

// fixedApply is the fixed cost of an apply that changes one resource, measured under the load of
// the group's running members: tf, a terraform_data's input with the provider configured
// (Terraform prunes the unused provider: its own apply alone); group, a group with no members'
// description (every plugin start and walk of a group apply, one group record read and written).
type fixedApply struct{ tf, group time.Duration }

func (r *runningResult) load(when string) {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return
	}
	f := strings.Fields(string(b))
	if len(f) >= 3 {
		r.loads = append(r.loads, fmt.Sprintf("%s %s", strings.Join(f[:3], " "), when))
	}
}

// runningCase runs the running case: the image into the pool, the fixed costs, the CLI cycle,
// then the floor (which defines its domains as the provider defined its member 1).
func (c *cliBench) runningCase() runningResult {
	r := runningResult{n: c.o.running, shutdown: c.o.runShutdown, fixed: map[string]fixedApply{}}
	fail := func(err error) runningResult {
		r.err = err
		logf("running N=%d: %v", r.n, err)
		c.sweep(fmt.Sprintf("after the failed running N=%d case", r.n))
		return r
	}
	image, capBytes, err := c.runImage()
	if err != nil {
		return fail(fmt.Errorf("tiny guest image: %w", err))
	}
	fx, err := c.newFixed(image)
	if err != nil {
		return fail(fmt.Errorf("fixed cost of an apply: %w", err))
	}
	domXML, err := c.runCLICycle(&r, image, fx)
	if err == nil {
		err = fx.remove()
	}
	if err != nil {
		return fail(err)
	}
	if interrupted.Load() {
		return r
	}
	logf("running N=%d: the go-libvirt floor", r.n)
	r.load("at the floor's create")
	floor, err := runRunningFloor(c.b.Raw(), c.o.pool, r.n, image, capBytes, domXML, c.o.runShutdown)
	if err != nil {
		return fail(fmt.Errorf("floor: %w", err))
	}
	r.load("at the end")
	for i := range r.rows {
		r.rows[i].floor = floor[r.rows[i].op]
		if r.rows[i].op == runOpDestroy && floor[runPowerOffMean] > 0 {
			r.rows[i].note += fmt.Sprintf("; the floor's power-offs (DomainDestroy) took %s each on average, %d at a time", secs(floor[runPowerOffMean]), reconcile.DefaultWorkers)
		}
	}
	logf("running N=%d floor: create %s, description change %s, metadata change %s, destroy %s", r.n,
		secs(floor[runOpCreate]), secs(floor[runOpChange]), secs(floor[runOpMetadata]), secs(floor[runOpDestroy]))
	return r
}

const (
	runOpCreate   = "create (apply)"
	runOpChange   = "description change (apply)"
	runOpMetadata = "metadata change (apply)"
	runOpDestroy  = "destroy"
)

// runImage copies the tiny guest (tools/tiny-guest.sh prints its cached path, building it when
// needed) into the pool as tfbench-run-image.qcow2, as the acceptance tests do, and returns the
// volume's path and virtual size.
func (c *cliBench) runImage() (string, uint64, error) {
	cmd := exec.Command("bash", filepath.Join(c.o.repo, "tools", "tiny-guest.sh"))
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", 0, fmt.Errorf("tools/tiny-guest.sh: %w", err)
	}
	src := strings.TrimSpace(string(out))
	l := c.b.Raw()
	p, err := l.StoragePoolLookupByName(c.o.pool)
	if err != nil {
		return "", 0, err
	}
	doc, err := l.StoragePoolGetXMLDesc(p, 0)
	if err != nil {
		return "", 0, err
	}
	var px libvirtxml.StoragePool
	if err := px.Unmarshal(doc); err != nil || px.Target == nil || px.Target.Path == "" {
		return "", 0, fmt.Errorf("pool %s has no target path (a directory pool is needed)", c.o.pool)
	}
	dst := filepath.Join(px.Target.Path, runImageVolume)
	if err := copyFile(src, dst); err != nil {
		return "", 0, err
	}
	if err := l.StoragePoolRefresh(p, 0); err != nil {
		return "", 0, err
	}
	v, err := l.StorageVolLookupByName(p, runImageVolume)
	if err != nil {
		return "", 0, err
	}
	_, capBytes, _, err := l.StorageVolGetInfo(v)
	if err != nil {
		return "", 0, err
	}
	return dst, capBytes, nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// writeRunGroup writes the running group's configuration: n members of the tiny guest, running,
// with the description and the metadata key tfbench given.
func (c *cliBench) writeRunGroup(w *tfDir, group string, n int, image, desc, meta string) error {
	doc := tfHeader + fmt.Sprintf(`
resource "virt_stateful_group" "bench" {
  name             = %q
  pool             = %q
  target_size      = %d
  running          = true
  shutdown_timeout = %q

  template {
    domain_type = "qemu"
    vcpu        = 1
    memory_mib  = %d
    description = %q
    metadata    = { tfbench = %q }

    boot_disk {
      source_image = %q
    }
  }
}
`, group, c.o.pool, n, c.o.runShutdown.String(), runMemoryMiB, desc, meta, image)
	return os.WriteFile(filepath.Join(w.dir, "main.tf"), []byte(doc), 0o644)
}

// fixedDirs are the two configurations whose applies are the fixed cost of an apply (fixedApply).
type fixedDirs struct {
	c         *cliBench
	tf, group *tfDir
	image     string
	version   int
}

func (f *fixedDirs) write() error {
	doc := tfHeader + fmt.Sprintf("\nresource \"terraform_data\" \"fixed\" {\n  input = \"v%d\"\n}\n", f.version)
	if err := os.WriteFile(filepath.Join(f.tf.dir, "main.tf"), []byte(doc), 0o644); err != nil {
		return err
	}
	return f.c.writeRunGroup(f.group, runFixedGroup, 0, f.image, fmt.Sprintf("tfbench v%d", f.version), "m1")
}

// newFixed creates the terraform_data and the group with no members, untimed.
func (c *cliBench) newFixed(image string) (*fixedDirs, error) {
	f := &fixedDirs{c: c, image: image}
	var err error
	if f.tf, err = c.newDir("fixed-terraform-data"); err != nil {
		return nil, err
	}
	if f.group, err = c.newDir("fixed-empty-group"); err != nil {
		return nil, err
	}
	if err := f.write(); err != nil {
		return nil, err
	}
	for _, w := range []*tfDir{f.tf, f.group} {
		if _, err := c.step(w, "running:", "fixed-cost resource create", "create", false, 0, applyArgs); err != nil {
			return nil, err
		}
	}
	return f, nil
}

// measure changes both fixed-cost resources plan-reps times, each apply timed, and returns the
// medians.
func (f *fixedDirs) measure() (fixedApply, error) {
	var tf, group []time.Duration
	for rep := 0; rep < f.c.o.planReps; rep++ {
		f.version++
		if err := f.write(); err != nil {
			return fixedApply{}, err
		}
		for _, m := range []struct {
			w  *tfDir
			to *[]time.Duration
		}{{f.tf, &tf}, {f.group, &group}} {
			res, err := f.c.step(m.w, "running:", "fixed-cost apply", "apply", false, 0, applyArgs)
			if err != nil {
				return fixedApply{}, err
			}
			*m.to = append(*m.to, res.dur)
		}
	}
	fa := fixedApply{tf: medianOf(tf), group: medianOf(group)}
	logf("running: fixed cost of an apply: %s (terraform_data), %s (group with no members)", secs(fa.tf), secs(fa.group))
	return fa, nil
}

// remove destroys both fixed-cost resources.
func (f *fixedDirs) remove() error {
	for _, w := range []*tfDir{f.tf, f.group} {
		if _, err := f.c.step(w, "running:", "fixed-cost resource destroy", "destroy", false, 0, destroyArgs); err != nil {
			return err
		}
	}
	return f.c.destroyed(runFixedGroup)
}

// runCLICycle creates the running group, changes its description then its metadata (each must
// restart no member: domain ids unchanged) and destroys it, through the CLI. It returns member
// 1's definition as the provider wrote it, for the floor.
func (c *cliBench) runCLICycle(r *runningResult, image string, fx *fixedDirs) (string, error) {
	n := r.n
	w, err := c.newDir(fmt.Sprintf("running-n%d", n))
	if err != nil {
		return "", err
	}
	who := fmt.Sprintf("running N=%d:", n)
	if err := c.writeRunGroup(w, runGroup, n, image, "tfbench v1", "m1"); err != nil {
		return "", err
	}
	r.load("at the CLI's create")
	if all, _, err := c.b.Raw().ConnectListAllDomains(1, 0); err == nil {
		for _, d := range all {
			if !strings.HasPrefix(d.Name, benchPrefix) {
				r.others++
			}
		}
	}
	res, err := c.step(w, who, runOpCreate, "create", false, 0, applyArgs)
	if err != nil {
		return "", err
	}
	r.rows = append(r.rows, cliRow{op: runOpCreate, cli: res.dur, outBytes: res.outBytes})
	ids, err := c.runningIDs(runGroup, n, "tfbench v1", "m1")
	if err != nil {
		return "", fmt.Errorf("after create: %w", err)
	}
	l := c.b.Raw()
	first, err := l.DomainLookupByName(runGroup + "-1")
	if err != nil {
		return "", err
	}
	domXML, err := l.DomainGetXMLDesc(first, golibvirt.DomainXMLInactive)
	if err != nil {
		return "", err
	}
	for _, ch := range []struct{ op, label, desc, meta string }{
		{runOpChange, "change", "tfbench v2", "m1"},
		{runOpMetadata, "metadata", "tfbench v2", "m2"},
	} {
		// The fixed cost under the same load as the change: the members are booting or running.
		fa, err := fx.measure()
		if err != nil {
			return "", err
		}
		r.fixed[ch.op] = fa
		if err := c.writeRunGroup(w, runGroup, n, image, ch.desc, ch.meta); err != nil {
			return "", err
		}
		res, err := c.step(w, who, ch.op, ch.label, false, 0, applyArgs)
		if err != nil {
			return "", err
		}
		after, err := c.runningIDs(runGroup, n, ch.desc, ch.meta)
		if err != nil {
			return "", fmt.Errorf("after the %s: %w", ch.op, err)
		}
		for name, id := range ids {
			if after[name] != id {
				return "", fmt.Errorf("the %s restarted %s (domain id %d, then %d)", ch.op, name, id, after[name])
			}
		}
		r.rows = append(r.rows, cliRow{op: ch.op, cli: res.dur, outBytes: res.outBytes, note: "no member restarted (domain ids unchanged)"})
	}
	r.load("at the CLI's destroy")
	res, err = c.step(w, who, runOpDestroy, "destroy", false, 0, destroyArgs)
	if err != nil {
		return "", err
	}
	note := fmt.Sprintf("shutdown_timeout %s; the guests ignore the ACPI power button", c.o.runShutdown)
	if res.dur < c.o.runShutdown {
		// Faster than the timeout: some guest acted on the request, and the row does not measure
		// what it is meant to.
		note = fmt.Sprintf("shutdown_timeout %s; **shorter than the timeout: the guests did not all ignore ACPI**", c.o.runShutdown)
	}
	r.rows = append(r.rows, cliRow{op: runOpDestroy, cli: res.dur, outBytes: res.outBytes, note: note})
	return domXML, c.destroyed(runGroup)
}

// runningIDs returns the group's members by name with their domain ids, checking that there are n,
// all running with the description desc and the metadata tfbench = meta in their record.
func (c *cliBench) runningIDs(group string, n int, desc, meta string) (map[string]int32, error) {
	doms, err := c.b.ListDomains(context.Background(), group+"-")
	if err != nil {
		return nil, err
	}
	ids := map[string]int32{}
	for _, d := range doms {
		if d.ID <= 0 || d.Description != desc {
			return nil, fmt.Errorf("member %s: id %d, description %q; want it running with %q", d.Name, d.ID, d.Description, desc)
		}
		if d.Record == nil || d.Record.Instance.Current.Metadata["tfbench"] != meta {
			return nil, fmt.Errorf("member %s's record does not have the metadata tfbench = %q", d.Name, meta)
		}
		ids[d.Name] = d.ID
	}
	if len(ids) != n {
		return nil, fmt.Errorf("found %d members, want %d", len(ids), n)
	}
	return ids, nil
}

// floorRunXML is the provider's definition of its member 1 (inactive), made the floor's domain
// i: its name, no UUID, its own boot volume, the floor's description and metadata element in
// place of the member's record. Every other element (devices, features, CPU) is the provider's,
// so that the floor starts the same QEMU.
func floorRunXML(provider string, i int, pool, desc string) (string, error) {
	var d libvirtxml.Domain
	if err := d.Unmarshal(provider); err != nil {
		return "", err
	}
	name := runFloorName(i)
	d.Name, d.UUID, d.Description = name, "", desc
	d.Metadata = &libvirtxml.DomainMetadata{XML: `<b:m xmlns:b="` + floorMetadataNS + `">tfbench</b:m>`}
	if d.Devices == nil {
		return "", errors.New("the provider's member has no devices")
	}
	boot := 0
	for k := range d.Devices.Disks {
		s := d.Devices.Disks[k].Source
		if s != nil && s.Volume != nil && s.Volume.Volume == runGroup+"-1-boot.qcow2" {
			s.Volume.Pool, s.Volume.Volume = pool, name+"-boot.qcow2"
			boot++
		}
	}
	if boot != 1 {
		return "", fmt.Errorf("the provider's member 1 has %d disks on %s-1-boot.qcow2, want 1", boot, runGroup)
	}
	return d.Marshal()
}

// overlayXML is a boot volume as the provider makes one from source_image: a qcow2 overlay of the
// image, of its virtual size, nothing allocated up front (internal/backend/libvirt EnsureVolume).
func overlayXML(name, image string, capBytes uint64) string {
	v := libvirtxml.StorageVolume{
		Name:         name,
		Capacity:     &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: capBytes},
		Allocation:   &libvirtxml.StorageVolumeSize{Unit: "bytes", Value: 0},
		Target:       &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}},
		BackingStore: &libvirtxml.StorageVolumeBackingStore{Path: image, Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}},
	}
	s, _ := v.Marshal()
	return s
}

// runFloorDomains lists every domain in one call and keeps the running floor's.
func runFloorDomains(l *golibvirt.Libvirt) ([]golibvirt.Domain, error) {
	return domainsNamed(l, runFloorPrefix)
}

// runRunningFloor times, for n running members at the reconciler's concurrency:
//   - create: per member an overlay volume of the image, a define of the provider's definition
//     and a start. The start returns once QEMU runs the guest, which is what the provider's create
//     waits for without a health check or min_ready (engine.Readiness.Waits).
//   - description change: one list, one description write per member, live and in the definition;
//   - metadata change: one list, one metadata element write per member, live and in the definition;
//   - destroy: one list of domains and one of volumes, an ACPI power button press per member (all
//     of them first, as the provider's early tasks), then per member: its state read every 150 ms
//     until it is shut off or shutdown after its press has passed, a power-off, an undefine
//     and the volume's delete.
func runRunningFloor(l *golibvirt.Libvirt, pool string, n int, image string, capBytes uint64, providerXML string, shutdown time.Duration) (map[string]time.Duration, error) {
	p, err := l.StoragePoolLookupByName(pool)
	if err != nil {
		return nil, err
	}
	docs := make([]string, n+1)
	for i := 1; i <= n; i++ {
		if docs[i], err = floorRunXML(providerXML, i, pool, "tfbench floor v1"); err != nil {
			return nil, err
		}
	}
	t := timings{}
	if err := timed(t, runOpCreate, func() error {
		return parallel(n, func(i int) error {
			if interrupted.Load() {
				return errInterrupted
			}
			if _, err := l.StorageVolCreateXML(p, overlayXML(runFloorName(i)+"-boot.qcow2", image, capBytes), 0); err != nil {
				return err
			}
			d, err := l.DomainDefineXMLFlags(docs[i], 0)
			if err != nil {
				return err
			}
			return l.DomainCreate(d)
		})
	}); err != nil {
		return nil, fmt.Errorf("create: %w", err)
	}
	mine, err := runFloorDomains(l)
	if err != nil {
		return nil, err
	}
	running := 0
	for _, d := range mine {
		if d.ID > 0 {
			running++
		}
	}
	if len(mine) != n || running != n {
		return nil, fmt.Errorf("after create: %d floor domains, %d running; want %d running", len(mine), running, n)
	}
	live := golibvirt.DomainAffectLive | golibvirt.DomainAffectConfig
	if err := timed(t, runOpChange, func() error {
		mine, err := runFloorDomains(l)
		if err != nil {
			return err
		}
		return parallel(len(mine), func(i int) error {
			return l.DomainSetMetadata(mine[i-1], int32(golibvirt.DomainMetadataDescription), golibvirt.OptString{"tfbench floor v2"}, nil, nil, live)
		})
	}); err != nil {
		return nil, fmt.Errorf("description change: %w", err)
	}
	if err := timed(t, runOpMetadata, func() error {
		mine, err := runFloorDomains(l)
		if err != nil {
			return err
		}
		return parallel(len(mine), func(i int) error {
			return l.DomainSetMetadata(mine[i-1], int32(golibvirt.DomainMetadataElement), golibvirt.OptString{`<m>tfbench v2</m>`},
				golibvirt.OptString{"b"}, golibvirt.OptString{floorMetadataNS}, live)
		})
	}); err != nil {
		return nil, fmt.Errorf("metadata change: %w", err)
	}
	var offs powerOffs
	if err := timed(t, runOpDestroy, func() error { return runFloorDestroy(l, p, shutdown, &offs) }); err != nil {
		return nil, fmt.Errorf("destroy: %w", err)
	}
	if offs.n > 0 {
		// Not a time of its own: the mean power-off, which the fan-out's bound multiplies.
		t[runPowerOffMean] = offs.sum / time.Duration(offs.n)
	}
	left, err := runFloorDomains(l)
	if err != nil {
		return nil, err
	}
	if len(left) > 0 {
		return nil, fmt.Errorf("destroy left %d floor domains", len(left))
	}
	return t, nil
}

// runPowerOffMean is the key, in the floor's timings, of the mean time of its destroy's power-offs.
const runPowerOffMean = "power-off mean"

// powerOffs sums the floor destroy's power-offs (DomainDestroy calls) and their time.
type powerOffs struct {
	mu  sync.Mutex
	n   int
	sum time.Duration
}

// runFloorDestroy is the floor's destroy of running domains (see runRunningFloor).
func runFloorDestroy(l *golibvirt.Libvirt, p golibvirt.StoragePool, shutdown time.Duration, offs *powerOffs) error {
	mine, err := runFloorDomains(l)
	if err != nil {
		return err
	}
	vols, _, err := l.StoragePoolListAllVolumes(p, 1, 0)
	if err != nil {
		return err
	}
	byName := map[string]golibvirt.StorageVol{}
	for _, v := range vols {
		byName[v.Name] = v
	}
	var mu sync.Mutex
	pressed := map[string]time.Time{}
	if err := parallel(len(mine), func(i int) error {
		d := mine[i-1]
		if err := l.DomainShutdownFlags(d, golibvirt.DomainShutdownAcpiPowerBtn); err != nil {
			return err
		}
		mu.Lock()
		pressed[d.Name] = time.Now()
		mu.Unlock()
		return nil
	}); err != nil {
		return err
	}
	return parallel(len(mine), func(i int) error {
		d := mine[i-1]
		deadline := pressed[d.Name].Add(shutdown)
		for {
			state, _, err := l.DomainGetState(d, 0)
			if err != nil {
				return err
			}
			if golibvirt.DomainState(state) == golibvirt.DomainShutoff {
				break
			}
			left := time.Until(deadline)
			if left <= 0 {
				start := time.Now()
				if err := l.DomainDestroy(d); err != nil {
					return err
				}
				offs.mu.Lock()
				offs.n++
				offs.sum += time.Since(start)
				offs.mu.Unlock()
				break
			}
			time.Sleep(min(runPollInterval, left))
		}
		if err := l.DomainUndefineFlags(d, 0); err != nil {
			return err
		}
		v, ok := byName[d.Name+"-boot.qcow2"]
		if !ok {
			return fmt.Errorf("volume %s-boot.qcow2 not listed", d.Name)
		}
		return l.StorageVolDelete(v, 0)
	})
}

// report is the running case's section of the markdown report.
func (r runningResult) report() string {
	var b strings.Builder
	fmt.Fprintf(&b, "\n### %d running members (tiny guest)\n\n", r.n)
	fmt.Fprintf(&b, "One `virt_stateful_group`, `%s`, of %d members with `running = true`, qemu (TCG), 1 vCPU, %d MiB, the boot volume an overlay "+
		"of the tiny guest (`tools/tiny-guest.sh`, copied into the pool as `%s`), no network, no health check, `shutdown_timeout = \"%s\"`. "+
		"The provider's create waits for each member's start to return, nothing more (no health check, no min_ready), and so does the floor's. "+
		"The tiny guest's /init is a busybox script with no ACPI daemon (no acpid, no logind): a power button press reaches nothing that "+
		"shuts it down, so a destroy waits the whole shutdown_timeout, then powers the members off. "+
		"The floor, in the same run after the CLI's: per member an overlay volume, a define of the provider's own definition of its member 1 "+
		"(renamed, the floor's metadata in place of the member record) and a start; one list and one live description (or metadata element) "+
		"write per member; one list of domains and of volumes, every member's power button pressed, then per member its state read every "+
		"%s until the timeout after its press, a power-off, an undefine and a volume delete; all at the reconciler's concurrency (%d).\n\n",
		runGroup, r.n, runMemoryMiB, runImageVolume, r.shutdown, runPollInterval, reconcile.DefaultWorkers)
	b.WriteString("The fixed cost of an apply, measured just before each hot change while the members run (median of the plan runs): " +
		"a `terraform_data` input change with the provider configured (Terraform prunes the unused provider: Terraform's apply alone), " +
		"and the description change of a group with no members (every plugin start and walk of a group apply, one group record read and " +
		"written). A hot change's goal is 1.5x its floor plus the second.\n\n")
	if len(r.loads) > 0 {
		fmt.Fprintf(&b, "Load average (1, 5, 15 min): %s.\n\n", strings.Join(r.loads, "; "))
	}
	fmt.Fprintf(&b, "Domains on the host that are not the bench's, at the CLI's create: %d. A group with no record yet reads every "+
		"domain's definition, in the create's plan and again in its apply (`engine.GroupState.Candidates`); the floor reads none.\n\n", r.others)
	b.WriteString("| members | operation | provider via CLI | floor | ratio | goal | note |\n")
	b.WriteString("| ---: | --- | ---: | ---: | ---: | --- | --- |\n")
	for _, row := range r.rows {
		floor, ratio := "none", "—"
		if row.floor > 0 {
			floor, ratio = secs(row.floor), fmt.Sprintf("%.2fx", float64(row.cli)/float64(row.floor))
		}
		goal := ""
		switch row.op {
		case runOpCreate:
			if row.floor > 0 {
				goal = goalMet(row.cli <= row.floor*12/10, "≤ 1.2x")
			}
		case runOpChange, runOpMetadata:
			fa := r.fixed[row.op]
			if row.floor > 0 {
				bound := row.floor*3/2 + fa.group
				goal = goalMet(row.cli <= bound, fmt.Sprintf("≤ 1.5x floor + %s = %s", secs(fa.group), secs(bound)))
			}
			row.note = fmt.Sprintf("%s; fixed cost before it: %s (terraform_data), %s (group with no members)", row.note, secs(fa.tf), secs(fa.group))
		case runOpDestroy:
			bound := r.shutdown + 10*time.Second
			goal = goalMet(row.cli <= bound, fmt.Sprintf("≤ shutdown_timeout + 10 s = %s", secs(bound)))
		}
		fmt.Fprintf(&b, "| %d | %s | %s | %s | %s | %s | %s |\n", r.n, row.op, secs(row.cli), floor, ratio, goal, row.note)
	}
	if r.err != nil {
		fmt.Fprintf(&b, "| %d | **FAILED** | | | | | %s |\n", r.n, oneLine(r.err.Error()))
	}
	return b.String()
}

func goalMet(ok bool, goal string) string {
	if ok {
		return goal + ": met"
	}
	return goal + ": **not met**"
}
