// Package reconcile carries out the engine's plans against a backend: it creates, updates and
// deletes the members of a group with bounded concurrency, in the order the plan gives, and logs
// progress so that TF_LOG=INFO shows what is happening.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultWorkers bounds how many instances are created, refreshed or deleted at once.
const DefaultWorkers = 4

// Spec is a group as the provider wants it.
type Spec struct {
	Group engine.Group
	Pool  string
	// GroupSpec is the provider's own rendering of the group's settings, stored opaquely in every
	// member's record so that import can rebuild the resource.
	GroupSpec string
}

// Reconciler drives a backend.
type Reconciler struct {
	Backend backend.Backend
	Workers int
}

// New returns a reconciler with the default worker count.
func New(b backend.Backend) *Reconciler { return &Reconciler{Backend: b, Workers: DefaultWorkers} }

// Members returns the group's member domains, ordered by index. A domain is a member when its
// record names the group and its name follows the "<base>-<index>" scheme for that index.
func (r *Reconciler) Members(ctx context.Context, group, base string) ([]backend.Domain, error) {
	doms, err := r.Backend.ListDomains(ctx, base+"-")
	if err != nil {
		return nil, err
	}
	var out []backend.Domain
	for _, d := range doms {
		if d.Record == nil || d.Record.Group != group {
			continue
		}
		if i, ok := engine.ParseInstanceIndex(base, d.Name); !ok || i != d.Record.Index {
			continue
		}
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Record.Index < out[j].Record.Index })
	return out, nil
}

// FindGroup returns the members of a group whose base name is not known, as on import.
func (r *Reconciler) FindGroup(ctx context.Context, group string) ([]backend.Domain, error) {
	doms, err := r.Backend.ListDomains(ctx, "")
	if err != nil {
		return nil, err
	}
	var out []backend.Domain
	for _, d := range doms {
		if d.Record != nil && d.Record.Group == group {
			out = append(out, d)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Record.Index < out[j].Record.Index })
	return out, nil
}

// Observed converts member domains into the engine's view of them.
func Observed(members []backend.Domain) []engine.Observed {
	out := make([]engine.Observed, 0, len(members))
	for _, d := range members {
		out = append(out, engine.Observed{Name: d.Name, Index: d.Record.Index, Status: d.Status, Applied: d.Record.Template})
	}
	return out
}

// Apply reconciles the group: scale-in, scale-out, then the updates the engine plans.
func (r *Reconciler) Apply(ctx context.Context, spec Spec) error {
	g := spec.Group
	members, err := r.Members(ctx, g.Name, g.Base)
	if err != nil {
		return err
	}
	plan := engine.PlanGroup(g, Observed(members))
	if len(plan.Blocked) > 0 {
		msgs := make([]string, len(plan.Blocked))
		for i, b := range plan.Blocked {
			msgs[i] = b.String()
		}
		return fmt.Errorf("the update policy does not allow these changes: %v", msgs)
	}
	tflog.Info(ctx, "reconciling group", map[string]any{
		"group": g.Name, "members": len(members), "target_size": g.TargetSize,
		"create": len(plan.Create), "delete": len(plan.Delete), "update": len(plan.Steps),
	})

	if err := forEachErr(ctx, r.workers(), "deleted", plan.Delete, func(ctx context.Context, name string) error {
		return r.deleteInstance(ctx, spec, name, recordOf(members, name))
	}); err != nil {
		return err
	}
	if err := forEachErr(ctx, r.workers(), "created", plan.Create, func(ctx context.Context, i int) error {
		return r.createInstance(ctx, spec, i)
	}); err != nil {
		return err
	}

	// Live changes disrupt nothing and run in parallel; restarts and replacements take members
	// down, so at most max_unavailable of them run at once.
	var live, disruptive []engine.Step
	for _, s := range plan.Steps {
		if s.Disruptive() {
			disruptive = append(disruptive, s)
		} else {
			live = append(live, s)
		}
	}
	byName := map[string]backend.Domain{}
	for _, d := range members {
		byName[d.Name] = d
	}
	step := func(ctx context.Context, s engine.Step) error { return r.update(ctx, spec, byName[s.Name], s) }
	if err := forEachErr(ctx, r.workers(), "updated", live, step); err != nil {
		return err
	}
	waves := max(g.Policy.MaxUnavailable, 1)
	if err := forEachErr(ctx, waves, "updated", disruptive, step); err != nil {
		return err
	}

	// Members no step touched still carry the previous group settings in their record.
	stepped := map[string]bool{}
	for _, s := range plan.Steps {
		stepped[s.Name] = true
	}
	var stale []backend.Domain
	for _, d := range members {
		if !stepped[d.Name] && !contains(plan.Delete, d.Name) && d.Record.GroupSpec != spec.GroupSpec {
			stale = append(stale, d)
		}
	}
	return forEachErr(ctx, r.workers(), "recorded", stale, func(ctx context.Context, d backend.Domain) error {
		rec := *d.Record
		rec.GroupSpec = spec.GroupSpec
		return r.Backend.SetRecord(ctx, d.Name, rec.Template.Description, rec)
	})
}

// Destroy deletes every member and every volume the group's naming scheme gives to a member,
// including those an interrupted create left without a domain.
func (r *Reconciler) Destroy(ctx context.Context, spec Spec) error {
	g := spec.Group
	members, err := r.Members(ctx, g.Name, g.Base)
	if err != nil {
		return err
	}
	names := make([]string, len(members))
	for i, d := range members {
		names[i] = d.Name
	}
	if err := forEachErr(ctx, r.workers(), "deleted", names, func(ctx context.Context, name string) error {
		return r.deleteInstance(ctx, spec, name, recordOf(members, name))
	}); err != nil {
		return err
	}
	vols, err := r.Backend.ListVolumes(ctx, spec.Pool, g.Base+"-")
	if err != nil {
		return err
	}
	devices := []string{regexp.QuoteMeta(engine.BootDeviceName)}
	for _, d := range g.Template.Disks {
		devices = append(devices, regexp.QuoteMeta(d.DeviceName))
	}
	owned := regexp.MustCompile(`^` + regexp.QuoteMeta(g.Base) + `-[1-9][0-9]*-(` + joinAlt(devices) + `)\.` + engine.VolumeFormat + `$`)
	var orphans []string
	for _, v := range vols {
		if owned.MatchString(v.Name) {
			orphans = append(orphans, v.Name)
		}
	}
	return forEachErr(ctx, r.workers(), "orphan volume deleted", orphans, func(ctx context.Context, name string) error {
		return r.Backend.DeleteVolume(ctx, spec.Pool, name)
	})
}

func joinAlt(parts []string) string {
	out := ""
	for i, p := range parts {
		if i > 0 {
			out += "|"
		}
		out += p
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

func recordOf(members []backend.Domain, name string) *backend.Record {
	for _, d := range members {
		if d.Name == name {
			return d.Record
		}
	}
	return nil
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
			tflog.Info(ctx, fmt.Sprintf("instance %d of %d %s", n, len(items), verb), map[string]any{"item": fmt.Sprint(it)})
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (r *Reconciler) workers() int { return max(r.Workers, 1) }
