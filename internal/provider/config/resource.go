package config

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/tfsdk"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

var (
	_ resource.Resource                = (*PerInstanceConfigResource)(nil)
	_ resource.ResourceWithConfigure   = (*PerInstanceConfigResource)(nil)
	_ resource.ResourceWithImportState = (*PerInstanceConfigResource)(nil)
	_ resource.ResourceWithModifyPlan  = (*PerInstanceConfigResource)(nil)
)

// Statuses of a per-instance config, as the status attribute shows them (engine.ConfigStatus).
const (
	configEffective = string(engine.ConfigEffective)
	configWaiting   = string(engine.ConfigWaiting)
	configUnapplied = string(engine.ConfigUnapplied)
)

var (
	importedMark = []byte(`"imported"`)
	readMark     = []byte(`"read"`)
)

// NewPerInstanceConfigResource is the factory of virt_per_instance_config.
func NewPerInstanceConfigResource() resource.Resource { return &PerInstanceConfigResource{} }

type PerInstanceConfigResource struct {
	Data *providerdata.ProviderData
}

func (r *PerInstanceConfigResource) Metadata(_ context.Context, req resource.MetadataRequest, resp *resource.MetadataResponse) {
	resp.TypeName = req.ProviderTypeName + "_per_instance_config"
}

func (r *PerInstanceConfigResource) Schema(_ context.Context, _ resource.SchemaRequest, resp *resource.SchemaResponse) {
	resp.Schema = PerInstanceConfigSchema()
}

func (r *PerInstanceConfigResource) Configure(_ context.Context, req resource.ConfigureRequest, resp *resource.ConfigureResponse) {
	r.Data = providerdata.ConfigureData(req.ProviderData, &resp.Diagnostics)
}

func (r *PerInstanceConfigResource) Create(ctx context.Context, req resource.CreateRequest, resp *resource.CreateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "per-instance config create")
	var plan PerInstanceConfigModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.ConfigIdentityModel{Group: plan.Group, Name: plan.Name}, &resp.Diagnostics)
	r.Apply(ctx, "create", &plan, &resp.State, &resp.Diagnostics)
}

func (r *PerInstanceConfigResource) Read(ctx context.Context, req resource.ReadRequest, resp *resource.ReadResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "per-instance config read")
	var state PerInstanceConfigModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.ConfigIdentityModel{Group: state.Group, Name: state.Name}, &resp.Diagnostics)
	group, name := state.Group.ValueString(), state.Name.ValueString()
	importing := state.MinimalAction.IsNull()
	mark, d := req.Private.GetKey(ctx, providerdata.ImportKey)
	resp.Diagnostics.Append(d...)
	switch string(mark) {
	case string(importedMark):
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, providerdata.ImportKey, readMark)...)
	case string(readMark):
		resp.Diagnostics.Append(resp.Private.SetKey(ctx, providerdata.ImportKey, nil)...)
	}
	s, found, err := r.Data.LoadGroup(ctx, group)
	if providerdata.UnreachableRecord(err, false, &resp.Diagnostics) {
		return
	}
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	if !found {
		if importing {
			resp.Diagnostics.Append(diagnostics.GroupNotFound(path.Empty(), group))
			return
		}
		resp.State.RemoveResource(ctx)
		return
	}
	state.ID = types.StringValue(group + "/" + name)
	if entry, ok := s.Configs[name]; ok {
		state.fromEntry(entry)
	} else {
		// A domain no provider created is read as it is, to be adopted by the next apply: its
		// disks become preserved disks; its own metadata is not the provider's and is ignored.
		o, err := r.Data.Reconciler.Observe(ctx, withConfig(s, name, engine.DefaultConfigEntry()))
		if err != nil {
			resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
			return
		}
		d, exists := o.Domains[name]
		i := slices.IndexFunc(o.Observed, func(ob engine.Observed) bool { return ob.Name == name && ob.Unmanaged })
		if !exists || d.Record != nil || i < 0 {
			if importing {
				resp.Diagnostics.AddError("Per-instance config not found", ConfigNotFound(group, name, o.Taken[name], d, exists))
				return
			}
			resp.State.RemoveResource(ctx)
			return
		}
		// Its disks as the adoption reads them (reconcile.Spelled: a file of the group's pool by
		// its volume name). It only ever gets live changes, so the config allows no more: an
		// unset most_disruptive_allowed_action plans the same (ModifyPlan), and a generated
		// configuration says so.
		entry := engine.DefaultConfigEntry()
		entry.MostDisruptiveAllowed = engine.ActionRefresh
		for _, x := range o.Observed[i].Instance.Current.Disks {
			mode := "" // the default, READ_WRITE
			if x.ReadOnly {
				mode = engine.ModeReadOnly
			}
			entry.Config.Disks = append(entry.Config.Disks, engine.ConfigDisk{DeviceName: x.DeviceName, Source: x.Source, Mode: mode})
		}
		state.fromEntry(entry)
		state.Status = types.StringValue(configUnapplied)
		resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
		return
	}
	status, err := r.status(ctx, s, name)
	if err != nil {
		resp.Diagnostics.Append(diagnostics.GroupRead(group, err))
		return
	}
	state.Status = types.StringValue(status)
	resp.Diagnostics.Append(resp.State.Set(ctx, &state)...)
}

func (r *PerInstanceConfigResource) Update(ctx context.Context, req resource.UpdateRequest, resp *resource.UpdateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "per-instance config update")
	var plan PerInstanceConfigModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() {
		return
	}
	providerdata.SetIdentity(ctx, resp.Identity, providerdata.ConfigIdentityModel{Group: plan.Group, Name: plan.Name}, &resp.Diagnostics)
	r.Apply(ctx, "update", &plan, &resp.State, &resp.Diagnostics)
}

func (r *PerInstanceConfigResource) Delete(ctx context.Context, req resource.DeleteRequest, resp *resource.DeleteResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	defer reconcile.LogCounts(ctx, "per-instance config delete")
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	var state PerInstanceConfigModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() {
		return
	}
	group, name := state.Group.ValueString(), state.Name.ValueString()
	removeInstance, removeState := state.RemoveInstanceOnDestroy.ValueBool(), state.RemoveInstanceStateOnDestroy.ValueBool()
	lim := providerdata.NewLimit(ctx, state.Timeouts, "delete", fmt.Sprintf("the per-instance config %s/%s", group, name), &resp.Diagnostics)
	work, cancel := lim.Start(ctx)
	defer cancel()
	if err := r.Data.GroupDestroyWaits(work, group); err != nil {
		resp.Diagnostics.AddError(fmt.Sprintf("Cannot delete the per-instance config %s/%s", group, name), providerdata.WaitsForGroupHosts("the config", err))
		return
	}
	held, release, err := r.Data.HoldGroup(work, group, nil)
	if err != nil {
		resp.Diagnostics.AddError(lim.Explain(fmt.Sprintf("Cannot delete the per-instance config %s/%s", group, name), work, err))
		return
	}
	// The config leaves the record first, in one write, so that no half-deleted config is ever
	// left behind; what happens to the instance follows.
	s, err := r.Data.Reconciler.Change(held, group, "", func(s *engine.GroupState, exists bool) error {
		if !exists {
			// The group went first (Terraform destroys in parallel what does not depend on each
			// other); there is nothing left to remove the config from, and no record to recreate.
			return providerdata.ErrNoGroup(group)
		}
		if _, ok := s.Configs[name]; !ok {
			// The config never applied (or is gone from the record): it is destroyed as what it
			// is, and its remove_* settings act on nothing (the instance may not be its own).
			return providerdata.ErrNothingToUndo
		}
		s.Release(r.Data.Reconciler.Env.Run)
		delete(s.Configs, name)
		// Removing the config never creates a member (a destroy creates nothing).
		s.NoCreate = true
		if removeInstance || removeState {
			s.Unretain(name)
		} else {
			// The member keeps what the config gave it, and the group plans no change for it
			// alone: it goes at the member's next update for another reason (engine.RetainedConfig),
			// so the plan right after this destroy is empty.
			s.Retain(name)
		}
		return nil
	})
	switch {
	case errors.Is(err, backend.ErrNotFound), errors.Is(err, providerdata.ErrNothingToUndo):
		err = nil
	case err != nil:
	case removeInstance:
		err = r.Data.Reconciler.RemoveInstance(held, s, name)
	case removeState:
		err = r.Data.Reconciler.Apply(held, s)
	default:
		r.Data.NoteRetained(group, name)
	}
	err = providerdata.LeaseCause(held, err)
	release(err == nil)
	if err != nil {
		resp.Diagnostics.AddError(lim.Explain(fmt.Sprintf("Cannot delete the per-instance config %s/%s", group, name), work, err))
	}
}

func (r *PerInstanceConfigResource) ImportState(ctx context.Context, req resource.ImportStateRequest, resp *resource.ImportStateResponse) {
	ctx = r.Data.ReadingHosts(ctx)
	if _, ok := providerdata.ConfigImport.Read(ctx, req, resp); !ok {
		return
	}
	resp.Diagnostics.Append(resp.Private.SetKey(ctx, providerdata.ImportKey, importedMark)...)
}

// Apply stores the config in the group record and reconciles the group.
func (r *PerInstanceConfigResource) Apply(ctx context.Context, op string, plan *PerInstanceConfigModel, state *tfsdk.State, diags *diag.Diagnostics) {
	ctx = tflog.NewSubsystem(ctx, libvirt.Subsystem)
	group, name := plan.Group.ValueString(), plan.Name.ValueString()
	lim := providerdata.NewLimit(ctx, plan.Timeouts, op, fmt.Sprintf("the per-instance config %s/%s", group, name), diags)
	work, cancel := lim.Start(ctx)
	defer cancel()
	plan.ID = types.StringValue(group + "/" + name)
	entry, d := plan.entry(ctx)
	diags.Append(d...)
	if diags.HasError() {
		return
	}
	s, stored, err := r.Data.ChangeAndApply(work, group, "", true, func(s *engine.GroupState, exists bool) error {
		if !exists {
			return providerdata.ErrNoGroup(group)
		}
		s.Release(r.Data.Reconciler.Env.Run)
		*s = withConfig(*s, name, entry)
		// The new config says what the member has from now on, whatever an earlier one left.
		s.Unretain(name)
		return nil
	})
	if err != nil {
		summary, detail := lim.Explain(fmt.Sprintf("Cannot apply the per-instance config %s/%s", group, name), work, err)
		diags.AddAttributeError(path.Root("group"), summary, detail)
	}
	if !stored {
		return
	}
	status, serr := r.status(ctx, s, name)
	if serr != nil {
		diags.Append(diagnostics.GroupRead(group, serr))
		status = configUnapplied
	}
	if err == nil && status == configUnapplied {
		diags.AddError(fmt.Sprintf("Per-instance config %s/%s not applied", group, name), "The apply finished, but the instance does not carry the config. Run apply again; if this persists, report it.")
	}
	plan.Status = types.StringValue(status)
	diags.Append(state.Set(ctx, plan)...)
}

// status tells whether the instance carries its config.
func (r *PerInstanceConfigResource) status(ctx context.Context, s engine.GroupState, name string) (string, error) {
	p, _, err := r.Data.Preview(ctx, s)
	if err != nil {
		return "", err
	}
	return string(p.ConfigStatus(name)), nil
}

// withConfig returns s with the instance's config set to e.
func withConfig(s engine.GroupState, name string, e engine.ConfigEntry) engine.GroupState {
	configs := make(map[string]engine.ConfigEntry, len(s.Configs)+1)
	for k, v := range s.Configs {
		configs[k] = v
	}
	configs[name] = e
	s.Configs = configs
	return s
}

// ConfigNotFound is why the import of the config group/name finds nothing to import: the group
// has no config of that name, and the domain of that name is not one no provider created. It
// names who holds the domain: who, another group or a virt_domain resource as the observation
// took it (Observation.Taken), or the member record d carries; or that there is none (exists).
func ConfigNotFound(group, name, who string, d backend.Domain, exists bool) string {
	head := fmt.Sprintf("Group %q has no per-instance config for %q", group, name)
	switch {
	case !exists && who == "":
		return head + fmt.Sprintf(", and no domain %q exists on the group's hosts. Check the import ID (GROUP/NAME) and the provider's hosts.", name)
	case who == "" && d.Record != nil && d.Record.Group != group:
		who = fmt.Sprintf("group %q (its member record)", d.Record.Group)
	case who == "" && d.Record != nil:
		return head + fmt.Sprintf(", and domain %q is already its member (instance %d) with no config: write a virt_per_instance_config for it instead of importing one.", name, d.Record.Index)
	case who == "":
		return head + fmt.Sprintf(", and domain %q cannot be adopted by it.", name)
	}
	return head + fmt.Sprintf(", and domain %q belongs to %s, not to a group that may adopt it: a group never takes what is another's. Nothing was imported. Import the config into the group that owns the domain, or name a domain no provider created.", name, who)
}

func (r *PerInstanceConfigResource) IdentitySchema(_ context.Context, _ resource.IdentitySchemaRequest, resp *resource.IdentitySchemaResponse) {
	resp.IdentitySchema = providerdata.ConfigIdentitySchema()
}

var _ resource.ResourceWithIdentity = (*PerInstanceConfigResource)(nil)
