// Package reconcile carries out the engine's plans against a backend: it keeps the group record,
// creates, updates and deletes the members of a group with bounded concurrency, in the order the
// plan gives, writes in-flight markers around changes, and logs progress so that TF_LOG=INFO
// shows what is happening.
package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// DefaultWorkers bounds how many instances are created, refreshed or deleted at once.
const DefaultWorkers = 4

// Reconciler drives the backends of a group's hosts.
type Reconciler struct {
	// Backend is the default host (engine.DefaultHost), the provider's own uri.
	Backend backend.Backend
	// Hosts are the other hosts by name, the provider's host blocks. Every call that reaches
	// libvirt goes through host: one host is a map of one.
	Hosts map[string]backend.Backend
	// URIs are the hosts' libvirt URIs by name (engine.DefaultHost too): where a live move's
	// source daemon connects to its target.
	URIs    map[string]string
	Workers int
	// Env is what plans depend on besides the record and the host: the provider's run.
	Env engine.Env
	// Holder names this apply in the leases it takes on groups: who, where, which run.
	Holder string
	// HolderHost and HolderPID are this provider's machine and process, written in its leases.
	HolderHost string
	HolderPID  int
	// HolderGone tells whether the holder of a lease is known to be dead; nil means never known.
	HolderGone func(engine.Lease) bool
	// Now is the clock leases are dated by, and waits for ready members read; nil means
	// time.Now.
	Now func() time.Time
	// Sleep waits d or until ctx ends, on the same clock as Now: between the probes of a member
	// waited for. Nil means a real timer; tests give a fake clock's.
	Sleep func(ctx context.Context, d time.Duration) error
	// LeaseTTL is how long a lease lasts unrenewed; zero means DefaultLeaseTTL.
	LeaseTTL time.Duration
	// After is the timer of an observation's probe bound, on the same clock as Now: a probe
	// that never answers is cut when it fires. Nil means time.After; tests give a fake clock's.
	After func(time.Duration) <-chan time.Time
	// ProbeBound is the most one observation spends probing its members; zero means
	// DefaultProbeBound.
	ProbeBound time.Duration
	// StallBound is how long a volume stream of a move may pass no byte before it is cut off and
	// made again; zero means DefaultStallBound.
	StallBound time.Duration
	// ReadsFiles tells whether a host's files are this machine's (its daemon is reached through
	// the local socket): a source_image outside the pools there is copied into the group's pool
	// through a descriptor (images.go). Nil: no host's.
	ReadsFiles func(host string) bool
}

// New returns a reconciler with the default worker count.
func New(b backend.Backend) *Reconciler { return &Reconciler{Backend: b, Workers: DefaultWorkers} }

// Host is the backend of the provider's host by name: engine.DefaultHost (or "") is the
// provider's own uri, any other name one of its host blocks. A name the provider does not have
// is an *UnknownHostError, never another host: a check or a change cannot ask the wrong host.
func (r *Reconciler) Host(name string) (backend.Backend, error) { return r.host(name) }

// host is the backend of a host by name ("" and engine.DefaultHost: the provider's uri).
func (r *Reconciler) host(name string) (backend.Backend, error) {
	if name == "" || name == engine.DefaultHost {
		if b, ok := r.Hosts[engine.DefaultHost]; ok {
			return b, nil
		}
		return r.Backend, nil
	}
	if b, ok := r.Hosts[name]; ok {
		return b, nil
	}
	return nil, &UnknownHostError{Host: name, Known: r.HostNames()}
}

// HostNames lists the hosts this reconciler reaches: the default host first, then the others by
// name.
func (r *Reconciler) HostNames() []string {
	out := []string{engine.DefaultHost}
	for h := range r.Hosts {
		if h != engine.DefaultHost {
			out = append(out, h)
		}
	}
	sort.Strings(out[1:])
	return out
}

// UnknownHostError is a host name no provider host block gives.
type UnknownHostError struct {
	Host  string
	Known []string
}

func (e *UnknownHostError) Error() string {
	return fmt.Sprintf("host %q is not one of the provider's hosts (%s): add a host block named %q to the provider, or leave it out of distribution_policy",
		e.Host, strings.Join(e.Known, ", "), e.Host)
}

// hostsOf lists the hosts the group's members may be on: its distribution, then the hosts its
// placement names that the distribution no longer lists. A host the provider no longer has is
// left out: the user removed it, and the plan forgets its members (see engine.Env.Hosts).
func (r *Reconciler) hostsOf(ctx context.Context, s engine.GroupState) []string {
	hosts := slices.Clone(s.Group.HostList())
	var more []string
	for _, h := range s.Placement {
		h = engine.HostOf(h)
		if slices.Contains(hosts, h) || slices.Contains(more, h) {
			continue
		}
		if _, err := r.host(h); err != nil {
			tflog.Warn(ctx, "a host the group placed members on is no longer one of the provider's: they are forgotten", map[string]any{"group": s.Group.Name, "host": h})
			continue
		}
		more = append(more, h)
	}
	sort.Strings(more)
	return append(hosts, more...)
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
	processCounts.enginePlans.Add(1)
	return engine.PlanGroup(o.withInventory(s), o.Observed, r.planEnv(o))
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
	return r.ApplyObserved(ctx, s, nil, check)
}

// ApplyObserved is ApplyChecked from an observation of the group's members made moments before
// under the same lease (nil: observe now), so that an apply does not read every member twice.
func (r *Reconciler) ApplyObserved(ctx context.Context, s engine.GroupState, observed *Observation, check func(engine.GroupPlan) error) error {
	var plan engine.GroupPlan
	var o Observation
	if observed != nil {
		o = *observed
		plan = r.PlanFrom(s, o)
	} else {
		var err error
		if plan, o, err = r.Preview(ctx, s); err != nil {
			return err
		}
	}
	if len(plan.Blocked) > 0 {
		return &BlockedError{plan.Blocked}
	}
	if check != nil {
		if err := check(plan); err != nil {
			return err
		}
	}
	return r.ApplyPlanned(ctx, s, o, plan)
}

// ApplyPlanned executes a plan made moments before, under the same lease, from s (the group as
// its record now has it) and o: the plan of a change checked before its record was written runs
// as it was checked, without planning the group again. A plan with blocked instances runs
// nothing.
func (r *Reconciler) ApplyPlanned(ctx context.Context, s engine.GroupState, o Observation, plan engine.GroupPlan) error {
	s = o.withInventory(s)
	if len(plan.Blocked) > 0 {
		return &BlockedError{plan.Blocked}
	}
	tflog.Info(ctx, "reconciling group", map[string]any{
		"group": s.Group.Name, "members": len(o.Observed), "target_size": s.Group.TargetSize,
		"create": len(plan.Create), "delete": len(plan.Delete), "update": len(plan.Steps), "waiting_configs": len(plan.Waiting),
		"waves": len(plan.Waves), "operations": plan.Ops(), "hosts_down": len(o.Down),
	})
	// Where members go is written before any is made or deleted, so that one the run leaves
	// half-made is still known to be on its host if that host stops answering; once the run
	// is over, the record keeps only the members there are.
	// The same write holds the group's inventory with an intent for every object the run makes
	// (engine.GroupPlan.Inventory): one write before the run for all of them, and one after it
	// that confirms them (FinalInventory). A run cut off leaves intents, which the next plan
	// settles from what the hosts show.
	if err := r.place(ctx, &s, plan.Placement, plan.Creating, plan.Inventory); err != nil {
		return err
	}
	if err := r.recordImages(ctx, &s, plan.ImageVolumes()); err != nil {
		return err
	}
	if err := r.Execute(ctx, s, plan); err != nil {
		// The members this run made are members: were their host to stop answering, they are
		// UNKNOWN, not creations that may never have happened. The intents of what the
		// operations that never ran would have made go (engine's InventoryAfterStop).
		var re *RolloutError
		if errors.As(err, &re) {
			if perr := r.place(ctx, &s, plan.Placement, plan.StillCreating(re.Created), plan.InventoryAfterStop(re.Ran)); perr != nil {
				tflog.Warn(ctx, "cannot write which members the stopped run made", map[string]any{"group": s.Group.Name, "error": perr.Error()})
			}
			return r.rollback(ctx, s, plan, re)
		}
		return err
	}
	// The snapshots the run took are kept from now, when every member it changed is ready, for
	// the retention the policy gives.
	return r.place(ctx, &s, plan.FinalPlacement(), nil, plan.FinalInventory.KeepSnapshots(r.now()))
}

// place writes the group's placement to its record when it changed, and into s. Every group
// keeps it, on one host as on several: it is also how a listing of the group knows which
// domains can be members (engine's Candidates).
//
// creating are the members of placement being created (engine.GroupState.Creating).
func (r *Reconciler) place(ctx context.Context, s *engine.GroupState, placement map[string]string, creating []string, inv engine.Inventory) error {
	if s.Placing(true, placement, creating, inv) == engine.PlacementKept {
		return nil
	}
	_, err := r.changeStored(ctx, s.Group.Name, s.Pool, nil, func(st *stored, exists bool) error {
		switch s.Placing(exists, placement, creating, inv) {
		case engine.PlacementNotNeeded:
			return errNoPlacement
		case engine.PlacementLost:
			return fmt.Errorf("group %s lost its record during the apply: %w", s.Group.Name, backend.ErrNotFound)
		case engine.PlacementKept, engine.PlacementWritten:
		}
		st.Placement, st.Placed, st.Creating, st.Inventory = placement, true, creating, inv
		return nil
	}, true)
	switch {
	case errors.Is(err, errNoPlacement):
		return nil
	case err == nil:
		s.Placement, s.Placed, s.Creating, s.Inventory = placement, true, creating, inv
	}
	return err
}

// errNoPlacement stops place from writing a record that is not there and need not be.
var errNoPlacement = errors.New("no record to keep the placement in")

// RemoveInstance deletes one member for good, as remove_instance_on_destroy asks: its preserved
// disks follow their delete rules.
func (r *Reconciler) RemoveInstance(ctx context.Context, s engine.GroupState, name string) error {
	o, err := r.observe(ctx, s)
	if err != nil {
		return err
	}
	env := r.planEnv(o)
	return r.Execute(ctx, s, engine.PlanRemove(o.withInventory(s), o.Observed, name, env))
}

// Destroy deletes every member, the group's volumes that no member holds, as the engine decides
// their fates, and then the group record. It runs under the hold HoldToDestroy takes, which marks
// the run's release for a destroy run again after a cut-off.
func (r *Reconciler) Destroy(ctx context.Context, s engine.GroupState) error {
	plan, _, err := r.PreviewDestroy(ctx, s)
	if err != nil {
		return err
	}
	if len(plan.Blocked) > 0 {
		return &BlockedError{plan.Blocked}
	}
	if err := r.Execute(ctx, s, plan); err != nil {
		return err
	}
	rh, b, err := r.recordHost(ctx, s.Group.Name, s.Group.RecordHost())
	if err != nil {
		return err
	}
	// What the group made and keeps is written down before its record goes, so that the next
	// group of its name owns it (engine/kept.go); killed before, the next destroy writes it.
	if err := writeKept(ctx, rh, b, s.Group.Name, s.Pool, plan.KeptRecord); err != nil {
		return err
	}
	// The record is going: what the hold knew of it must not be written back, by the lease's
	// renewal meanwhile or by the release after. Dropped before (a renewal then reads the host,
	// as it did before the hold kept the record) and after (a renewal's read may have kept it).
	heldOf(ctx, s.Group.Name).drop()
	err = b.DeleteGroupRecord(ctx, s.Pool, s.Group.Name)
	heldOf(ctx, s.Group.Name).drop()
	return err
}

// PreviewDestroy plans the group's destroy from what the hosts have now, and changes nothing:
// what a destroy plan tells, and what Destroy runs.
func (r *Reconciler) PreviewDestroy(ctx context.Context, s engine.GroupState) (engine.GroupPlan, Observation, error) {
	o, err := r.observeTags(ctx, s, false)
	if err != nil {
		return engine.GroupPlan{}, o, err
	}
	volumes := map[string][]string{}
	for _, h := range r.hostsOf(ctx, s) {
		if _, down := o.Down[h]; down {
			continue
		}
		b, err := r.host(h)
		if err != nil {
			return engine.GroupPlan{}, o, err
		}
		listed, ok := o.HostVolumes[h]
		var names []string
		err = readHost(ctx, h, func(ctx context.Context) error {
			var err error
			names, err = poolVolumes(ctx, b, s, h, listed, ok)
			return err
		})
		switch {
		case errors.Is(err, backend.ErrNotFound):
			// The pool went behind Terraform's back, and its volumes with it: the members and
			// the record are still to go.
			tflog.Warn(ctx, "the group's storage pool is gone; destroying the rest", map[string]any{"group": s.Group.Name, "pool": s.Pool, "host": h})
		case err != nil:
			return engine.GroupPlan{}, o, err
		}
		volumes[h] = names
	}
	env := r.Env
	env.Volumes = o.Volumes
	return engine.PlanDestroy(o.withInventory(s), o.Observed, volumes, env), o, nil
}

// poolVolumes are the volumes of the group's pool on host h for its destroy: listed again after a
// refresh of the pool, or as the observation listed them (listed, when it did: ok) moments ago
// under the same lease when the pool could not be refreshed.
func poolVolumes(ctx context.Context, b backend.Volumes, s engine.GroupState, h string, listed []string, ok bool) ([]string, error) {
	refreshed := false
	switch err := b.RefreshPool(ctx, s.Pool); {
	case err == nil:
		refreshed = true
	case !errors.Is(err, backend.ErrNotFound):
		// The sweep may miss a file libvirt wrote (an EFI member's NVRAM); the rest goes.
		tflog.Warn(ctx, "the group's storage pool could not be refreshed before the sweep of its volumes", map[string]any{"group": s.Group.Name, "pool": s.Pool, "host": h, "error": err.Error()})
	}
	if ok && !refreshed {
		return listed, nil
	}
	return b.ListVolumeNames(ctx, s.Pool, "")
}

func (r *Reconciler) workers() int { return max(r.Workers, 1) }

// sleep waits d on the reconciler's clock (Sleep, else After's timer), or until ctx ends.
func (r *Reconciler) sleep(ctx context.Context, d time.Duration) error {
	if r.Sleep != nil {
		return r.Sleep(ctx, d)
	}
	return waitFor(ctx, r.after(max(d, 0)))
}

// waitFor waits until the timer fires or ctx ends.
func waitFor(ctx context.Context, timer <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer:
		return nil
	}
}
