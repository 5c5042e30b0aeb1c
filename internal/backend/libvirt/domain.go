package libvirt

import (
	"context"
	"fmt"
	"strings"
	"sync"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// readConcurrency bounds the domains read at once by ListDomains.
const readConcurrency = 8

func statusOf(state int32) string {
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainRunning, golibvirt.DomainBlocked:
		return engine.StatusRunning
	case golibvirt.DomainPaused:
		return engine.StatusPaused
	case golibvirt.DomainShutdown, golibvirt.DomainShutoff:
		return engine.StatusStopped
	case golibvirt.DomainCrashed:
		return engine.StatusFailed
	case golibvirt.DomainPmsuspended:
		return engine.StatusSuspended
	}
	return engine.StatusFailed
}

// ListDomains lists all domains in one call, then reads the matching ones concurrently.
func (b *Backend) ListDomains(ctx context.Context, prefix string) ([]backend.Domain, error) {
	all, _, err := b.l.ConnectListAllDomains(1, 0)
	if err != nil {
		return nil, wrap("list domains", b.uri, err)
	}
	var matching []golibvirt.Domain
	for _, d := range all {
		if strings.HasPrefix(d.Name, prefix) {
			matching = append(matching, d)
		}
	}
	out := make([]*backend.Domain, len(matching))
	errs := make([]error, len(matching))
	sem := make(chan struct{}, readConcurrency)
	var wg sync.WaitGroup
	for i, d := range matching {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			out[i], errs[i] = b.readDomain(d)
		}()
	}
	wg.Wait()
	var doms []backend.Domain
	for i := range matching {
		switch {
		case errs[i] == nil:
			doms = append(doms, *out[i])
		case isNotFound(errs[i]):
			// The domain went away between the list and the read: it is simply not there.
		default:
			return nil, errs[i]
		}
	}
	tflog.SubsystemDebug(ctx, Subsystem, "listed domains", map[string]any{"prefix": prefix, "all": len(all), "matching": len(doms)})
	return doms, nil
}

func (b *Backend) readDomain(d golibvirt.Domain) (*backend.Domain, error) {
	doc, err := b.l.DomainGetXMLDesc(d, 0)
	if err != nil {
		return nil, wrap("read domain XML", d.Name, err)
	}
	state, _, err := b.l.DomainGetState(d, 0)
	if err != nil {
		return nil, wrap("read domain state", d.Name, err)
	}
	p, err := parseDomain(doc)
	if err != nil {
		return nil, wrap("parse domain XML", d.Name, err)
	}
	dom := &backend.Domain{
		Name:        d.Name,
		UUID:        formatUUID(d.UUID),
		ID:          d.ID,
		Status:      statusOf(state),
		Disks:       p.disks,
		Type:        p.dom.Type,
		Description: p.dom.Description,
		Record:      p.record,
	}
	if p.dom.VCPU != nil {
		dom.VCPU = int64(p.dom.VCPU.Value)
	}
	if m := p.dom.Memory; m != nil {
		dom.MemoryMiB = int64(memoryMiB(m.Value, m.Unit))
	}
	return dom, nil
}

// memoryMiB converts a libvirt memory amount to MiB; libvirt's default unit is KiB.
func memoryMiB(value uint, unit string) uint {
	switch strings.ToLower(unit) {
	case "b", "bytes":
		return value >> 20
	case "m", "mib":
		return value
	case "g", "gib":
		return value << 10
	default:
		return value >> 10
	}
}

func formatUUID(u golibvirt.UUID) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}

// DefineDomain defines (or redefines) a domain from the spec.
func (b *Backend) DefineDomain(ctx context.Context, spec backend.DomainSpec) error {
	doc, err := domainXML(spec)
	if err != nil {
		return fmt.Errorf("build domain XML for %s: %w", spec.Name, err)
	}
	if _, err := b.l.DomainDefineXMLFlags(doc, 0); err != nil {
		return wrap("define domain", spec.Name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "defined domain", map[string]any{"domain": spec.Name})
	return nil
}

func (b *Backend) lookup(name string) (golibvirt.Domain, error) {
	d, err := b.l.DomainLookupByName(name)
	return d, wrap("look up domain", name, err)
}

// StartDomain starts a defined domain; starting a running one is not an error.
func (b *Backend) StartDomain(ctx context.Context, name string) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	if err := b.l.DomainCreate(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		return wrap("start domain", name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "started domain", map[string]any{"domain": name})
	return nil
}

// StopDomain powers a domain off.
func (b *Backend) StopDomain(ctx context.Context, name string) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	if err := b.l.DomainDestroy(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
		return wrap("stop domain", name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "stopped domain", map[string]any{"domain": name})
	return nil
}

// UndefineDomain stops and undefines a domain. Its volumes are left alone.
func (b *Backend) UndefineDomain(ctx context.Context, name string) error {
	d, err := b.lookup(name)
	if isNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := b.l.DomainDestroy(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) && !isNotFoundLibvirt(err) {
		return wrap("stop domain", name, err)
	}
	flags := golibvirt.DomainUndefineManagedSave | golibvirt.DomainUndefineSnapshotsMetadata | golibvirt.DomainUndefineNvram | golibvirt.DomainUndefineCheckpointsMetadata
	if err := b.l.DomainUndefineFlags(d, flags); err != nil && !isNotFoundLibvirt(err) {
		return wrap("undefine domain", name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "undefined domain", map[string]any{"domain": name})
	return nil
}

// impact is the modification impact for a change that must reach both the persistent definition
// and, when the domain runs, the live domain.
func impact(d golibvirt.Domain) golibvirt.DomainModificationImpact {
	if d.ID > 0 {
		return golibvirt.DomainAffectLive | golibvirt.DomainAffectConfig
	}
	return golibvirt.DomainAffectConfig
}

// SetRecord writes the provider's metadata element and the description, live when running.
func (b *Backend) SetRecord(ctx context.Context, name, description string, rec backend.Record) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	doc, err := marshalRecord(rec, false)
	if err != nil {
		return fmt.Errorf("build metadata for %s: %w", name, err)
	}
	flags := impact(d)
	if err := b.l.DomainSetMetadata(d, int32(golibvirt.DomainMetadataElement), golibvirt.OptString{doc},
		golibvirt.OptString{metadataKey}, golibvirt.OptString{Namespace}, flags); err != nil {
		return wrap("set metadata of domain", name, err)
	}
	var desc golibvirt.OptString
	if description != "" {
		desc = golibvirt.OptString{description}
	}
	if err := b.l.DomainSetMetadata(d, int32(golibvirt.DomainMetadataDescription), desc, nil, nil, flags); err != nil {
		return wrap("set description of domain", name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "set domain metadata", map[string]any{"domain": name, "live": d.ID > 0})
	return nil
}

func (b *Backend) parsed(d golibvirt.Domain, flags golibvirt.DomainXMLFlags) (*parsedDomain, error) {
	doc, err := b.l.DomainGetXMLDesc(d, flags)
	if err != nil {
		return nil, wrap("read domain XML", d.Name, err)
	}
	p, err := parseDomain(doc)
	return p, wrap("parse domain XML", d.Name, err)
}

// AttachDisk attaches a disk on the first free SCSI target.
func (b *Backend) AttachDisk(ctx context.Context, name string, disk backend.Disk) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	// The target must be free in the persistent definition and in the live domain.
	used := map[string]bool{}
	for _, f := range []golibvirt.DomainXMLFlags{0, golibvirt.DomainXMLInactive} {
		p, err := b.parsed(d, f)
		if err != nil {
			return err
		}
		if _, ok := p.targets[disk.DeviceName]; ok && f == 0 {
			return nil // already attached
		}
		for t := range p.used {
			used[t] = true
		}
	}
	dev := ""
	for i := 0; dev == ""; i++ {
		if !used[target(i)] {
			dev = target(i)
		}
	}
	doc, err := diskDeviceXML(disk, dev)
	if err != nil {
		return fmt.Errorf("build disk XML for %s: %w", name, err)
	}
	if err := b.l.DomainAttachDeviceFlags(d, doc, uint32(impact(d))); err != nil {
		return wrap("attach disk "+disk.DeviceName+" to domain", name, err)
	}
	tflog.SubsystemDebug(ctx, Subsystem, "attached disk", map[string]any{"domain": name, "device": disk.DeviceName, "target": dev, "live": d.ID > 0})
	return nil
}

// DetachDisk detaches a disk by device name; a disk that is not attached is not an error.
func (b *Backend) DetachDisk(ctx context.Context, name, deviceName string) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	for _, f := range []golibvirt.DomainXMLFlags{0, golibvirt.DomainXMLInactive} {
		p, err := b.parsed(d, f)
		if err != nil {
			return err
		}
		dev, ok := p.targets[deviceName]
		if !ok {
			continue
		}
		var disk backend.Disk
		for _, x := range p.disks {
			if x.DeviceName == deviceName {
				disk = x
			}
		}
		doc, err := diskDeviceXML(disk, dev)
		if err != nil {
			return fmt.Errorf("build disk XML for %s: %w", name, err)
		}
		flags := golibvirt.DomainAffectConfig
		if f == 0 {
			flags = impact(d)
		}
		if err := b.l.DomainDetachDeviceFlags(d, doc, uint32(flags)); err != nil {
			return wrap("detach disk "+deviceName+" from domain", name, err)
		}
		tflog.SubsystemDebug(ctx, Subsystem, "detached disk", map[string]any{"domain": name, "device": deviceName, "live": f == 0 && d.ID > 0})
		return nil
	}
	return nil
}

// GrowDisk grows a disk: through QEMU when the domain runs, on the volume when it does not.
func (b *Backend) GrowDisk(ctx context.Context, name, deviceName string, disk backend.Disk, sizeMiB int64) error {
	d, err := b.lookup(name)
	if err != nil {
		return err
	}
	bytes := uint64(sizeMiB) << 20
	if d.ID > 0 {
		p, err := b.parsed(d, 0)
		if err != nil {
			return err
		}
		dev, ok := p.targets[deviceName]
		if !ok {
			return fmt.Errorf("grow disk %s of domain %s: the disk is not attached", deviceName, name)
		}
		if err := b.l.DomainBlockResize(d, dev, bytes, golibvirt.DomainBlockResizeBytes); err != nil {
			return wrap("grow disk "+deviceName+" of domain", name, err)
		}
	} else {
		if err := b.resizeVolume(disk.Pool, disk.Volume, bytes); err != nil {
			return err
		}
	}
	tflog.SubsystemDebug(ctx, Subsystem, "grew disk", map[string]any{"domain": name, "device": deviceName, "size_mib": sizeMiB, "live": d.ID > 0})
	return nil
}
