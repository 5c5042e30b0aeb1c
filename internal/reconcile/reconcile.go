// Package reconcile carries out the engine's plans against a backend: it keeps the group record,
// creates, updates and deletes the members of a group with bounded concurrency, in the order the
// plan gives, writes in-flight markers around changes, and logs progress so that TF_LOG=INFO
// shows what is happening.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultWorkers bounds how many instances are created, refreshed or deleted at once.
const DefaultWorkers = 4

// Reconciler drives a backend.
type Reconciler struct {
	Backend backend.Backend
	Workers int
}

// New returns a reconciler with the default worker count.
func New(b backend.Backend) *Reconciler { return &Reconciler{Backend: b, Workers: DefaultWorkers} }

// Observation is the group's members as they are on the host.
type Observation struct {
	Observed []engine.Observed
	Domains  map[string]backend.Domain
}

// Observe lists the group's members: every domain whose record names the group, and every
// domain no provider created that one of the group's configs names (to be adopted).
func (r *Reconciler) Observe(ctx context.Context, s engine.GroupState) (Observation, error) {
	doms, err := r.Backend.ListDomains(ctx, "")
	if err != nil {
		return Observation{}, err
	}
	o := Observation{Domains: map[string]backend.Domain{}}
	for _, d := range doms {
		var obs engine.Observed
		switch {
		case d.Record != nil && d.Record.Group == s.Group.Name:
			if d.Record.Index > 0 && d.Name != engine.InstanceName(s.Group.Base, d.Record.Index) {
				continue
			}
			obs = engine.Observed{Name: d.Name, Index: d.Record.Index, Status: d.Status, Instance: d.Record.Instance}
		case d.Record == nil:
			if _, ok := s.Configs[d.Name]; !ok {
				continue
			}
			index, _ := engine.ParseInstanceIndex(s.Group.Base, d.Name)
			shape := Shape(d, s.Pool)
			obs = engine.Observed{Name: d.Name, Index: index, Status: d.Status, Unmanaged: true,
				Instance: engine.ManagedInstance{Current: shape, Template: engine.AdoptedTemplate(shape)}}
		default:
			continue
		}
		o.Observed = append(o.Observed, obs)
		o.Domains[d.Name] = d
	}
	sort.Slice(o.Observed, func(i, j int) bool {
		a, b := o.Observed[i], o.Observed[j]
		if a.Index != b.Index {
			return a.Index < b.Index
		}
		return a.Name < b.Name
	})
	return o, nil
}

// Shape is a domain as the engine sees it, for a domain no provider created: its disks name
// their volume in the group's pool, or their path.
func Shape(d backend.Domain, pool string) engine.DesiredInstance {
	di := engine.DesiredInstance{Name: d.Name, DomainType: d.Type, VCPU: d.VCPU, MemoryMiB: d.MemoryMiB, Description: d.Description}
	for _, x := range d.Disks {
		di.Disks = append(di.Disks, engine.DesiredDisk{DeviceName: x.DeviceName, Source: SourceOf(x, pool), ReadOnly: x.ReadOnly})
	}
	return di
}

// SourceOf names a disk's source as configs write it: a volume name in the group's pool, else a
// path.
func SourceOf(d backend.Disk, pool string) string {
	if d.Volume != "" && (d.Pool == pool || d.Path == "") {
		return d.Volume
	}
	return d.Path
}

// Preview plans the group without changing anything.
func (r *Reconciler) Preview(ctx context.Context, s engine.GroupState) (engine.GroupPlan, Observation, error) {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return engine.GroupPlan{}, o, err
	}
	return engine.PlanGroup(s, o.Observed), o, nil
}

// BlockedError lists the instances the plan may not change.
type BlockedError struct{ Blocked []engine.Blocked }

func (e *BlockedError) Error() string {
	msgs := make([]string, len(e.Blocked))
	for i, b := range e.Blocked {
		msgs[i] = b.String()
	}
	return "these instances cannot be changed as planned: " + strings.Join(msgs, "; ")
}

// Apply reconciles the group: scale-in, scale-out, then the updates the engine plans.
func (r *Reconciler) Apply(ctx context.Context, s engine.GroupState) error {
	plan, o, err := r.Preview(ctx, s)
	if err != nil {
		return err
	}
	if len(plan.Blocked) > 0 {
		return &BlockedError{plan.Blocked}
	}
	tflog.Info(ctx, "reconciling group", map[string]any{
		"group": s.Group.Name, "members": len(o.Observed), "target_size": s.Group.TargetSize,
		"create": len(plan.Create), "delete": len(plan.Delete), "update": len(plan.Steps), "waiting_configs": len(plan.Waiting),
	})
	if err := forEachErr(ctx, r.workers(), "deleted", plan.Delete, func(ctx context.Context, name string) error {
		return r.deleteInstance(ctx, s, o.Domains[name])
	}); err != nil {
		return err
	}
	if err := forEachErr(ctx, r.workers(), "created", plan.Create, func(ctx context.Context, m engine.NewMember) error {
		return r.createInstance(ctx, s, m.Name, m.Index, m.Plan, s.Group.Template, s.Group.Running)
	}); err != nil {
		return err
	}
	// Live changes disrupt nothing and run in parallel; restarts and replacements take members
	// down, so at most max_unavailable of them run at once.
	var live, disruptive []engine.Step
	for _, st := range plan.Steps {
		if st.Disruptive() {
			disruptive = append(disruptive, st)
		} else {
			live = append(live, st)
		}
	}
	step := func(ctx context.Context, st engine.Step) error { return r.update(ctx, s, o.Domains[st.Name], st) }
	if err := forEachErr(ctx, r.workers(), "updated", live, step); err != nil {
		return err
	}
	return forEachErr(ctx, max(s.Group.Policy.MaxUnavailable, 1), "updated", disruptive, step)
}

// RemoveInstance deletes one member for good, as remove_instance_on_destroy asks: its preserved
// disks follow their delete rules.
func (r *Reconciler) RemoveInstance(ctx context.Context, s engine.GroupState, name string) error {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return err
	}
	d, ok := o.Domains[name]
	if !ok {
		return nil
	}
	return r.deleteInstance(ctx, s, d)
}

// Destroy deletes every member, the volumes an interrupted create left without a domain, and
// the group record. Volumes of devices the stateful policy or a config preserves are left alone
// unless a member's delete rule deletes them: safety first.
func (r *Reconciler) Destroy(ctx context.Context, s engine.GroupState) error {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return err
	}
	var members []backend.Domain
	for _, ob := range o.Observed {
		if !ob.Unmanaged {
			members = append(members, o.Domains[ob.Name])
		}
	}
	if err := forEachErr(ctx, r.workers(), "deleted", members, func(ctx context.Context, d backend.Domain) error {
		return r.deleteInstance(ctx, s, d)
	}); err != nil {
		return err
	}
	g := s.Group
	preserved := map[string]bool{}
	for _, d := range s.StatefulPolicy().Disks {
		preserved[d.DeviceName] = true
	}
	for _, c := range s.Configs {
		for _, d := range c.Config.Disks {
			preserved[d.DeviceName] = true
		}
	}
	devices := []string{regexp.QuoteMeta(engine.BootDeviceName)}
	for _, d := range g.Template.Disks {
		if !preserved[d.DeviceName] {
			devices = append(devices, regexp.QuoteMeta(d.DeviceName))
		}
	}
	vols, err := r.Backend.ListVolumes(ctx, s.Pool, g.Base+"-")
	if err != nil {
		return err
	}
	owned := regexp.MustCompile(`^` + regexp.QuoteMeta(g.Base) + `-[1-9][0-9]*-(` + strings.Join(devices, "|") + `)\.` + engine.VolumeFormat + `$`)
	var orphans []string
	for _, v := range vols {
		if owned.MatchString(v.Name) {
			orphans = append(orphans, v.Name)
		}
	}
	if err := forEachErr(ctx, r.workers(), "orphan volume deleted", orphans, func(ctx context.Context, name string) error {
		return r.Backend.DeleteVolume(ctx, s.Pool, name)
	}); err != nil {
		return err
	}
	return r.Backend.DeleteGroupRecord(ctx, s.Pool, g.Name)
}

// forEachErr runs fn on every item, at most workers at once, logs each success as progress and
// returns every failure joined.
func forEachErr[T any](ctx context.Context, workers int, verb string, items []T, fn func(context.Context, T) error) error {
	if len(items) == 0 {
		return nil
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		done atomic.Int32
	)
	sem := make(chan struct{}, workers)
	for _, it := range items {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			if err := fn(ctx, it); err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
				return
			}
			n := done.Add(1)
			tflog.Info(ctx, fmt.Sprintf("instance %d of %d %s", n, len(items), verb), map[string]any{"item": itemName(it)})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func itemName(it any) string {
	switch v := it.(type) {
	case engine.Step:
		return v.Name
	case engine.NewMember:
		return v.Name
	case backend.Domain:
		return v.Name
	}
	return fmt.Sprint(it)
}

func (r *Reconciler) workers() int { return max(r.Workers, 1) }
