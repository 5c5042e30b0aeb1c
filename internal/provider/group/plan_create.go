package group

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// planCreate is the plan of a new group: what the plans of its policy and configs that follow
// in this process start from, the create's checks, and its members.
func (r *StatefulGroupResource) planCreate(ctx context.Context, resp *resource.ModifyPlanResponse, plan *StatefulGroupModel) {
	if providerdata.Known(plan.Name, plan.Pool) {
		g := providerdata.PlannedGroup{Pool: plan.Pool.ValueString(), Disks: plan.Template.diskNames()}
		if plan.Template.known() {
			var ignored diag.Diagnostics // the group's own checks report its template
			eg := plan.engineGroup(ctx, &ignored)
			g.Group = &eg
		}
		r.Data.PlanCreate(plan.Name.ValueString(), g)
	}
	r.CheckCreate(ctx, *plan, &resp.Diagnostics)
	r.CheckGroupHost(ctx, &resp.Diagnostics, plan, nil)
	r.checkConsoleLogDir(ctx, &resp.Diagnostics, plan, nil)
	r.checkFilesystems(ctx, &resp.Diagnostics, plan, nil)
	r.planCreateInstances(ctx, resp, plan)
}

// CheckCreate refuses, at plan, to create a group that is already there: its record, or members
// left without it; and one whose members' names domains no provider created hold, unless it
// adopts them (adopt_existing). A creation that an earlier apply left unfinished is finished,
// with a warning.
func (r *StatefulGroupResource) CheckCreate(ctx context.Context, plan StatefulGroupModel, diags *diag.Diagnostics) {
	if !providerdata.Known(plan.Name, plan.BaseInstanceName) {
		return
	}
	name := plan.Name.ValueString()
	_, meta, found, err := r.Data.LoadGroupRecord(ctx, name)
	if err != nil {
		diags.Append(diagnostics.GroupRead(name, err))
		return
	}
	if found {
		err := r.Data.Reconciler.CheckClaim(name, meta, true, engine.Claim{Create: true})
		if err != nil {
			diags.Append(diagnostics.GroupExists(path.Root("name"), err))
			return
		}
		diags.Append(UnfinishedCreate(name, meta, r.Data.Reconciler.CheckLease(name, meta)))
		return
	}
	adopts, err := r.Data.Reconciler.Occupied(ctx, plan.occupant(ctx, diags))
	warnAdoptions(adopts, diags)
	var exists *engine.ExistsError
	var held *engine.NamesHeldError
	var taken *reconcile.NamesTakenError
	switch {
	case errors.As(err, &exists):
		diags.Append(diagnostics.GroupExists(path.Root("name"), err))
	case errors.As(err, &held):
		diags.Append(diagnostics.MemberNamesHeld(path.Root("base_instance_name"), err))
	case errors.As(err, &taken):
		diags.Append(diagnostics.MemberNamesTaken(path.Root("base_instance_name"), err))
	case err != nil:
		diags.Append(diagnostics.GroupRead(name, err))
	}
}

// UnfinishedCreate is what a create is told of a group whose record says another apply was
// creating it (meta), by leaseErr (CheckLease): while that apply holds the lease the group is
// being created, and this create is refused; once no apply holds it, the creation stopped
// part-way and this one finishes it.
func UnfinishedCreate(name string, meta reconcile.Meta, leaseErr error) diag.Diagnostic {
	var held *engine.LeaseError
	switch {
	case errors.As(leaseErr, &held):
		return diagnostics.GroupCreateUnderWay(path.Root("name"), name, held.Lease.Holder, held.Lease.Since)
	case leaseErr != nil:
		return diagnostics.GroupLeaseHeld(leaseErr)
	}
	return diagnostics.GroupCreateUnfinished(name, meta.Owner.ID, meta.Owner.Since)
}

// warnUnfinishedCreate tells a destroy about a group whose create failed half-way: a failed
// create saves no state (so that the next apply finishes it rather than rebuilding it), and the
// destroy, which destroys what the state has, leaves its members and record on the host.
func (r *StatefulGroupResource) warnUnfinishedCreate(ctx context.Context, req resource.ModifyPlanRequest, diags *diag.Diagnostics) {
	var name types.String
	if req.Plan.GetAttribute(ctx, path.Root("name"), &name).HasError() || name.IsNull() || name.IsUnknown() {
		return
	}
	_, meta, found, err := r.Data.LoadGroupRecord(ctx, name.ValueString())
	if err != nil || !found || meta.Owner == nil || !meta.Owner.Creating {
		return
	}
	diags.AddWarning("Group "+name.ValueString()+" was left half-created",
		fmt.Sprintf("An apply that created group %s failed part-way (since %s) and saved no state, so this destroy does not see the members it made. Run terraform apply to finish the creation, then destroy; or import it (terraform import virt_stateful_group.<name> %s) and destroy.",
			name.ValueString(), meta.Owner.Since.UTC().Format(time.RFC3339), name.ValueString()))
}

// diskNames are the device names of the template's disks; nil when one is not known.
func (t *TemplateModel) diskNames() []string {
	names := []string{}
	for _, d := range t.Disk {
		if !providerdata.Known(d.DeviceName) {
			return nil
		}
		names = append(names, d.DeviceName.ValueString())
	}
	return names
}
