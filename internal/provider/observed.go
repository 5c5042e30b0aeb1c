package provider

import (
	"context"
	"sort"
	"strings"
	"sync"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// A plan refreshes each group (the group's Read) and then plans it (ModifyPlan), in one provider
// process and moments apart, and a group's policy and configs plan it again. Each of those read
// every member from libvirt, so one plan of a large group read each member several times. Read
// leaves what it observed here and the plans that follow in this process start from it; any
// change this process begins forgets all of it (holdGroup). A change another apply makes in
// between is caught where it always was: the apply observes the host again and refuses to do
// more than the plan showed.

// observations are the groups' members as the last Read in this process saw them.
type observations struct {
	mu sync.Mutex
	m  map[string]observed
}

type observed struct {
	key string // what the observation depends on besides the host (observationKey)
	o   reconcile.Observation
}

// observationKey is what an observation of a group depends on besides the host: the group's
// name and pool, and the names its configs give (a config names the domain it adopts).
func observationKey(s engine.GroupState) string {
	names := make([]string, 0, len(s.Configs))
	for n := range s.Configs {
		names = append(names, n)
	}
	sort.Strings(names)
	return s.Group.Name + "\x00" + s.Pool + "\x00" + strings.Join(names, "\x00")
}

// observe reads the group's members from libvirt and remembers them for the plans that follow.
func (d *ProviderData) observe(ctx context.Context, s engine.GroupState) (reconcile.Observation, error) {
	o, err := d.Reconciler.Observe(ctx, s)
	if err != nil {
		return o, err
	}
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	if d.observed.m == nil {
		d.observed.m = map[string]observed{}
	}
	d.observed.m[s.Group.Name] = observed{key: observationKey(s), o: o}
	return o, nil
}

// preview plans the group from what the last Read observed of it when that still applies,
// and from a new observation otherwise.
func (d *ProviderData) preview(ctx context.Context, s engine.GroupState) (engine.GroupPlan, reconcile.Observation, error) {
	d.observed.mu.Lock()
	c, ok := d.observed.m[s.Group.Name]
	d.observed.mu.Unlock()
	if ok && c.key == observationKey(s) {
		return d.Reconciler.PlanFrom(s, c.o), c.o, nil
	}
	return d.Reconciler.Preview(ctx, s)
}

// observedGroup reports whether a Read in this process observed the group.
func (d *ProviderData) observedGroup(name string) bool {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	_, ok := d.observed.m[name]
	return ok
}

// forgetObserved drops every observation: this process is about to change the host.
func (d *ProviderData) forgetObserved() {
	d.observed.mu.Lock()
	defer d.observed.mu.Unlock()
	d.observed.m = nil
}
