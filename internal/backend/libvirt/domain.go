package libvirt

import (
	"context"
	"fmt"
	"slices"
	"strings"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// parseError reports XML libvirt gave that does not parse. The parser's error is kept as text
// only: an empty document fails with io.EOF, which must not pass for a lost connection.
func parseError(name string, err error) error {
	return fmt.Errorf("parse domain XML of %s: %v", name, err)
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

func boolInt(b bool) int32 {
	if b {
		return 1
	}
	return 0
}

// SetAutostart sets whether libvirtd starts the domain when it starts.
func (b *Backend) SetAutostart(ctx context.Context, name string, on bool) error {
	return b.do(ctx, "set autostart of domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		return wrap("set autostart of domain", name, c.l.DomainSetAutostart(d, boolInt(on)))
	})
}

// DefineDomain defines (or redefines) a domain from the spec. A new domain is given its UUID
// here rather than by libvirt, so that defining it again after a lost connection redefines the
// domain the first attempt may have made, where libvirt would refuse a second domain of that
// name with a UUID of its own choosing.
func (b *Backend) DefineDomain(ctx context.Context, spec backend.DomainSpec) error {
	// A new domain starts with autostart off: setting it off again is a call per member of a
	// large create for nothing.
	fresh := spec.UUID == ""
	if fresh {
		spec.UUID = randomUUID()
	}
	b.handles.forget(spec.Name)
	err := b.do(ctx, "define domain", spec.Name, func(c conn) error {
		spec.Disks = c.resolveDisks(spec.Disks)
		if spec.NVRAM != nil {
			nvram, err := c.nvramPath(*spec.NVRAM)
			if err != nil {
				return err
			}
			spec.NVRAM = &nvram
		}
		checked := spec.Disks
		for _, d := range []*backend.Disk{spec.Seed, spec.NVRAM} {
			if d != nil {
				checked = append(slices.Clip(checked), *d)
			}
		}
		if err := c.checkDisks(spec.Name, checked, spec.Filesystems); err != nil {
			return err
		}
		doc, err := domainXML(spec)
		if err != nil {
			return fmt.Errorf("build domain XML for %s: %w", spec.Name, err)
		}
		dom, err := c.l.DomainDefineXMLFlags(doc, 0)
		if err != nil {
			return wrap("define domain", spec.Name, err)
		}
		if fresh && !spec.Autostart {
			return nil
		}
		err = c.l.DomainSetAutostart(dom, boolInt(spec.Autostart))
		return wrap("set autostart of domain", spec.Name, err)
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "defined domain", map[string]any{"domain": spec.Name})
	return nil
}

func (c conn) lookup(name string) (golibvirt.Domain, error) {
	d, err := c.l.DomainLookupByName(name)
	return d, wrap("look up domain", name, err)
}

// StartDomain starts a defined domain; starting a running one is not an error, which is also
// what makes a second attempt after a lost connection safe.
func (b *Backend) StartDomain(ctx context.Context, name string) error {
	b.handles.forget(name)
	err := b.do(ctx, "start domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		if err := c.checkDefined(d); err != nil {
			return err
		}
		if err := c.l.DomainCreate(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
			return wrap("start domain", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "started domain", map[string]any{"domain": name})
	return nil
}

// StopDomain powers a domain off at once, as pulling the plug would: the guest is not asked.
// ShutdownDomain asks it. Stopping a stopped domain is not an error, so a second attempt after a
// lost connection is safe.
func (b *Backend) StopDomain(ctx context.Context, name string) error {
	b.handles.forget(name)
	err := b.do(ctx, "stop domain", name, func(c conn) error {
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		if err := c.l.DomainDestroy(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
			return wrap("stop domain", name, err)
		}
		return nil
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "stopped domain", map[string]any{"domain": name})
	return nil
}

// undefineFlags also remove what libvirt keeps beside a definition, which would otherwise make the
// undefine fail. The NVRAM of an EFI domain is kept (libvirt refuses to undefine one without
// either flag): a member's NVRAM is its volume, whose fate the engine decides (kept across a
// restart, made fresh by a replacement, deleted with the member), and any other domain's is
// not the provider's to delete.
const undefineFlags = golibvirt.DomainUndefineManagedSave | golibvirt.DomainUndefineSnapshotsMetadata | golibvirt.DomainUndefineKeepNvram | golibvirt.DomainUndefineCheckpointsMetadata

// nvramPath gives the NVRAM volume its path in its pool's directory: libvirt writes the file
// there itself, so the pool must be a directory pool.
func (c conn) nvramPath(d backend.Disk) (backend.Disk, error) {
	p, err := c.pool(d.Pool)
	if err != nil {
		return d, err
	}
	info, err := c.poolInfo(p)
	if err != nil {
		return d, err
	}
	if info.Path == "" {
		return d, fmt.Errorf("the NVRAM of an EFI domain is a file in its storage pool's directory, and pool %s is not a directory pool", d.Pool)
	}
	d.Path = strings.TrimSuffix(info.Path, "/") + "/" + d.Volume
	return d, nil
}

// TransientDomainNames lists the names of the domains without a definition in one call. It only
// reads, so running it again after a reconnect is safe.
func (b *Backend) TransientDomainNames(ctx context.Context) (map[string]bool, error) {
	names := map[string]bool{}
	err := b.do(ctx, "list transient domains", "", func(c conn) error {
		doms, _, err := c.l.ConnectListAllDomains(1, golibvirt.ConnectListDomainsTransient)
		if err != nil {
			return wrap("list transient domains", c.uri, err)
		}
		for _, d := range doms {
			names[d.Name] = true
		}
		return nil
	})
	return names, err
}

// DiskSources reads every domain's disk source paths in one call: the block group of the domain
// statistics, which names each disk's source for running and defined domains alike. Nothing that
// would wait on a domain's QEMU monitor is asked for (nowait), so a busy domain does not hold the
// read up; a disk without a source (an empty CD-ROM) has no path.
func (b *Backend) DiskSources(ctx context.Context) (map[string][]string, error) {
	out := map[string][]string{}
	err := b.do(ctx, "list disk sources", "", func(c conn) error {
		all, err := c.l.ConnectGetAllDomainStats(nil, uint32(golibvirt.DomainStatsBlock), uint32(golibvirt.ConnectGetAllDomainsStatsNowait))
		if err != nil {
			return wrap("list disk sources", c.uri, err)
		}
		for _, r := range all {
			for _, p := range r.Params {
				if !strings.HasPrefix(p.Field, "block.") || !strings.HasSuffix(p.Field, ".path") {
					continue
				}
				if v, ok := p.Value.I.(string); ok && v != "" {
					out[r.Dom.Name] = append(out[r.Dom.Name], v)
				}
			}
		}
		return nil
	})
	return out, err
}

// UndefineDomain undefines a domain, powering it off first if it still runs: callers that want
// the guest to shut down cleanly do that before, with ShutdownDomain and WaitStopped, and this
// is the safety net for a guest that would not. Its volumes are left alone. A missing domain is
// not an error, so a second attempt after a lost connection is safe.
func (b *Backend) UndefineDomain(ctx context.Context, name string) error {
	err := b.do(ctx, "undefine domain", name, func(c conn) error {
		defer b.handles.forget(name)
		err := b.withHandle(c, name, func(d golibvirt.Domain, listed bool) error {
			// A member the last listing saw stopped is not powered off first (see
			// backend.Backend); one looked up now is, whatever it was then.
			if listed && d.ID <= 0 {
				return wrap("undefine domain", name, c.l.DomainUndefineFlags(d, undefineFlags))
			}
			if err := c.l.DomainDestroy(d); err != nil && !isCode(err, golibvirt.ErrOperationInvalid) {
				return wrap("stop domain", name, err)
			}
			return wrap("undefine domain", name, c.l.DomainUndefineFlags(d, undefineFlags))
		})
		if isNotFound(err) || isNotFoundLibvirt(err) {
			return nil
		}
		return err
	})
	if err != nil {
		return err
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

// SetRecord writes the provider's metadata element, live when running. It is replaced whole, so
// writing it again after a lost connection is safe.
func (b *Backend) SetRecord(ctx context.Context, name string, rec backend.Record) error {
	doc, err := marshalRecord(rec, false)
	if err != nil {
		return fmt.Errorf("build metadata for %s: %w", name, err)
	}
	return b.setMetadata(ctx, "set metadata of domain", name, golibvirt.DomainMetadataElement, golibvirt.OptString{doc},
		golibvirt.OptString{metadataKey}, golibvirt.OptString{Namespace})
}

// ClearRecord removes the provider's metadata element, live when running: libvirt removes an
// element when it is given none, by its namespace alone.
func (b *Backend) ClearRecord(ctx context.Context, name string) error {
	return b.setMetadata(ctx, "remove metadata of domain", name, golibvirt.DomainMetadataElement, nil, nil, golibvirt.OptString{Namespace})
}

// SetDescription writes the domain's description, live when running; "" removes it.
func (b *Backend) SetDescription(ctx context.Context, name, description string) error {
	var desc golibvirt.OptString
	if description != "" {
		desc = golibvirt.OptString{description}
	}
	return b.setMetadata(ctx, "set description of domain", name, golibvirt.DomainMetadataDescription, desc, nil, nil)
}

// setMetadata is one DomainSetMetadata call on the definition, and on the running domain too
// when it runs.
func (b *Backend) setMetadata(ctx context.Context, op, name string, kind golibvirt.DomainMetadataType, value, key, uri golibvirt.OptString) error {
	live := false
	err := b.do(ctx, op, name, func(c conn) error {
		return b.withHandle(c, name, func(d golibvirt.Domain, _ bool) error {
			flags := impact(d)
			live = d.ID > 0
			return wrap(op, name, c.l.DomainSetMetadata(d, int32(kind), value, key, uri, flags))
		})
	})
	if err != nil {
		return err
	}
	tflog.SubsystemDebug(ctx, Subsystem, op, map[string]any{"domain": name, "live": live})
	return nil
}

func (c conn) parsed(d golibvirt.Domain, flags golibvirt.DomainXMLFlags) (*parsedDomain, error) {
	doc, err := c.l.DomainGetXMLDesc(d, flags)
	if err != nil {
		return nil, wrap("read domain XML", d.Name, err)
	}
	p, err := parseDomain(doc)
	if err != nil {
		return nil, parseError(d.Name, err)
	}
	return p, nil
}
