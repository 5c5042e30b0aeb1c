package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
)

// The floor of the CLI scenario: the same work as the group of N stopped members, done with the
// fewest go-libvirt calls and the reconciler's concurrency. Its domains are tfbench-raw-<i>, each
// with one 16 MiB boot volume.
const floorPrefix = benchPrefix + "raw-"

func floorName(i int) string { return fmt.Sprintf("%s%d", floorPrefix, i) }

// floorMetadataNS is the namespace of the floor domains' metadata element.
const floorMetadataNS = "https://example.invalid/bench"

func floorDomXML(name, pool, desc string) string {
	zero := uint(0)
	d := libvirtxml.Domain{Type: "qemu", Name: name, Description: desc,
		Metadata: &libvirtxml.DomainMetadata{XML: `<b:m xmlns:b="` + floorMetadataNS + `">tfbench</b:m>`},
		Memory:   &libvirtxml.DomainMemory{Value: 64, Unit: "MiB"}, VCPU: &libvirtxml.DomainVCPU{Value: 1},
		OS: &libvirtxml.DomainOS{Type: &libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"}},
		Devices: &libvirtxml.DomainDeviceList{
			Controllers: []libvirtxml.DomainController{{Type: "scsi", Index: &zero, Model: "virtio-scsi"}},
			Disks: []libvirtxml.DomainDisk{{Device: "disk", Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: "qcow2"},
				Source: &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: pool, Volume: name + "-boot.qcow2"}},
				Target: &libvirtxml.DomainDiskTarget{Dev: "sda", Bus: "scsi"}}},
			MemBalloon: &libvirtxml.DomainMemBalloon{Model: "none"},
		}}
	s, _ := d.Marshal()
	return s
}

// floorDomains lists every domain, stopped ones included, in one call and keeps those of the
// floor.
func floorDomains(l *golibvirt.Libvirt) ([]golibvirt.Domain, error) {
	return domainsNamed(l, floorPrefix)
}

// domainsNamed lists every domain, stopped ones included, in one call and keeps those whose names
// start with prefix.
func domainsNamed(l *golibvirt.Libvirt, prefix string) ([]golibvirt.Domain, error) {
	doms, _, err := l.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, err
	}
	var mine []golibvirt.Domain
	for _, d := range doms {
		if strings.HasPrefix(d.Name, prefix) {
			mine = append(mine, d)
		}
	}
	return mine, nil
}

// runCLIFloor times, for n members: create (a volume create and a define each), read (one list,
// one XML read each; the median of reps), description change (one list, one description write
// each), metadata change (one list, one metadata element write each) and destroy (one list of domains and one of volumes, an undefine and a volume delete
// each).
func runCLIFloor(l *golibvirt.Libvirt, pool string, n, reps int) (map[string]time.Duration, error) {
	p, err := l.StoragePoolLookupByName(pool)
	if err != nil {
		return nil, err
	}
	t := timings{}
	if err := timed(t, "create", func() error {
		return parallel(n, func(i int) error {
			if interrupted.Load() {
				return errInterrupted
			}
			if _, err := l.StorageVolCreateXML(p, volXML(floorName(i)+"-boot.qcow2", 16), 0); err != nil {
				return err
			}
			_, err := l.DomainDefineXMLFlags(floorDomXML(floorName(i), pool, "tfbench floor v1"), 0)
			return err
		})
	}); err != nil {
		return nil, fmt.Errorf("floor create: %w", err)
	}
	var reads []time.Duration
	for r := 0; r < reps && !interrupted.Load(); r++ {
		rt := timings{}
		if err := timed(rt, "read", func() error {
			mine, err := floorDomains(l)
			if err != nil {
				return err
			}
			if len(mine) != n {
				return fmt.Errorf("listed %d floor domains, want %d", len(mine), n)
			}
			return parallel(len(mine), func(i int) error {
				_, err := l.DomainGetXMLDesc(mine[i-1], 0)
				return err
			})
		}); err != nil {
			return nil, fmt.Errorf("floor read: %w", err)
		}
		reads = append(reads, rt["read"])
	}
	t["read"] = medianOf(reads)
	if err := timed(t, "change", func() error {
		mine, err := floorDomains(l)
		if err != nil {
			return err
		}
		return parallel(len(mine), func(i int) error {
			return l.DomainSetMetadata(mine[i-1], int32(golibvirt.DomainMetadataDescription), golibvirt.OptString{"tfbench floor v2"},
				nil, nil, golibvirt.DomainAffectConfig)
		})
	}); err != nil {
		return nil, fmt.Errorf("floor description change: %w", err)
	}
	if err := timed(t, "metadata", func() error {
		mine, err := floorDomains(l)
		if err != nil {
			return err
		}
		return parallel(len(mine), func(i int) error {
			return l.DomainSetMetadata(mine[i-1], int32(golibvirt.DomainMetadataElement), golibvirt.OptString{`<m>tfbench v2</m>`},
				golibvirt.OptString{"b"}, golibvirt.OptString{floorMetadataNS}, golibvirt.DomainAffectConfig)
		})
	}); err != nil {
		return nil, fmt.Errorf("floor metadata change: %w", err)
	}
	if err := timed(t, "destroy", func() error {
		mine, err := floorDomains(l)
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
		return parallel(len(mine), func(i int) error {
			d := mine[i-1]
			if err := l.DomainUndefineFlags(d, 0); err != nil {
				return err
			}
			v, ok := byName[d.Name+"-boot.qcow2"]
			if !ok {
				return fmt.Errorf("volume %s-boot.qcow2 not listed", d.Name)
			}
			return l.StorageVolDelete(v, 0)
		})
	}); err != nil {
		return nil, fmt.Errorf("floor destroy: %w", err)
	}
	return t, nil
}

func medianOf(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := append([]time.Duration{}, ds...)
	for i := range s {
		for j := i + 1; j < len(s); j++ {
			if s[j] < s[i] {
				s[i], s[j] = s[j], s[i]
			}
		}
	}
	return s[len(s)/2]
}

// sweepBench removes every domain, volume and group record whose name starts with tfbench-:
// what an interrupted run left before, everything this run made after. Domains and volumes go
// with bare calls, concurrently (a leftover group may have 1,000 members); records through the
// backend, as the acceptance tests' sweep does.
func sweepBench(b *libvirt.Backend, pool string) (string, error) {
	sweepMu.Lock()
	defer sweepMu.Unlock()
	l := b.Raw()
	doms, _, err := l.ConnectListAllDomains(1, 0)
	if err != nil {
		return "", fmt.Errorf("list domains: %w", err)
	}
	var mine []golibvirt.Domain
	for _, d := range doms {
		if strings.HasPrefix(d.Name, benchPrefix) {
			mine = append(mine, d)
		}
	}
	if err := parallel(len(mine), func(i int) error {
		d := mine[i-1]
		if active, err := l.DomainIsActive(d); err == nil && active == 1 {
			_ = l.DomainDestroy(d)
		}
		err := l.DomainUndefineFlags(d, golibvirt.DomainUndefineManagedSave|golibvirt.DomainUndefineNvram)
		if err != nil && !gone(err) {
			return fmt.Errorf("undefine %s: %w", d.Name, err)
		}
		return nil
	}); err != nil {
		return "", err
	}
	var vols []golibvirt.StorageVol
	if p, err := l.StoragePoolLookupByName(pool); err == nil {
		all, _, err := l.StoragePoolListAllVolumes(p, 1, 0)
		if err != nil {
			return "", fmt.Errorf("list volumes: %w", err)
		}
		for _, v := range all {
			if strings.HasPrefix(v.Name, benchPrefix) {
				vols = append(vols, v)
			}
		}
	}
	if err := parallel(len(vols), func(i int) error {
		if err := l.StorageVolDelete(vols[i-1], 0); err != nil && !gone(err) {
			return fmt.Errorf("delete volume %s: %w", vols[i-1].Name, err)
		}
		return nil
	}); err != nil {
		return "", err
	}
	groups, err := b.GroupRecordNames(benchPrefix)
	if err != nil {
		return "", fmt.Errorf("list group records: %w", err)
	}
	for _, g := range groups {
		if err := b.DeleteGroupRecord(context.Background(), pool, g); err != nil {
			return "", err
		}
	}
	if len(mine)+len(vols)+len(groups) == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d domains, %d volumes, %d group records (%s)", len(mine), len(vols), len(groups), strings.Join(groups, ", ")), nil
}

// gone tells a libvirt error that says the domain or volume no longer exists.
func gone(err error) bool {
	var lerr golibvirt.Error
	return errors.As(err, &lerr) && (lerr.Code == uint32(golibvirt.ErrNoDomain) || lerr.Code == uint32(golibvirt.ErrNoStorageVol))
}

// sweepMu makes one sweep at a time: an interrupt's and the main flow's.
var sweepMu sync.Mutex

// benchLeftovers counts what is left of the named group on the host.
func benchLeftovers(b *libvirt.Backend, pool, group string) (string, error) {
	l := b.Raw()
	doms, _, err := l.ConnectListAllDomains(1, 0)
	if err != nil {
		return "", err
	}
	nd := 0
	for _, d := range doms {
		if strings.HasPrefix(d.Name, group+"-") {
			nd++
		}
	}
	nv := 0
	if p, err := l.StoragePoolLookupByName(pool); err == nil {
		vols, _, err := l.StoragePoolListAllVolumes(p, 1, 0)
		if err != nil {
			return "", err
		}
		for _, v := range vols {
			if strings.HasPrefix(v.Name, group+"-") {
				nv++
			}
		}
	}
	recs, err := b.GroupRecordNames(group)
	if err != nil {
		return "", err
	}
	nr := 0
	for _, r := range recs {
		if r == group {
			nr++
		}
	}
	if nd+nv+nr == 0 {
		return "", nil
	}
	return fmt.Sprintf("%d domains, %d volumes, %d group records", nd, nv, nr), nil
}
