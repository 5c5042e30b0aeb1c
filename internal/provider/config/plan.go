package config

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// configHosts are the hosts a config's sources are checked on: its member's host, where it is or
// where the plan creates it; for a member not placed yet (its config waits for a scale-out), every
// host of the group, since it may be created on any of them. A host that does not answer is left
// out: its member is UNKNOWN and left as it is, and the group's plan warns about the host.
func configHosts(s engine.GroupState, p engine.GroupPlan, o reconcile.Observation, name string) []string {
	hosts := s.Group.HostList()
	if h, ok := p.Placement[name]; ok {
		hosts = []string{h}
	} else if h, ok := s.Placement[name]; ok {
		hosts = []string{h}
	}
	var out []string
	for _, h := range hosts {
		if _, down := o.Down[engine.HostOf(h)]; !down {
			out = append(out, engine.HostOf(h))
		}
	}
	return out
}

// checkSources checks, on each of hosts (the member's: configHosts), every disk source the plan
// adds or changes, but those the apply makes itself (made, when not nil). With no pool (the
// group's is not known), only absolute paths are checked: a volume name means nothing without
// its pool.
func (r *PerInstanceConfigResource) checkSources(ctx context.Context, req resource.ModifyPlanRequest, plan PerInstanceConfigModel, pool string, hosts []string, made func(source string) bool, diags *diag.Diagnostics) {
	if plan.PreservedState == nil {
		return
	}
	before := map[string]string{}
	if !req.State.Raw.IsNull() {
		var state PerInstanceConfigModel
		diags.Append(req.State.Get(ctx, &state)...)
		if state.PreservedState != nil {
			for _, d := range state.PreservedState.Disk {
				before[d.DeviceName.ValueString()] = d.Source.ValueString()
			}
		}
	}
	disks := map[string]map[string][]string{} // the hosts' domains' disks, read once each
	for _, d := range plan.PreservedState.Disk {
		if !providerdata.Known(d.DeviceName, d.Source) {
			continue
		}
		dev, src := d.DeviceName.ValueString(), d.Source.ValueString()
		if prev, ok := before[dev]; (ok && prev == src) || (pool == "" && !strings.HasPrefix(src, "/")) || (made != nil && made(src)) {
			continue
		}
		for _, h := range hosts {
			b, err := r.Data.Host(h)
			if err != nil {
				continue // a host the provider no longer has: its members are forgotten
			}
			at := providerdata.SetBlockPath(path.Root("preserved_state").AtName("disk"), map[string]attr.Value{
				"device_name": d.DeviceName, "source": d.Source, "mode": d.Mode, "delete_rule": d.DeleteRule}).AtName("source")
			had := diags.ErrorsCount()
			hctx, cancel := reconcile.HostContext(ctx)
			info := providerdata.CheckSource(hctx, diags, b, h, at, fmt.Sprintf("disk %q source", dev), pool, src, r.Data.AllowHostPaths)
			if diags.ErrorsCount() > had {
				cancel()
				continue
			}
			// A source another domain has is refused too (not one the apply makes: made).
			if _, read := disks[h]; !read {
				if disks[h], read = providerdata.DiskSourcesOf(hctx, diags, b, h, at); !read {
					cancel()
					continue
				}
			}
			cancel()
			providerdata.CheckSourceFree(diags, b, h, at, fmt.Sprintf("preserved_state.disk %q source", dev), plan.Name.ValueString(), src, info, disks[h])
		}
	}
}

// ModifyPlan shows what the config does to its instance, refuses at plan time a change beyond
// the instance's allowed action, and plans the status the apply leaves.
func (r *PerInstanceConfigResource) ModifyPlan(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "per-instance config plan")
	if req.Plan.Raw.IsNull() || r.Data.Destroying(ctx) {
		// A destroy checks nothing of the configuration against the host (providerdata/destroying.go).
		return
	}
	var plan PerInstanceConfigModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || !plan.known() {
		return
	}
	if checkConfigMetadata(ctx, &resp.Diagnostics, plan.PreservedState); resp.Diagnostics.HasError() {
		return
	}
	group, name := plan.Group.ValueString(), plan.Name.ValueString()
	s, meta, found, err := r.Data.PlanRecord(ctx, group)
	if providerdata.UnreachableRecord(err, !req.Plan.Raw.Equal(req.State.Raw), &resp.Diagnostics) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	if !found {
		r.checkNameFree(ctx, req, group, name, &resp.Diagnostics)
		// The group is not on the host yet. Created in this apply, it was planned before this
		// config, which refers to it, and its plan left its pool: the sources are checked now,
		// before the apply makes any member, as they would be once the group exists. A group this
		// plan does not create (or a config whose group is named literally, planned before it)
		// leaves no pool: then only absolute paths are checked.
		g, _ := r.Data.PlannedCreate(group)
		r.checkSources(ctx, req, plan, g.Pool, []string{engine.DefaultHost}, g.MadeFor(name), &resp.Diagnostics)
		r.checkPlannedPins(ctx, &resp.Diagnostics, g, name, plan)
		return
	}
	if err := r.Data.Reconciler.CheckLease(group, meta); err != nil {
		resp.Diagnostics.Append(diagnostics.GroupLeaseHeld(err))
		return
	}
	entry, diags := plan.entry(ctx)
	resp.Diagnostics.Append(diags...)
	s = withConfig(s, name, entry)
	p, o, err := r.Data.Preview(ctx, s)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupPlan(group, err))
		return
	}
	r.checkSources(ctx, req, plan, s.Pool, configHosts(s, p, o, name), nil, &resp.Diagnostics)
	r.checkPins(ctx, &resp.Diagnostics, s, name, entry.Config.NetworkIPs, configHosts(s, p, o, name))
	if resp.Diagnostics.HasError() {
		return
	}
	var mine engine.GroupPlan
	mine.Waiting = p.Waiting
	for _, st := range p.Steps {
		if st.Name == name {
			mine.Steps = append(mine.Steps, st)
		}
	}
	for _, b := range p.Blocked {
		if b.Name == name {
			mine.Blocked = append(mine.Blocked, b)
		}
	}
	for _, st := range mine.Steps {
		if st.Adopt && !providerdata.ConsentsToAdopt(ctx, req, &resp.Diagnostics) {
			providerdata.AddAdoptionRefused(&resp.Diagnostics, group, name, "a domain no provider created")
		}
	}
	providerdata.AddPlanDiagnostics(&resp.Diagnostics, mine, path.Root("most_disruptive_allowed_action"))
	r.adoptedBound(ctx, req, resp, o, name)
	// The plan shows the status the apply leaves, once it is sure of it. Whether the instance
	// waits depends on the group's target_size, which the group resource may change in the same
	// apply, before this config's apply plans again: a status planned from the size the record
	// has now would then differ from the one the apply plans, and Terraform would blame the
	// provider. So a config that changes has its status known after apply.
	var status types.String
	resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("status"), &status)...)
	switch mark, _ := req.Private.GetKey(ctx, providerdata.ImportKey); {
	case len(mark) > 0 && !req.State.Raw.IsNull() && !status.IsNull():
		// The plan made with an import keeps the status read, so that it shows no change; the
		// adoption is planned from the next refresh on.
	case req.State.Raw.IsNull() || !configUnchanged(resp.Plan.Raw, req.State.Raw):
		status = types.StringUnknown()
	case slices.Contains(p.Waiting, name):
		status = types.StringValue(configWaiting)
	default:
		status = types.StringValue(configEffective)
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("status"), status)...)
	if plan.ID.IsUnknown() {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("id"), group+"/"+name)...)
	}
}

// configUnchanged reports whether the plan (as ModifyPlan leaves it so far) keeps every argument
// of the config as the state has it (the computed status and id aside).
func configUnchanged(planned, prior tftypes.Value) bool {
	var plan, state map[string]tftypes.Value
	if planned.As(&plan) != nil || prior.As(&state) != nil {
		return false
	}
	for k, v := range plan {
		if k != "status" && k != "id" && !v.Equal(state[k]) {
			return false
		}
	}
	return true
}

// adoptedBound plans an unset most_disruptive_allowed_action as REFRESH for a config whose
// instance is a domain no provider created, adopted or to be adopted: such a member only ever gets
// live changes (engine.PlanInstance caps it there whatever the config says), its import reads it
// so (Read), and a configuration generated from that import writes it. A config that adopted its
// domain before keeps the REPLACE its state has, so that no plan changes it.
func (r *PerInstanceConfigResource) adoptedBound(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, o reconcile.Observation, name string) {
	var configured, prior types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, path.Root("most_disruptive_allowed_action"), &configured)...)
	if !req.State.Raw.IsNull() {
		resp.Diagnostics.Append(req.State.GetAttribute(ctx, path.Root("most_disruptive_allowed_action"), &prior)...)
	}
	refresh := engine.ActionRefresh.String()
	if !configured.IsNull() || (!prior.IsNull() && prior.ValueString() != refresh) {
		return
	}
	if slices.ContainsFunc(o.Observed, func(ob engine.Observed) bool {
		return ob.Name == name && (ob.Unmanaged || ob.Instance.Template.Adopted)
	}) {
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("most_disruptive_allowed_action"), refresh)...)
	}
}

// checkNameFree refuses at plan a per-instance config, of a group that has no record yet, whose
// name something else holds on the provider's hosts: another group's member or claim (a name
// is not proof of ownership), or a domain no provider created that the config would adopt
// without the consent an import gives.
func (r *PerInstanceConfigResource) checkNameFree(ctx context.Context, req resource.ModifyPlanRequest, group, name string, diags *diag.Diagnostics) {
	who, unmanaged, err := r.Data.Reconciler.NameHolder(ctx, group, name)
	switch {
	case err != nil:
		diags.AddError(fmt.Sprintf("Cannot check whether the name %s is free", name), err.Error())
	case who == "":
	case unmanaged:
		if !providerdata.ConsentsToAdopt(ctx, req, diags) {
			providerdata.AddAdoptionRefused(diags, group, name, who)
		}
	default:
		diags.AddAttributeError(path.Root("name"), "Name belongs to another group",
			fmt.Sprintf("The per-instance config %s/%s names %s, which belongs to %s. A group never creates, changes or deletes what is another's (a domain, its volumes, its disks' bytes); nothing was changed. Give the config a name that is free.", group, name, name, who))
	}
}

// checkPins refuses the config's pinned addresses that the group's template and the networks on
// the member's hosts cannot give to the instance name of group s.
func (r *PerInstanceConfigResource) checkPins(ctx context.Context, diags *diag.Diagnostics, s engine.GroupState, name string, pins []engine.NetworkIP, hosts []string) {
	if len(pins) == 0 {
		return
	}
	p := path.Root("preserved_state").AtName("network_ip")
	nics := s.Group.Template.NICs
	var check []engine.NetworkIP
	for _, pin := range pins {
		i, _ := engine.ParseInterfaceName(pin.Interface)
		switch {
		case i >= len(nics):
			diags.AddAttributeError(providerdata.PinPath(p, pin, "interface"), "No such interface", fmt.Sprintf("network_ip interface = %q, but the group's template has %d network_interface blocks. Allowed: %s.", pin.Interface, len(nics), providerdata.InterfaceNames(len(nics))))
		case nics[i].Type == "user" || nics[i].Network == "":
			diags.Append(diagnostics.UserModeAddress(providerdata.PinPath(p, pin, "interface"), fmt.Sprintf("network_ip interface = %q for address %q", pin.Interface, pin.Address),
				"the template's "+pin.Interface, `an interface with type = "network"`))
		default:
			check = append(check, pin)
		}
	}
	for _, c := range engine.PinnedElsewhere(s, name, check) {
		diags.AddAttributeError(providerdata.PinPath(p, c.Pin, "address"), "Address pinned twice", fmt.Sprintf("network_ip %s address = %q is pinned already for instance %q of group %q on the same network. Allowed: an address no other instance pins.", c.Pin.Interface, c.Pin.Address, c.Other, s.Group.Name))
	}
	for _, h := range hosts {
		b, err := r.Data.Host(h)
		if err != nil {
			continue
		}
		ctx, cancel := reconcile.HostContext(ctx) // one reading of the host
		defer cancel()                            //nolint:gocritic // one bound per host, a few hosts, all ended when the check returns
		read := map[string]engine.DHCPNetwork{}
		for _, pin := range check {
			i, _ := engine.ParseInterfaceName(pin.Interface)
			network := nics[i].Network
			n, ok := read[network]
			if !ok {
				if n, err = b.DHCPNetwork(ctx, network); err != nil {
					diags.Append(diagnostics.NetworkUnchecked(p, network, providerdata.OnHost(h), err))
					continue
				}
				read[network] = n
			}
			mac := engine.MACAddress(s.Group.Name, name, i)
			if why := n.CheckPin(pin.Address); why != "" {
				diags.AddAttributeError(providerdata.PinPath(p, pin, "address"), "Address outside the network", fmt.Sprintf("network_ip %s address = %q: %s on %s. Allowed: %s.", pin.Interface, pin.Address, why, providerdata.OnHost(h), n.Allowed()))
			} else if holder := n.Holder(pin.Address); holder != "" && holder != mac {
				diags.AddAttributeError(providerdata.PinPath(p, pin, "address"), "Address taken", fmt.Sprintf("network_ip %s address = %q is reserved in network %q on %s for MAC %s, not this instance's %s. Allowed: an address no host entry holds (`virsh net-dumpxml %s` lists them), or remove that entry.", pin.Interface, pin.Address, network, providerdata.OnHost(h), holder, mac, network))
			}
		}
	}
}

// checkPlannedPins checks the config's pinned addresses for instance name of g, a group this
// plan creates (so, not on the host yet), as checkPins does once it exists: against its planned
// template, the other configs planned for it so far, and the networks of every host of the group
// (where the member will be is not known before the group's apply places it).
func (r *PerInstanceConfigResource) checkPlannedPins(ctx context.Context, diags *diag.Diagnostics, g providerdata.PlannedGroup, name string, plan PerInstanceConfigModel) {
	if g.Group == nil || g.Pins == nil {
		return // a template not known at plan: the apply checks each pin as it reserves it (engine.PlanReservation)
	}
	entry, d := plan.entry(ctx)
	if diags.Append(d...); d.HasError() {
		return
	}
	pins := entry.Config.NetworkIPs
	s := engine.GroupState{Group: *g.Group, Configs: g.Pins.Others(name, pins)}
	var hosts []string
	for _, h := range g.Group.HostList() {
		hosts = append(hosts, engine.HostOf(h))
	}
	r.checkPins(ctx, diags, s, name, pins, hosts)
}
