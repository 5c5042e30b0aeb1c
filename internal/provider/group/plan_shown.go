package group

import (
	"context"
	"encoding/json"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-go/tftypes"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/protocol"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// planCreateInstances shows, in the plan of a new group, the members it creates: each name with
// CREATE, as the engine plans them from the host as it is (the same plan the apply makes and
// checks against what was shown, StatefulGroupResource.Apply). The names are known at plan:
// `<base_instance_name>-<index>` for indexes 1 to target_size, placed over the group's hosts.
//
// The list stays unknown ("known after apply") when the plan cannot tell it for sure: a value of
// the configuration known only at apply, a plan already refused, a record of the group already
// there (an earlier create that did not finish, which the apply finishes), or domains already
// under the members' names.
//
// The unset domain_type is resolved as the apply resolves it (the default host's), so that the
// members' template revision is the one the apply gives them, and the plan shows it.
func (r *StatefulGroupResource) planCreateInstances(ctx context.Context, resp *resource.ModifyPlanResponse, plan *StatefulGroupModel) {
	if resp.Diagnostics.HasError() || plan.Template == nil || !providerdata.Known(plan.Name, plan.Pool) {
		return
	}
	if plan.Template.DomainType.IsUnknown() {
		hctx, cancel := reconcile.HostContext(ctx)
		v, err := r.Data.DefaultHost().HostVirt(hctx)
		cancel()
		if err != nil {
			return // the apply says why
		}
		plan.Template.DomainType = types.StringValue(v.DefaultDomainType())
		resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root("template").AtName("domain_type"), plan.Template.DomainType)...)
	}
	if !knownBut(resp.Plan.Raw, "id", protocol.InstancesAttrName) {
		return
	}
	name := plan.Name.ValueString()
	if _, _, found, err := r.Data.LoadGroupRecord(ctx, name); err != nil || found {
		return
	}
	var diags diag.Diagnostics
	s := engine.GroupState{Pool: plan.Pool.ValueString()}
	s.SetGroup(plan.engineGroup(ctx, &diags))
	s.Resource = plan.encodeGroupSpec(ctx, &diags)
	if diags.HasError() {
		return
	}
	p, o, err := r.Data.Reconciler.Preview(ctx, s)
	if err != nil {
		// The host did not answer the listing (the record's read, moments before, did): the
		// list cannot be known after apply either (see below).
		_, why := downLines(map[string]error{s.Group.RecordHost(): err})
		resp.Diagnostics.Append(diagnostics.NewGroupHostsDown(name, why))
		return
	}
	var creates []string
	for _, c := range p.Create {
		creates = append(creates, c.Name)
	}
	if len(o.Down) > 0 && len(o.Down) >= len(o.Read) {
		// No host answered: nothing can be created, and the list cannot be known after apply
		// either, since the plan before this one (the apply's final plan is made again) may
		// have read the hosts and shown it.
		_, why := downLines(o.Down)
		resp.Diagnostics.Append(diagnostics.NewGroupHostsDown(name, why))
		return
	}
	// Members to adopt (adopt_existing) are observed domains: the list stays known after apply,
	// and the plan's warning names them.
	held, others := o.TakenNames(name, creates)
	if len(o.Observed) > 0 || len(o.Down) > 0 || len(p.Blocked) > 0 || len(p.Steps) > 0 || len(p.Delete) > 0 || len(held)+len(others) > 0 {
		return
	}
	list, d := instancesValue(p.Final)
	if d.HasError() {
		return
	}
	resp.Diagnostics.Append(resp.Plan.SetAttribute(ctx, path.Root(protocol.InstancesAttrName), list)...)
}

// knownBut reports whether every value in v is known, but those under the top-level attributes
// named in skip.
func knownBut(v tftypes.Value, skip ...string) bool {
	all := true
	_ = tftypes.Walk(v, func(p *tftypes.AttributePath, v tftypes.Value) (bool, error) {
		if steps := p.Steps(); len(steps) > 0 {
			if a, ok := steps[0].(tftypes.AttributeName); ok {
				for _, s := range skip {
					if string(a) == s {
						return false, nil
					}
				}
			}
		}
		if !v.IsKnown() {
			all = false
			return false, nil
		}
		return true, nil
	})
	return all
}

// takenOver is the planned instances list of a plan whose apply takes the group over (an
// import): the members as they are, each member the plan leaves alone saying that the apply
// records this state as the owner (engine.TakenOver of what the plan does to it, planned, by
// name; NONE for a member the plan does not have). The list stays known, and differs from the
// state's, so that Terraform runs the apply that writes the owner. It returns the list and what
// it shows of each member.
func takenOver(list types.String, planned map[string]engine.Planned, diags *diag.Diagnostics) (types.String, map[string]engine.Planned) {
	if list.IsNull() || list.IsUnknown() {
		return list, nil
	}
	rows := instanceRows(list, diags)
	shown := make(map[string]engine.Planned, len(rows))
	for i := range rows {
		p := engine.TakenOver(planned[rows[i].Name])
		shown[rows[i].Name] = p
		text := p.String()
		rows[i].PlannedAction = &text
	}
	js, err := json.Marshal(rows)
	if err != nil {
		diags.Append(diagnostics.InstancesUnrendered(err))
		return types.StringUnknown(), nil
	}
	return types.StringValue(string(js)), shown
}
