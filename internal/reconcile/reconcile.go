// Package reconcile carries out the engine's plans against a backend: it keeps the group record,
// creates, updates and deletes the members of a group with bounded concurrency, in the order the
// plan gives, writes in-flight markers around changes, and logs progress so that TF_LOG=INFO
// shows what is happening.
package reconcile

import (
	"context"
	"errors"
	"sort"
	"strings"
	"time"

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
	// Env is what plans depend on besides the record and the host: the provider's run.
	Env engine.Env
	// Holder names this apply in the leases it takes on groups: who, where, which run.
	Holder string
	// HolderHost and HolderPID are this provider's machine and process, written in its leases.
	HolderHost string
	HolderPID  int
	// HolderGone tells whether the holder of a lease is known to be dead; nil means never known.
	HolderGone func(Lease) bool
	// Now is the clock leases are dated by; nil means time.Now.
	Now func() time.Time
	// LeaseTTL is how long a lease lasts unrenewed; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
}

// New returns a reconciler with the default worker count.
func New(b backend.Backend) *Reconciler { return &Reconciler{Backend: b, Workers: DefaultWorkers} }

// Observation is the group's members as they are on the host.
type Observation struct {
	Observed []engine.Observed
	Domains  map[string]backend.Domain
	// Volumes are the names of the volumes in the group's pool; nil when the pool cannot be
	// listed.
	Volumes map[string]bool
	// All is every domain on the host by name, members or not, as the same listing read them.
	All map[string]backend.Domain
}

// Observe lists the group's members: every domain whose record names the group, and every
// domain no provider created that one of the group's configs names (to be adopted).
func (r *Reconciler) Observe(ctx context.Context, s engine.GroupState) (Observation, error) {
	doms, err := r.Backend.ListDomains(ctx, "")
	if err != nil {
		return Observation{}, err
	}
	// The pool's volumes tell which volumes the members need are gone; a pool that cannot be
	// listed tells nothing.
	var present map[string]bool
	if vols, err := r.Backend.ListVolumes(ctx, s.Pool, ""); err == nil {
		present = make(map[string]bool, len(vols))
		for _, v := range vols {
			present[v.Name] = true
		}
	}
	o := Observation{Domains: map[string]backend.Domain{}, Volumes: present, All: make(map[string]backend.Domain, len(doms))}
	for _, d := range doms {
		o.All[d.Name] = d
		var obs engine.Observed
		switch {
		case d.Record != nil && d.Record.Group == s.Group.Name:
			if d.Record.Index > 0 && d.Name != engine.InstanceName(s.Group.Base, d.Record.Index) {
				continue
			}
			obs = engine.Observed{Name: d.Name, Index: d.Record.Index, Status: d.Status, Instance: d.Record.Instance, UUID: d.UUID,
				Attached: Shape(d, s.Pool).Disks, VCPU: d.VCPU, MemoryMiB: d.MemoryMiB, Missing: missingVolumes(d, s.Pool, present), StateReason: d.Reason}
		case d.Record == nil:
			if _, ok := s.Configs[d.Name]; !ok {
				continue
			}
			index, _ := engine.ParseInstanceIndex(s.Group.Base, d.Name)
			shape := Shape(d, s.Pool)
			obs = engine.Observed{Name: d.Name, Index: index, Status: d.Status, Unmanaged: true, Attached: shape.Disks, UUID: d.UUID,
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

// missingVolumes lists the volumes of the pool that the domain's disks name and the pool lacks.
func missingVolumes(d backend.Domain, pool string, present map[string]bool) []string {
	if present == nil {
		return nil
	}
	var out []string
	for _, x := range d.Disks {
		if x.Volume != "" && (x.Pool == pool || x.Pool == "") && !present[x.Volume] {
			out = append(out, x.Volume)
		}
	}
	return out
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
	return r.PlanFrom(s, o), o, nil
}

// PlanFrom plans the group from an observation already made of it.
func (r *Reconciler) PlanFrom(s engine.GroupState, o Observation) engine.GroupPlan {
	env := r.Env
	env.Now, env.Volumes = r.now(), o.Volumes
	return engine.PlanGroup(s, o.Observed, env)
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

// Apply plans the group from what is on the host and executes that plan.
func (r *Reconciler) Apply(ctx context.Context, s engine.GroupState) error {
	return r.ApplyChecked(ctx, s, nil)
}

// ApplyChecked is Apply with a check of the plan before anything runs: an error from check
// stops the apply with nothing changed.
func (r *Reconciler) ApplyChecked(ctx context.Context, s engine.GroupState, check func(engine.GroupPlan) error) error {
	plan, o, err := r.Preview(ctx, s)
	if err != nil {
		return err
	}
	if len(plan.Blocked) > 0 {
		return &BlockedError{plan.Blocked}
	}
	if check != nil {
		if err := check(plan); err != nil {
			return err
		}
	}
	tflog.Info(ctx, "reconciling group", map[string]any{
		"group": s.Group.Name, "members": len(o.Observed), "target_size": s.Group.TargetSize,
		"create": len(plan.Create), "delete": len(plan.Delete), "update": len(plan.Steps), "waiting_configs": len(plan.Waiting),
		"waves": len(plan.Waves), "operations": plan.Ops(),
	})
	return r.Execute(ctx, s, plan)
}

// RemoveInstance deletes one member for good, as remove_instance_on_destroy asks: its preserved
// disks follow their delete rules.
func (r *Reconciler) RemoveInstance(ctx context.Context, s engine.GroupState, name string) error {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return err
	}
	return r.Execute(ctx, s, engine.PlanRemove(s, o.Observed, name, r.Env))
}

// Destroy deletes every member, the group's volumes that no member holds, as the engine decides
// their fates, and then the group record.
func (r *Reconciler) Destroy(ctx context.Context, s engine.GroupState) error {
	o, err := r.Observe(ctx, s)
	if err != nil {
		return err
	}
	vols, err := r.Backend.ListVolumes(ctx, s.Pool, "")
	switch {
	case errors.Is(err, backend.ErrNotFound):
		// The pool went behind Terraform's back, and its volumes with it: the members and the
		// record are still to go.
		tflog.Warn(ctx, "the group's storage pool is gone; destroying the rest", map[string]any{"group": s.Group.Name, "pool": s.Pool})
		vols = nil
	case err != nil:
		return err
	}
	names := make([]string, len(vols))
	for i, v := range vols {
		names[i] = v.Name
	}
	if err := r.Execute(ctx, s, engine.PlanDestroy(s, o.Observed, names, r.Env)); err != nil {
		return err
	}
	return r.Backend.DeleteGroupRecord(ctx, s.Pool, s.Group.Name)
}

func (r *Reconciler) workers() int { return max(r.Workers, 1) }
