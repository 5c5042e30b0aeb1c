package providerdata

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// A plan refreshes each group (the group's Read) and then plans it (ModifyPlan), in one provider
// process and moments apart, and a group's policy and configs plan it again. Each of those read
// every member from libvirt, so one plan of a large group read each member several times. Read
// leaves what it observed here and the plans that follow in this process start from it; any
// change this process begins forgets all of it (HoldGroup). A change another apply makes in
// between is caught where it always was: the apply observes the host again and refuses to do
// more than the plan showed.

// observations are the groups' members as the last Read in this process saw them.
type observations struct {
	mu sync.Mutex
	m  map[string]observed
	// records are the group records the last Read in this process read, by group: the plans
	// that follow it start from them rather than reading the record again (refreshedRecord).
	records map[string]reconcile.Record
}

type observed struct {
	key observationKey // what the observation depends on besides the host
	o   reconcile.Observation
	// gen is the generation of the group record the observation was made under, when known
	// and no other apply held the group then; 0 otherwise.
	gen int64
	// fromRead marks an observation a Read made (the refresh of a plan).
	fromRead bool
	// planned is the group as the group's own plan planned it from this observation, and plan
	// that plan (nil when none was kept): the apply that follows runs it when it would plan
	// the same group from the same members (planChange).
	planned *engine.GroupState
	plan    *engine.GroupPlan
}

// observationKey is what an observation of a group depends on besides the host: the group's
// name, base name, pool and hosts (its own and those it placed members on), the names its
// configs give (a config names the domain it adopts), the domains its listing reads (engine's
// Candidates), its health check (which members are probed, and how) and its membership scope
// (membershipScope). It is a comparable value: two keys are the same observation's when ==.
// Lists are held as their sorted items joined by NUL, which no name holds.
type observationKey struct {
	group, base, pool string
	hosts             string
	configs           string
	prefix            string
	candidates        string
	check             healthCheckKey
	scope             membershipKey
}

// healthCheckKey is an engine.HealthCheck with its defaults applied, as a comparable value; the
// zero value for a group without one.
type healthCheckKey struct {
	set                bool
	kind               engine.ProbeKind
	command            string
	port               int
	path               string
	expectStatus       int
	interval, timeout  time.Duration
	healthy, unhealthy int
}

// membershipKey is what of the group, besides its names, decides which listed domains are its
// members (engine's Classify): the names it abandons (an abandoned member's domain is no longer
// held by the record) and, when it adopts domains by their names (adopt_existing), how far
// target_size reaches. An observation a refresh made with the group as its record had it does not
// hold, for a plan that raises target_size or gives an abandoned name back, the domain the plan
// adopts: it would plan to create a member under that domain's name.
type membershipKey struct {
	abandon   string
	adopting  bool
	adoptUpTo int
}

func KeyOf(s engine.GroupState) observationKey {
	names := make([]string, 0, len(s.Configs))
	for n := range s.Configs {
		names = append(names, n)
	}
	sort.Strings(names)
	prefix, candidates := s.Candidates()
	hosts := map[string]bool{}
	for _, h := range s.Group.HostList() {
		hosts[h] = true
	}
	for _, h := range s.Placement {
		hosts[engine.HostOf(h)] = true
	}
	hostNames := make([]string, 0, len(hosts))
	for h := range hosts {
		hostNames = append(hostNames, h)
	}
	sort.Strings(hostNames)
	return observationKey{
		group: s.Group.Name, base: s.Group.Base, pool: s.Pool,
		hosts:      strings.Join(hostNames, "\x00"),
		configs:    strings.Join(names, "\x00"),
		prefix:     prefix,
		candidates: strings.Join(candidates, "\x00"),
		check:      checkKeyOf(s.Group.HealthCheck),
		scope:      membershipScope(s.Group),
	}
}

// checkKeyOf is the health check's key: a plan that changes it observes again rather than judge
// the members by another check's probes.
func checkKeyOf(hc *engine.HealthCheck) healthCheckKey {
	if hc == nil {
		return healthCheckKey{}
	}
	c := hc.WithDefaults()
	return healthCheckKey{set: true, kind: c.Probe.Kind, command: strings.Join(c.Probe.Command, "\x00"), port: c.Probe.Port,
		path: c.Probe.Path, expectStatus: c.Probe.ExpectStatus, interval: c.Interval, timeout: c.Timeout,
		healthy: c.HealthyThreshold, unhealthy: c.UnhealthyThreshold}
}

func membershipScope(g engine.Group) membershipKey {
	abandon := slices.Clone(g.Abandon)
	sort.Strings(abandon)
	k := membershipKey{abandon: strings.Join(abandon, "\x00")}
	if g.AdoptExisting {
		k.adopting, k.adoptUpTo = true, g.TargetSize
	}
	return k
}

// Host is the backend of the provider's host named h (engine.DefaultHost: its own uri), through
// the one host map every call to a host goes through (reconcile.Reconciler.Host): a name the
// provider does not have is an error, never another host.
func (d *ProviderData) Host(h string) (backend.Backend, error) {
	return d.Reconciler.Host(h)
}

// DefaultHost is the provider's own host, by its name.
func (d *ProviderData) DefaultHost() backend.Backend {
	b, _ := d.Reconciler.Host(engine.DefaultHost) // the default host is always in the map
	return b
}

// Observe reads the group's members from libvirt and remembers them for the plans that follow.
func (d *ProviderData) Observe(ctx context.Context, s engine.GroupState) (reconcile.Observation, error) {
	o, err := d.Reconciler.Observe(ctx, s)
	if err == nil {
		d.remember(s, observed{o: o, fromRead: true})
	}
	return o, err
}

// remember keeps c as the group's observation, under the key s gives it.
func (d *ProviderData) remember(s engine.GroupState, c observed) {
	c.key = KeyOf(s)
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	if d.observed.m == nil {
		d.observed.m = map[string]observed{}
	}
	d.observed.m[s.Group.Name] = c
}

// Lookup says what this process holds of the group s for its plan (groupproto.Cached).
func (d *ProviderData) Lookup(s engine.GroupState) groupproto.Cached {
	d.observed.mu.Lock()
	c, ok := d.observed.m[s.Group.Name]
	d.observed.mu.Unlock()
	if !ok {
		return groupproto.CachedNothing
	}
	return c.holds(s)
}

// holds says what c holds for a plan of the group s: the plan of this very group (planned
// alike), the members observed under the same key, or nothing of use. (reflect.DeepEqual: a
// GroupState has no equality of its own, and a typed one would have to follow every field the
// engine adds; the key, which decides whether the members apply, is typed.)
func (c *observed) holds(s engine.GroupState) groupproto.Cached {
	switch {
	case c == nil || c.key != KeyOf(s):
		return groupproto.CachedNothing
	case c.plan != nil && reflect.DeepEqual(*c.planned, s):
		return groupproto.CachedPlan
	}
	return groupproto.CachedObservation
}

// cached plans the group from the observation this process holds of it, when that still applies.
func (d *ProviderData) cached(s engine.GroupState) (engine.GroupPlan, reconcile.Observation, bool) {
	d.observed.mu.Lock()
	c, ok := d.observed.m[s.Group.Name]
	d.observed.mu.Unlock()
	if !ok {
		return engine.GroupPlan{}, reconcile.Observation{}, false
	}
	switch c.holds(s) {
	case groupproto.CachedNothing:
		return engine.GroupPlan{}, reconcile.Observation{}, false
	case groupproto.CachedPlan:
		// This process planned this very group from these members already.
		return *c.plan, c.o, true
	case groupproto.CachedObservation:
	}
	p := d.Reconciler.PlanFrom(s, c.o)
	d.keepPlan(s, p)
	return p, c.o, true
}

// keepPlan keeps, beside the group's observation, the plan p this process made of s from it,
// for a plan of the same group from the same members (cached).
func (d *ProviderData) keepPlan(s engine.GroupState, p engine.GroupPlan) {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	c, ok := d.observed.m[s.Group.Name]
	if !ok || c.key != KeyOf(s) {
		return
	}
	c.planned, c.plan = &s, &p
	d.observed.m[s.Group.Name] = c
}

// Preview plans the group from what the last Read observed of it when that still applies,
// and from a new observation otherwise.
func (d *ProviderData) Preview(ctx context.Context, s engine.GroupState) (engine.GroupPlan, reconcile.Observation, error) {
	if p, o, ok := d.cached(s); ok {
		return p, o, nil
	}
	return d.Reconciler.Preview(ctx, s)
}

// PreviewAt is preview for the group's own plan, with the generation of the group record that
// plan read (gen, 0 when unknown): a new observation is remembered with it, so that the apply
// that follows in this process need not read the members again when nothing changed the group
// in between (holdObserved).
//
// probed, when not nil, are the probe outcomes a refresh of this Terraform run kept (settled):
// the members are judged by them, not probed again (ObserveProbed).
func (d *ProviderData) PreviewAt(ctx context.Context, s engine.GroupState, gen int64, probed map[string]*engine.ProbeOutcome) (engine.GroupPlan, reconcile.Observation, error) {
	if p, o, ok := d.cached(s); ok {
		return p, o, nil
	}
	var p engine.GroupPlan
	var o reconcile.Observation
	var err error
	if probed != nil {
		if o, err = d.Reconciler.ObserveProbed(ctx, s, probed); err == nil {
			p = d.Reconciler.PlanFrom(s, o)
		}
	} else {
		p, o, err = d.Reconciler.Preview(ctx, s)
	}
	if err == nil {
		d.remember(s, observed{o: o, gen: gen, planned: &s, plan: &p})
	}
	return p, o, err
}

// ObservedGroup reports whether a Read in this process observed the group.
func (d *ProviderData) ObservedGroup(name string) bool {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	return d.observed.m[name].fromRead
}

// forgetObservedGroup drops the group's observation and returns it.
func (d *ProviderData) forgetObservedGroup(name string) (observed, bool) {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	c, ok := d.observed.m[name]
	delete(d.observed.m, name)
	delete(d.observed.records, name)
	return c, ok
}

// ForgetObserved drops every observation: this process is about to change the host.
func (d *ProviderData) ForgetObserved() {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	d.observed.m, d.observed.records = nil, nil
}

// RefreshRecord reads the group record for a refresh (Read) and remembers it for the plans that
// follow in this process (PlanRecord).
func (d *ProviderData) RefreshRecord(ctx context.Context, group string) (s engine.GroupState, m reconcile.Meta, found bool, err error) {
	rec, err := d.Reconciler.ReadRecord(ctx, group)
	if errors.Is(err, backend.ErrNotFound) {
		return s, m, false, nil
	}
	if err == nil {
		s, m, err = rec.Decode()
	}
	if err != nil {
		return s, m, false, err
	}
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	if d.observed.records == nil {
		d.observed.records = map[string]reconcile.Record{}
	}
	d.observed.records[group] = rec
	return s, m, true, nil
}

// PlanRecord is the group record for a plan: as the refresh of this process read it moments
// ago when it did (no change has begun in this process since: holdObserved forgets it), else
// read now. What a plan checks with it (owner, lease) every write checks again against the
// record on the host, so a plan made from the refresh's read refuses nothing an apply would
// let through.
func (d *ProviderData) PlanRecord(ctx context.Context, group string) (s engine.GroupState, m reconcile.Meta, found bool, err error) {
	d.observed.mu.Lock()
	rec, ok := d.observed.records[group]
	d.observed.mu.Unlock()
	if !ok {
		return d.LoadGroupRecord(ctx, group)
	}
	s, m, err = rec.Decode()
	return s, m, err == nil, err
}

// ReadingHosts is ctx for what a plan, a refresh, an import, a data source read, a listing or an
// apply reads of the hosts' state (their members, the group records, other groups' claims):
// each host has HostTimeout to answer each such reading (reconcile.WithHostBound), and one that
// does not is UNKNOWN, as a host that is down. An apply reads what its plan read, under the same
// rule, so that it does not wait on a host its plan saw as UNKNOWN; its changes run under the
// resource's timeouts, not under this bound.
func (d *ProviderData) ReadingHosts(ctx context.Context) context.Context {
	if d == nil {
		return ctx
	}
	return reconcile.WithHostBound(ctx, d.HostTimeout)
}
