// This file holds the group's plan-time parts of adoption by name (adopt_existing), abandon and
// the destroy plan's account of what it deletes and keeps.

package group

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// occupant is the planned group as much as a create's check of its place needs: its names, its
// size, what it adopts and abandons.
func (m *StatefulGroupModel) occupant(ctx context.Context, diags *diag.Diagnostics) engine.Group {
	g := engine.Group{Name: m.Name.ValueString(), Base: m.BaseInstanceName.ValueString(),
		AdoptExisting: m.AdoptExisting.ValueBool(), Abandon: m.abandoned(ctx, diags)}
	if providerdata.Known(m.TargetSize) {
		g.TargetSize = int(m.TargetSize.ValueInt64())
	}
	return g
}

// warnAdoptions tells, in the plan of a new group, the domains it adopts by their names: the
// plan's instances are not known before the group is, and this is what its apply does to them.
func warnAdoptions(names []string, diags *diag.Diagnostics) {
	if len(names) == 0 {
		return
	}
	lines := make([]string, 0, len(names))
	for _, n := range names {
		lines = append(lines, n+": "+engine.Planned{Kind: engine.PlannedAdopt, Why: "adopted existing domain (adopt_existing)"}.String())
	}
	diags.AddWarning("Existing domains will be adopted",
		strings.Join(lines, "\n")+"\n\nEach keeps its UUID, disks and power state: the apply writes the provider's record into its metadata, live, and records every disk it has as that member's preserved disk (NEVER deleted).")
}

// checkAbandonNames refuses, at plan, an abandon name that cannot be one of the group's members.
func checkAbandonNames(ctx context.Context, plan *StatefulGroupModel, diags *diag.Diagnostics) {
	if !providerdata.Known(plan.BaseInstanceName) {
		return
	}
	g := engine.Group{Base: plan.BaseInstanceName.ValueString(), Abandon: plan.abandoned(ctx, diags)}
	if bad := g.AbandonProblems(); len(bad) > 0 {
		diags.AddAttributeError(path.Root("abandon"), "Not a member's name",
			fmt.Sprintf("abandon lists %s, which no member of this group can be named: members are named %s-<index> (for example %s). Remove it from abandon.",
				strings.Join(bad, ", "), g.Base, engine.InstanceName(g.Base, 1)))
	}
}

// checkTakenNames refuses a plan that creates members under names other domains have: domains
// no provider created (one error, naming them and both ways in, as at create) and other groups'
// members. It reports whether it refused.
func checkTakenNames(o reconcile.Observation, g engine.Group, p engine.GroupPlan, diags *diag.Diagnostics) bool {
	names := make([]string, 0, len(p.Create))
	for _, c := range p.Create {
		names = append(names, c.Name)
	}
	held, other := o.TakenNames(g.Name, names)
	if len(held) > 0 {
		diags.Append(diagnostics.MemberNamesHeld(path.Root("base_instance_name"), &engine.NamesHeldError{Group: g.Name, Base: g.Base, Domains: held}))
	}
	if len(other) > 0 {
		diags.Append(diagnostics.MemberNamesTaken(path.Root("target_size"),
			fmt.Errorf("the plan creates members under names that other domains have: %s. Nothing was changed. Remove or rename those domains, or choose a smaller target_size", strings.Join(other, ", "))))
	}
	return len(held)+len(other) > 0
}

// warnAbandons tells the members the plan abandons, as ABANDON planned actions: they leave the
// instances list, and their domains and volumes stay as they are.
func warnAbandons(p engine.GroupPlan, diags *diag.Diagnostics) {
	if len(p.Abandon) == 0 {
		return
	}
	lines := make([]string, 0, len(p.Abandon))
	for _, o := range p.Abandon {
		lines = append(lines, o.Name+": "+engine.Planned{Kind: engine.PlannedAbandon, Why: "out of the group, domain and volumes left as they are"}.String())
	}
	diags.AddWarning("Members will be abandoned",
		strings.Join(lines, "\n")+"\n\nThe apply removes the provider's record from each domain's metadata and changes nothing else of it. The names stay out of scale-out while abandon lists them.")
}

// WarnDestroy tells, in a destroy plan, what the destroy deletes and what it keeps: the members
// whose domains go (adopted ones marked), the volumes that stay (NEVER rules, adopted members'
// disks), and the abandoned names it does not touch. A host that cannot be read is said, and the
// destroy plan goes on.
func (r *StatefulGroupResource) WarnDestroy(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) {
	if req.State.Raw.IsNull() {
		return
	}
	var state StatefulGroupModel
	if d := req.State.Get(ctx, &state); d.HasError() {
		return
	}
	name := state.Name.ValueString()
	s, _, found, err := r.Data.PlanRecord(ctx, name)
	if err == nil && !found {
		return
	}
	var p engine.GroupPlan
	var o reconcile.Observation
	if err == nil {
		p, o, err = r.Data.Reconciler.PreviewDestroy(ctx, s)
	}
	if err != nil {
		diags.AddWarning("Destroying group "+name,
			fmt.Sprintf("The host cannot be read to tell which members and volumes this destroy deletes (%s). The destroy deletes every member of the group and keeps the volumes their rules keep (NEVER, adopted members' disks).", err))
		return
	}
	if w := providerdata.NewDestroyWaits(name, p, o.Down); w != nil {
		// Nothing can be deleted yet: the account of what goes would say "no member", which
		// is not so.
		diags.AddWarning(w.Warning())
		return
	}
	if len(o.Down) > 0 {
		// No member of the group is there, so the destroy proceeds; what the host's pool holds
		// of the group is not seen by it.
		hosts := make([]string, 0, len(o.Down))
		for h := range o.Down {
			hosts = append(hosts, h)
		}
		sort.Strings(hosts)
		diags.AddWarning("Hosts of group "+name+" did not answer: "+strings.Join(hosts, ", "),
			"No member of the group is on them, so the destroy proceeds; volumes the group left in their pools (by an interrupted run) are not seen by it, and stay.")
	}
	diags.AddWarning("Destroying group "+name, destroyAccount(p.DestroyedMembers(o.Observed), p.Kept, s.Group.Abandon, p.LeftVolumes()))
}

// destroyAccount renders what a group's destroy deletes and keeps: earlier are the group's own
// volumes no member holds that stay (kept by an earlier scale-in under their delete_rule), left
// the volumes of the group's naming scheme that the group did not make, which stay too.
func destroyAccount(members []engine.Destroyed, earlier []engine.Left, abandoned []string, left []engine.Left) string {
	var gone, kept []string
	// Members are told in lines by how they are taken down, each line where its first member
	// comes in the plan's order.
	var ways []string
	byWay := map[string][]string{}
	for _, m := range members {
		who := m.Name
		if m.Adopted {
			who += " (adopted)"
		}
		gone = append(gone, who)
		way := takedownWords(m)
		if _, ok := byWay[way]; !ok {
			ways = append(ways, way)
		}
		byWay[way] = append(byWay[way], who)
		for _, v := range m.Kept {
			kept = append(kept, v+" (of "+who+")")
		}
	}
	for _, l := range earlier {
		kept = append(kept, fmt.Sprintf("%s on host %s (no member holds it: kept by an earlier scale-in under its delete_rule)", l.Volume, engine.HostOf(l.Host)))
	}
	for _, l := range left {
		kept = append(kept, l.String())
	}
	var b strings.Builder
	if len(gone) == 0 {
		b.WriteString("The group has no member to delete.")
	} else {
		for i, way := range ways {
			if i > 0 {
				b.WriteString("\n")
			}
			fmt.Fprintf(&b, "Members deleted (%s): %s.", way, strings.Join(byWay[way], ", "))
		}
	}
	if len(kept) > 0 {
		fmt.Fprintf(&b, "\nVolumes kept: %s.", strings.Join(kept, ", "))
	} else if len(gone) > 0 {
		b.WriteString("\nVolumes kept: none; every member's own volumes are deleted.")
	}
	if len(abandoned) > 0 {
		fmt.Fprintf(&b, "\nAbandoned, left as they are: %s.", strings.Join(abandoned, ", "))
	}
	return b.String()
}

// takedownWords says how a destroyed member's domain goes, as its deletion does it: a running
// member is asked to shut down; a paused, suspended or crashed one cannot act on that and is
// powered off at once, as is every member with shutdown_timeout "0s"; a stopped one is only
// undefined.
func takedownWords(m engine.Destroyed) string {
	switch m.Takedown {
	case engine.TakedownShutdown:
		return "domain shut down and undefined"
	case engine.TakedownPowerOff:
		if m.Halted != "" {
			return m.Halted.PowerOffWhy() + ", then undefined"
		}
		return `shutdown_timeout "0s": domain powered off at once and undefined`
	case engine.TakedownNone:
	}
	return "domain already stopped: undefined"
}
