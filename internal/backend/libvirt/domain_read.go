// This file holds how domains are read: listed with their states, parsed, their status judged.

package libvirt

import (
	"context"
	"fmt"
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
		case golibvirt.DomainPausedUnknown:
			return engine.StateReasonPausedUnknown
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
		got, listed, n, err := c.listDomains(backend.Matcher(prefix, names))
		if err == nil {
			c.keep(func() {
				doms, all = got, n
				b.handles.remember(domainName, listed...)
			})
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
		Adopted:     p.adopted,
		MACs:        p.macs,
		Networks:    p.networks,
		Seed:        p.seed,
		Agent:       p.agent && d.ID > 0,
		VCPU:        p.vcpu,
		MemoryMiB:   p.memoryMiB,
	}
	if d.ID > 0 {
		// The port libvirt picked when the domain started: only the live definition has it.
		dom.GraphicsPort = p.graphicsPort
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
		dom.RecordUndefined = def.record == nil
	}
	return dom, nil
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
