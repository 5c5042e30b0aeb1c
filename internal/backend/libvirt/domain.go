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

// statusOf maps libvirt's state and reason to a member status. libvirt starts QEMU paused and
// resumes it once the domain is set up; a domain paused for that reason is starting, not paused,
// so a plan made while a start is under way (say, one a killed apply began) does not plan to
// power-cycle a domain that is about to run on its own.
func statusOf(state, reason int32) engine.Status {
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainRunning, golibvirt.DomainBlocked:
		return engine.StatusRunning
	case golibvirt.DomainPaused:
		if golibvirt.DomainPausedReason(reason) == golibvirt.DomainPausedStartingUp {
			return engine.StatusRunning
		}
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

// reasonOf converts libvirt's reason for a domain's state to the engine's, for the reasons that
// tell a failure or a stop someone else made; engine.StateReasonNone for the ordinary ones.
func reasonOf(state, reason int32) engine.StateReason {
	switch golibvirt.DomainState(state) {
	case golibvirt.DomainShutoff:
		switch golibvirt.DomainShutoffReason(reason) {
		case golibvirt.DomainShutoffShutdown:
			return engine.StateReasonShutDown
		case golibvirt.DomainShutoffDestroyed:
			return engine.StateReasonDestroyed
		case golibvirt.DomainShutoffCrashed:
			return engine.StateReasonCrashed
		case golibvirt.DomainShutoffFailed:
			return engine.StateReasonFailedToStart
		case golibvirt.DomainShutoffDaemon:
			return engine.StateReasonStoppedByDaemon
		}
	case golibvirt.DomainPaused:
		switch golibvirt.DomainPausedReason(reason) {
		case golibvirt.DomainPausedIoerror:
			return engine.StateReasonIOError
		case golibvirt.DomainPausedUser:
			return engine.StateReasonPausedByUser
		case golibvirt.DomainPausedWatchdog:
			return engine.StateReasonWatchdog
		case golibvirt.DomainPausedCrashed:
			return engine.StateReasonCrashed
		}
	case golibvirt.DomainCrashed:
		return engine.StateReasonCrashed
	}
	return engine.StateReasonNone
}

// ListDomains lists all domains with their state in one call, then reads the matching ones'
// definitions concurrently. It only reads, so running it again after a reconnect is safe.
func (b *Backend) ListDomains(ctx context.Context, prefix string, names ...string) ([]backend.Domain, error) {
	var doms []backend.Domain
	var all int
	err := b.do(ctx, "list domains", "", func(c conn) error {
		var err error
		var listed []golibvirt.Domain
		doms, listed, all, err = c.listDomains(backend.Matcher(prefix, names))
		if err == nil {
			b.handles.remember(domainName, listed...)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	tflog.SubsystemDebug(ctx, Subsystem, "listed domains", map[string]any{"prefix": prefix, "all": all, "matching": len(doms)})
	return doms, nil
}

func (c conn) listDomains(match func(name string) bool) ([]backend.Domain, []golibvirt.Domain, int, error) {
	// One call gives every domain with its state and the state's reason, which a plan needs for
	// each member (paused and crashed domains are told apart from running ones): a state read
	// per domain would double the calls a refresh of a large group makes. Only the state group
	// of statistics is asked for, which libvirt answers without the domain's QEMU monitor, so a
	// domain busy with another job does not hold the listing up.
	all, err := c.l.ConnectGetAllDomainStats(nil, uint32(golibvirt.DomainStatsState), 0)
	if err != nil {
		return nil, nil, 0, wrap("list domains", c.uri, err)
	}
	var matching []golibvirt.DomainStatsRecord
	for _, r := range all {
		if match(r.Dom.Name) {
			matching = append(matching, r)
		}
	}
	out := make([]*backend.Domain, len(matching))
	errs := make([]error, len(matching))
	sem := make(chan struct{}, readConcurrency)
	var wg sync.WaitGroup
	for i, r := range matching {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			state, okState := paramInt(r.Params, "state.state")
			reason, okReason := paramInt(r.Params, "state.reason")
			if !okState || !okReason {
				out[i], errs[i] = nil, fmt.Errorf("list domains: libvirt gave no state for domain %s", r.Dom.Name)
				return
			}
			out[i], errs[i] = c.readDomain(r.Dom, state, reason)
		}()
	}
	wg.Wait()
	var doms []backend.Domain
	var listed []golibvirt.Domain
	for i := range matching {
		switch {
		case errs[i] == nil:
			doms = append(doms, *out[i])
			listed = append(listed, matching[i].Dom)
		case isNotFound(errs[i]):
			// The domain went away between the list and the read: it is simply not there.
		default:
			return nil, nil, 0, errs[i]
		}
	}
	return doms, listed, len(all), nil
}

// readDomain reads a domain's definition; its state and reason come from the listing.
func (c conn) readDomain(d golibvirt.Domain, state, reason int32) (*backend.Domain, error) {
	doc, err := c.l.DomainGetXMLDesc(d, 0)
	if err != nil {
		return nil, wrap("read domain XML", d.Name, err)
	}
	p, err := readDomainXML(doc)
	if err != nil {
		return nil, parseError(d.Name, err)
	}
	dom := &backend.Domain{
		Name:        d.Name,
		UUID:        formatUUID(d.UUID),
		ID:          d.ID,
		Status:      statusOf(state, reason),
		Reason:      reasonOf(state, reason),
		Disks:       p.disks,
		Type:        p.typ,
		Description: p.description,
		Record:      p.record,
		MACs:        p.macs,
		Networks:    p.networks,
		Seed:        p.seed,
		Agent:       p.agent && d.ID > 0,
		VCPU:        p.vcpu,
		MemoryMiB:   p.memoryMiB,
	}
	if d.ID > 0 && p.record != nil {
		// VCPU and memory of a member are its definition's, which the next start gets: a
		// change made with --config on a running member is drift too. Disks are the live ones.
		// Domains no provider created are read once, as they run.
		inactive, err := c.l.DomainGetXMLDesc(d, golibvirt.DomainXMLInactive)
		if err != nil {
			return nil, wrap("read domain XML", d.Name, err)
		}
		def, err := readDomainXML(inactive)
		if err != nil {
			return nil, parseError(d.Name, err)
		}
		dom.VCPU, dom.MemoryMiB = def.vcpu, def.memoryMiB
	}
	return dom, nil
}

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
// undefine fail.
const undefineFlags = golibvirt.DomainUndefineManagedSave | golibvirt.DomainUndefineSnapshotsMetadata | golibvirt.DomainUndefineNvram | golibvirt.DomainUndefineCheckpointsMetadata

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

// paramInt finds an integer statistic by name among a stats record's typed parameters.
func paramInt(params []golibvirt.TypedParam, field string) (int32, bool) {
	for _, p := range params {
		if p.Field != field {
			continue
		}
		switch v := p.Value.I.(type) {
		case int32:
			return v, true
		case uint32:
			return int32(v), true
		case int64:
			return int32(v), true
		case uint64:
			return int32(v), true
		}
	}
	return 0, false
}
