package providerdata

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// ErrNoGroup is returned by a change of a policy or config whose group has no record.
func ErrNoGroup(group string) error {
	return fmt.Errorf("group %q does not exist on this libvirt host: create its virt_stateful_group first, and reference it (group = virt_stateful_group.<name>.name) so that Terraform creates it before this resource: %w", group, backend.ErrNotFound)
}

// ErrNothingToUndo is returned by the deletion of a policy or config that the group record does
// not hold (it never applied, or is gone from the record): nothing is written or applied.
var ErrNothingToUndo = errors.New("nothing to undo")

// HoldGroup serialises this provider's changes to the group and holds the group's lease on the
// host while they run (reconcile.Hold): another apply, from this machine or another, fails
// before changing anything until release is called.
func (d *ProviderData) HoldGroup(ctx context.Context, group string, claim *engine.Claim) (context.Context, func(finished bool), error) {
	held, release, _, err := d.holdObserved(ctx, group, claim, false)
	return held, release, err
}

// HoldGroupToDestroy is HoldGroup for the group's destroy (reconcile.HoldToDestroy).
func (d *ProviderData) HoldGroupToDestroy(ctx context.Context, group string, claim *engine.Claim) (context.Context, func(finished bool), error) {
	held, release, _, err := d.holdObserved(ctx, group, claim, true)
	return held, release, err
}

// holdObserved is HoldGroup that also returns the observation of the group's members this
// process made for its plan (the apply walk plans each resource again just before applying it)
// when it still holds: it was made under the generation of the group record the lease was taken
// on, so no provider changed the members in between (every change happens under the lease,
// between two writes of the record). It is nil otherwise. This spares the apply of a large group
// reading every member again moments after its plan did. destroy makes it the group's destroy's
// hold (reconcile.HoldToDestroy).
func (d *ProviderData) holdObserved(ctx context.Context, group string, claim *engine.Claim, destroy bool) (context.Context, func(finished bool), *observed, error) {
	unlock := d.lockGroup(group)
	prior, ok := d.forgetObservedGroup(group)
	d.ForgetObserved()
	hold := d.Reconciler.HoldFrom
	if destroy {
		hold = d.Reconciler.HoldToDestroy
	}
	held, release, from, err := hold(ctx, group, claim)
	if err != nil {
		unlock()
		return ctx, nil, nil, err
	}
	if !ok || prior.gen == 0 || prior.gen != from {
		return held, func(finished bool) { release(finished); unlock() }, nil, nil
	}
	return held, func(finished bool) { release(finished); unlock() }, &prior, nil
}

// LeaseCause adds to err why the held context ended, when it did: the lease was lost.
func LeaseCause(held context.Context, err error) error {
	if err != nil && held.Err() != nil {
		if cause := context.Cause(held); cause != nil && !errors.Is(err, cause) {
			return fmt.Errorf("%w (%v)", err, cause)
		}
	}
	return err
}

// LoadGroup reads the group record; found is false when the group has none.
func (d *ProviderData) LoadGroup(ctx context.Context, group string) (s engine.GroupState, found bool, err error) {
	s, _, found, err = d.LoadGroupRecord(ctx, group)
	return s, found, err
}

// LoadGroupRecord reads the group record with its owner and lease.
func (d *ProviderData) LoadGroupRecord(ctx context.Context, group string) (s engine.GroupState, m reconcile.Meta, found bool, err error) {
	s, m, err = d.Reconciler.LoadRecord(ctx, group)
	if errors.Is(err, backend.ErrNotFound) {
		return s, m, false, nil
	}
	return s, m, err == nil, err
}

// AddPlanDiagnostics reports every instance the plan may not change as an error on the attribute
// that bounds it, and, when the plan takes members down, one warning listing the restarts and
// replacements with their reasons. Everything else the plan does shows in each member's
// planned_action.
func AddPlanDiagnostics(diags *diag.Diagnostics, p engine.GroupPlan, bound path.Path) {
	// The members over their most disruptive allowed action are one error: one cause (a change
	// bigger than allowed), one attribute to change, however many members it reaches.
	var over []string
	var needs engine.Action
	for _, b := range p.Blocked {
		if b.Problem != "" {
			diags.AddError("Instance cannot be changed", b.String())
			continue
		}
		over = append(over, fmt.Sprintf("%s needs %s (%s), but its most disruptive allowed action is %s", b.Name, b.Needs, engine.JoinReasons(b.Reasons), b.Allowed))
		needs = max(needs, b.Needs)
	}
	switch len(over) {
	case 0:
	case 1:
		diags.AddAttributeError(bound, "Change not allowed by the most disruptive allowed action",
			fmt.Sprintf("Instance %s. Nothing was changed. Allow %s, or change less.", over[0], needs))
	default:
		diags.AddAttributeError(bound, "Change not allowed by the most disruptive allowed action",
			fmt.Sprintf("%d instances need more than their most disruptive allowed action:\n  %s\n\nNothing was changed. Allow %s, or change less.",
				len(over), strings.Join(over, "\n  "), needs))
	}
	var left []string
	for _, m := range p.Final {
		if m.Planned.Unhealed {
			left = append(left, m.Name+": "+m.Planned.Why)
		}
	}
	if len(left) > 0 {
		diags.AddWarning("Failed members left as they are", strings.Join(left, "\n"))
	}
	if len(p.Held) > 0 {
		// A change that waits for its host is pending, not dropped: said, so that a plan made
		// while a host is down is not taken for one with nothing to do.
		held := make([]string, len(p.Held))
		for i, w := range p.Held {
			held[i] = w.String()
		}
		diags.AddWarning("Changes wait for hosts that do not answer",
			strings.Join(held, "\n")+"\n\nNothing is done in their place. Once the host answers, the next plan makes them.")
	}
	if len(p.Delete) > 0 {
		var gone []string
		for _, name := range p.Delete {
			if why := p.DeletedWhy(name); why != "" {
				gone = append(gone, name+": "+why)
			} else {
				gone = append(gone, name)
			}
		}
		diags.AddWarning("Members will be removed", strings.Join(gone, "\n")+"\n\nTheir preserved disks follow their delete_rule.")
	}
	if left := p.LeftVolumes(); len(left) > 0 {
		names := make([]string, len(left))
		for i, l := range left {
			names[i] = l.String()
		}
		diags.AddWarning("Volumes the group did not make are left",
			strings.Join(names, "\n")+"\n\nTheir names are of the group's scheme, but the group's record does not list them as made by the group: it never deletes, writes over or attaches them. Delete them yourself (virsh vol-delete) if they are garbage.")
	}
	var lines []string
	for _, s := range p.Steps {
		if s.Disruptive() {
			lines = append(lines, s.Name+": "+s.Planned().String())
		}
	}
	if len(lines) > 0 {
		how := "stopped (ACPI shutdown, then power off after shutdown_timeout)"
		switch p.StopsBy() {
		case engine.StopPowerOff:
			how = `powered off at once (shutdown_timeout = "0s", no ACPI shutdown)`
		case engine.StopHalted:
			how = "powered off at once (paused, suspended or crashed, they cannot act on an ACPI shutdown)"
		default:
			// StopGraceful (and StopNone, which has no disruptive step to say it of) keep the default.
		}
		diags.AddWarning("Members will be taken down",
			fmt.Sprintf("%s\n\nThey are %s %d at a time at most (max_unavailable); the rollout stops at the first failure.",
				strings.Join(lines, "\n"), how, max(1, maxWave(p))))
	}
}

// maxWave is the number of operations of the plan's largest wave of restarts and replacements.
func maxWave(p engine.GroupPlan) int {
	n := 0
	for _, w := range p.Waves {
		if len(w.Ops) > 0 && (w.Ops[0].Kind == engine.OpRestart || w.Ops[0].Kind == engine.OpReplace) {
			n = max(n, len(w.Ops))
		}
	}
	return n
}

// StaleError refuses an apply whose plan was made before another apply changed the group.
type StaleError struct{ Group string }

func (e *StaleError) Error() string {
	return fmt.Sprintf("group %s was changed by another apply since this plan was made (another working directory, or a copy of this state, applied a different configuration). Nothing was changed: run terraform apply again to plan from what the host has now", e.Group)
}

// refused tells whether err is an apply refused before it changed anything.
func refused(err error) bool {
	var lease *engine.LeaseError
	var owner *engine.OwnerError
	var exists *engine.ExistsError
	var stale *StaleError
	return errors.As(err, &lease) || errors.As(err, &owner) || errors.As(err, &exists) || errors.As(err, &stale)
}

// ApplyError renders a failed reconcile as a diagnostic detail; started tells whether the apply
// started an operation on a member before it failed (reconcile.Started). A rollout's error says
// itself what was done; otherwise what was done is told to be kept only when something was.
func ApplyError(err error, started bool) string {
	var blocked *reconcile.BlockedError
	var rollout *reconcile.RolloutError
	switch {
	case errors.As(err, &blocked) || errors.As(err, &rollout) || refused(err):
		return err.Error()
	case !started:
		return err.Error() + "\n\nNo member was changed; the next apply plans again from what is on the host."
	}
	return err.Error() + "\n\nWhat was done is kept and marked on each instance; the next apply finishes or undoes the rest."
}

// UnreachableRecord handles a group record that cannot be read because its host does not
// answer: a read keeps what the state has, and a plan with no change to the resource goes on,
// each with a warning; a change is refused. It reports whether err was that.
func UnreachableRecord(err error, change bool, diags *diag.Diagnostics) bool {
	var down *reconcile.RecordHostError
	if !errors.As(err, &down) {
		return false
	}
	if change {
		diags.Append(diagnostics.RecordUnreachable(down.Group, down))
		return true
	}
	diags.Append(diagnostics.RecordUnreachableWarning(down, "What the state has is kept."))
	return true
}

// PlannedGroup is what the plan of a group it creates tells the plans of the group's policy and
// per-instance configs, made after the group's in the same process (they refer to it), so that
// they check their inputs before the group exists: its pool, and its template's disks when they
// are known.
type PlannedGroup struct {
	Pool  string
	Disks []string // nil when not known at plan
	// Group is the group as planned, nil when its template is not known at plan: what a
	// config's pinned addresses are checked against (its interfaces, networks and hosts).
	Group *engine.Group
	// Pins are the addresses the configs planned so far in this process pin, by instance, so
	// that two configs of the new group pinning one address are refused at plan as they are once
	// the group exists.
	Pins *plannedPins
}

// plannedPins are the pinned addresses of the per-instance configs planned for a group this
// plan creates.
type plannedPins struct {
	mu sync.Mutex
	by map[string][]engine.NetworkIP
}

// Others notes the pins of instance name, and returns the configs planned before it but name's
// own, as entries of the group's record would have them.
func (p *plannedPins) Others(name string, pins []engine.NetworkIP) map[string]engine.ConfigEntry {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.by == nil {
		p.by = map[string][]engine.NetworkIP{}
	}
	p.by[name] = pins
	out := map[string]engine.ConfigEntry{}
	for other, ips := range p.by {
		if other != name {
			out[other] = engine.ConfigEntry{Config: engine.InstanceConfig{NetworkIPs: ips}}
		}
	}
	return out
}

// MadeFor tells the sources that are the volumes the group's create makes for the instance:
// its boot volume and its template disks' (a config may name them, to keep them preserved).
// With the template's disks unknown, any volume named after the instance is.
func (g PlannedGroup) MadeFor(instance string) func(source string) bool {
	return func(source string) bool {
		if g.Disks == nil {
			return strings.HasPrefix(source, instance+"-") && strings.HasSuffix(source, "."+engine.VolumeFormat)
		}
		return source == engine.VolumeName(instance, engine.BootDeviceName) || slices.ContainsFunc(g.Disks, func(d string) bool { return source == engine.VolumeName(instance, d) })
	}
}

// PlanCreate notes, while planning, that the plan creates group name.
func (d *ProviderData) PlanCreate(name string, g PlannedGroup) {
	if prev, ok := d.PlannedCreate(name); ok && prev.Pins != nil {
		g.Pins = prev.Pins // the apply plans the group again: the configs' pins stay noted
	} else {
		g.Pins = &plannedPins{}
	}
	d.creating.Store(name, g)
}

// PlannedCreate is the group this plan creates under that name, as planCreate noted it.
func (d *ProviderData) PlannedCreate(name string) (PlannedGroup, bool) {
	v, ok := d.creating.Load(name)
	if !ok {
		return PlannedGroup{}, false
	}
	return v.(PlannedGroup), true
}

// GroupsOn lists the groups whose records are on the given hosts, by name, each once: a name on
// more than one host is the group of the first host in the provider's order, the record every
// read of the group finds (reconcile's findRecord). A host that does not answer is a warning.
func (d *ProviderData) GroupsOn(ctx context.Context, hosts []string) ([]HostGroup, diag.Diagnostics) {
	var diags diag.Diagnostics
	seen := map[string]bool{}
	var out []HostGroup
	for _, h := range hosts {
		b, err := d.Host(h)
		var names []string
		if err == nil {
			hctx, cancel := reconcile.HostContext(ctx)
			names, err = b.ListGroups(hctx)
			err = reconcile.HostErr(ctx, hctx, h, err)
			cancel()
		}
		if err != nil {
			tflog.Warn(ctx, "host cannot be listed: its groups are left out", map[string]any{"host": h, "error": err.Error()})
			diags.Append(diagnostics.HostNotListed(h, err))
			continue
		}
		tflog.Debug(ctx, "group records listed", map[string]any{"host": h, "groups": len(names)})
		for _, n := range names {
			if !seen[n] {
				seen[n] = true
				out = append(out, HostGroup{Name: n, Host: h})
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, diags
}

// HostGroup is a group whose record is on host.
type HostGroup struct{ Name, Host string }
