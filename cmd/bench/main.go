// Command bench measures the provider against the raw go-libvirt floor on the local libvirtd:
// for a group of N instances it times create, a no-op refresh, a hot metadata update and destroy,
// once through the provider's reconciler (the code Terraform's apply runs) and once as the bare
// go-libvirt calls that do the same work with the same concurrency, in the same run, and prints
// each provider time as a ratio to its floor. Run it with `make bench`.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"sort"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

type scenario struct {
	n       int
	running bool
}

type timings map[string]time.Duration

var ops = []string{"create", "refresh", "hot-update", "destroy"}

func main() {
	pool := flag.String("pool", envOr("VIRT_TEST_POOL", "virt"), "storage pool")
	reps := flag.Int("reps", 3, "repetitions; the median is reported")
	cli := flag.Bool("cli", false, "the scenario through the terraform CLI (cli.go) instead of the reconciler")
	sizes := flag.String("sizes", "200,1000", "with -cli: sizes of the group of stopped members, comma-separated; empty for none (-running alone)")
	planReps := flag.Int("plan-reps", 3, "with -cli: runs of each plan and of the floor's read; the median is reported")
	calls := flag.Bool("calls", true, "with -cli: also count the libvirt calls of each command at the first size (untimed)")
	out := flag.String("out", "/tmp/virt-bench-cli.md", "with -cli: where the markdown table goes")
	repo := flag.String("repo", ".", "with -cli: the repository, where make build runs")
	timeout := flag.Duration("timeout", 30*time.Minute, "with -cli: limit of each terraform command")
	keep := flag.Bool("keep", false, "with -cli: keep the scratch directory (kept anyway on failure)")
	profile := flag.Bool("profile", false, "with -cli: profile every timed command's processes and break its time down (cli_profile.go); use with a -terraform that writes its own profile")
	tfBin := flag.String("terraform", "terraform", "with -cli: the terraform binary")
	hosts := flag.Int("hosts", 0, "with -cli: instead of -sizes, one group of -hosts-size members over this many session daemons (tools/bench-hosts.sh), and the same on the system host (cli_hosts.go)")
	hostsSize := flag.Int("hosts-size", 100, "with -cli -hosts: the group's members")
	running := flag.Int("running", 0, "with -cli: also a group of this many running members of the tiny guest, against its floor (cli_running.go); 0 for none")
	runShutdown := flag.Duration("running-shutdown-timeout", 15*time.Second, "with -cli -running: the running group's shutdown_timeout (its guests ignore ACPI, so its destroy waits this long)")
	flag.Parse()
	if *cli {
		terraformBin = *tfBin
		ns, err := parseSizes(*sizes)
		if err != nil {
			fail(err)
		}
		if len(ns) == 0 && *running <= 0 && *hosts <= 0 {
			fail(fmt.Errorf("nothing to run: -sizes is empty and -running is 0"))
		}
		if err := runCLI(cliOptions{sizes: ns, pool: *pool, repo: *repo, out: *out, planReps: max(*planReps, 1),
			calls: *calls, timeout: *timeout, keep: *keep, profile: *profile, hosts: *hosts, hostsSize: *hostsSize,
			running: max(*running, 0), runShutdown: *runShutdown}); err != nil {
			fail(err)
		}
		return
	}
	b, err := libvirt.Connect(envOr("LIBVIRT_DEFAULT_URI", libvirt.DefaultURI))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer b.Close()
	fmt.Printf("%-22s %-11s %12s %12s %7s\n", "scenario", "operation", "provider", "raw floor", "ratio")
	for _, sc := range []scenario{{20, false}, {10, true}} {
		var prov, raw []timings
		for r := 0; r < *reps; r++ {
			p, err := runProvider(b, *pool, sc)
			if err != nil {
				fail(err)
			}
			f, err := runRaw(b.Raw(), *pool, sc)
			if err != nil {
				fail(err)
			}
			prov, raw = append(prov, p), append(raw, f)
		}
		label := fmt.Sprintf("N=%d %s", sc.n, map[bool]string{true: "running", false: "stopped"}[sc.running])
		for _, op := range ops {
			pm, rm := median(prov, op), median(raw, op)
			fmt.Printf("%-22s %-11s %10.0fms %10.0fms %6.2fx\n", label, op, ms(pm), ms(rm), float64(pm)/float64(rm))
		}
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}

func envOr(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(ts []timings, op string) time.Duration {
	var ds []time.Duration
	for _, t := range ts {
		ds = append(ds, t[op])
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return ds[len(ds)/2]
}

func template(role string) engine.Template {
	return engine.Template{
		Shape:    engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64},
		BootDisk: engine.BootDisk{SizeMiB: 64},
		Disks:    []engine.Disk{{DeviceName: "data", SizeMiB: 16}},
		Metadata: map[string]string{"role": role},
	}
}

func timed(t timings, op string, fn func() error) error {
	start := time.Now()
	err := fn()
	t[op] = time.Since(start)
	return err
}

// runProvider times the provider's own code paths: the group record write and Apply for create
// and hot update, the record read and Observe for the refresh that Read does, Destroy for delete.
func runProvider(b *libvirt.Backend, pool string, sc scenario) (timings, error) {
	ctx := context.Background()
	r := reconcile.New(b)
	spec := engine.GroupState{
		Group: engine.Group{Name: "bench-prov", Base: "bench-prov", TargetSize: sc.n, Running: sc.running,
			Template: template("db"), Policy: engine.DefaultUpdatePolicy(), ShutdownTimeout: "0s"},
		Pool: pool,
	}
	store := func() error {
		_, err := r.Change(ctx, spec.Group.Name, pool, func(s *engine.GroupState, _ bool) error { *s = spec; return nil })
		if err != nil {
			return err
		}
		return r.Apply(ctx, spec)
	}
	t := timings{}
	if err := timed(t, "create", store); err != nil {
		return nil, err
	}
	if err := timed(t, "refresh", func() error {
		s, err := r.Load(ctx, spec.Group.Name)
		if err != nil {
			return err
		}
		o, err := r.Observe(ctx, s)
		if err == nil && len(o.Observed) != sc.n {
			err = fmt.Errorf("refresh found %d members, want %d", len(o.Observed), sc.n)
		}
		return err
	}); err != nil {
		return nil, err
	}
	spec.Group.Template = template("web")
	if err := timed(t, "hot-update", store); err != nil {
		return nil, err
	}
	if err := timed(t, "destroy", func() error { return r.Destroy(ctx, spec) }); err != nil {
		return nil, err
	}
	return t, nil
}

// parallel runs fn for 1..n with the reconciler's default worker count, so the floor gets the
// same concurrency as the provider.
func parallel(n int, fn func(i int) error) error {
	return parallelN(n, reconcile.DefaultWorkers, fn)
}

// parallelN runs fn for 1..n, workers at a time, and returns the first error.
func parallelN(n, workers int, fn func(i int) error) error {
	sem := make(chan struct{}, max(workers, 1))
	var wg sync.WaitGroup
	var mu sync.Mutex
	var first error
	for i := 1; i <= n; i++ {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(i); err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	return first
}

func volXML(name string, mib uint64) string {
	v := libvirtxml.StorageVolume{Name: name, Capacity: &libvirtxml.StorageVolumeSize{Unit: "MiB", Value: mib},
		Target: &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: "qcow2"}}}
	s, _ := v.Marshal()
	return s
}

func domXML(name, pool string) string {
	disk := func(vol, dev string) libvirtxml.DomainDisk {
		return libvirtxml.DomainDisk{Device: "disk", Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
			Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: pool, Volume: vol}},
			Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "scsi"}}
	}
	zero := uint(0)
	d := libvirtxml.Domain{Type: "qemu", Name: name,
		Memory: &libvirtxml.DomainMemory{Value: 64, Unit: "MiB"}, VCPU: &libvirtxml.DomainVCPU{Value: 1},
		OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{
			Controllers: []libvirtxml.DomainController{{Type: "scsi", Index: &zero, Model: "virtio-scsi"}},
			Disks:       []libvirtxml.DomainDisk{disk(name+"-boot.qcow2", "sda"), disk(name+"-data.qcow2", "sdb")},
			MemBalloon:  &libvirtxml.DomainMemBalloon{Model: "none"},
		}}
	s, _ := d.Marshal()
	return s
}

// runRaw does the same work with the fewest go-libvirt calls: two volume creates, a define and a
// start per instance; one list and one XML read per instance; one metadata write per instance;
// a destroy, an undefine and two volume deletes per instance.
func runRaw(l *golibvirt.Libvirt, pool string, sc scenario) (timings, error) {
	p, err := l.StoragePoolLookupByName(pool)
	if err != nil {
		return nil, err
	}
	name := func(i int) string { return fmt.Sprintf("bench-raw-%d", i) }
	t := timings{}
	if err := timed(t, "create", func() error {
		return parallel(sc.n, func(i int) error {
			for _, v := range []struct {
				n   string
				mib uint64
			}{{name(i) + "-boot.qcow2", 64}, {name(i) + "-data.qcow2", 16}} {
				if _, err := l.StorageVolCreateXML(p, volXML(v.n, v.mib), 0); err != nil {
					return err
				}
			}
			d, err := l.DomainDefineXMLFlags(domXML(name(i), pool), 0)
			if err != nil {
				return err
			}
			if sc.running {
				return l.DomainCreate(d)
			}
			return nil
		})
	}); err != nil {
		return nil, err
	}
	if err := timed(t, "refresh", func() error {
		doms, _, err := l.ConnectListAllDomains(1, 0)
		if err != nil {
			return err
		}
		var mine []golibvirt.Domain
		for _, d := range doms {
			if len(d.Name) > 10 && d.Name[:10] == "bench-raw-" {
				mine = append(mine, d)
			}
		}
		return parallel(len(mine), func(i int) error {
			_, err := l.DomainGetXMLDesc(mine[i-1], 0)
			return err
		})
	}); err != nil {
		return nil, err
	}
	if err := timed(t, "hot-update", func() error {
		return parallel(sc.n, func(i int) error {
			d, err := l.DomainLookupByName(name(i))
			if err != nil {
				return err
			}
			flags := golibvirt.DomainAffectConfig
			if sc.running {
				flags |= golibvirt.DomainAffectLive
			}
			return l.DomainSetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{"<m>web</m>"},
				golibvirt.OptString{"b"}, golibvirt.OptString{"https://example.invalid/bench"}, flags)
		})
	}); err != nil {
		return nil, err
	}
	if err := timed(t, "destroy", func() error {
		return parallel(sc.n, func(i int) error {
			d, err := l.DomainLookupByName(name(i))
			if err != nil {
				return err
			}
			if sc.running {
				if err := l.DomainDestroy(d); err != nil {
					return err
				}
			}
			if err := l.DomainUndefineFlags(d, 0); err != nil {
				return err
			}
			for _, v := range []string{name(i) + "-boot.qcow2", name(i) + "-data.qcow2"} {
				vol, err := l.StorageVolLookupByName(p, v)
				if err != nil {
					return err
				}
				if err := l.StorageVolDelete(vol, 0); err != nil {
					return err
				}
			}
			return nil
		})
	}); err != nil {
		return nil, err
	}
	return t, nil
}
