// This file holds how Create and Update carry out a plan: apply, and the marker it leaves.

package group

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// appliedSettled is the marker an apply leaves: settled at the configuration it applied when it
// finished without an error, not settled otherwise.
func appliedSettled(ctx context.Context, m *StatefulGroupModel, diags diag.Diagnostics) settled {
	if diags.HasError() {
		return settled{}
	}
	var d diag.Diagnostics
	return settled{Spec: m.encodeGroupSpec(ctx, &d)}
}

// Apply resolves the domain type, stores the group in its record, reconciles it and reads the
// members back into m.
//
// stored is false when the record was not changed: the change was refused (another apply holds
// the group, another state owns it) or failed before anything was written.
//
// prior is the rendering of the configuration this state last applied ("" for a create): a
// record that holds another one was changed by another apply since this plan was made, and the
// change is refused before anything is written. priorTemplate is that state's template (nil for
// a create): a rollout rolled back (update_policy.on_failure = "ROLLBACK") leaves the members on
// it, so the record and m go back to it, and the next plan shows the new template still wanted.
//
// keep is engine.GroupState.KeepRetained for this apply's plan (RetainedInProcess), so that it
// plans what ModifyPlan planned.
//
// shown is what the plan showed of each member (readPlanned, createsOf); nil when it showed no
// list, and then nothing is checked.
func (r *StatefulGroupResource) Apply(ctx context.Context, lim providerdata.Limit, m *StatefulGroupModel, claim *engine.Claim, prior string, priorTemplate *TemplateModel, keep map[string]bool, shown map[string]engine.Planned) (diags diag.Diagnostics, stored bool) {
	// The change runs within the time limit; what follows it (reading the members back) runs
	// on ctx, so that a change cut off by its limit still saves what it did.
	work, cancel := lim.Start(ctx)
	defer cancel()
	if m.Template.DomainType.IsNull() || m.Template.DomainType.IsUnknown() {
		v, err := r.Data.DefaultHost().HostVirt(work)
		if err != nil {
			diags.Append(diagnostics.HostDomainType(err))
			return diags, false
		}
		m.Template.DomainType = types.StringValue(v.DefaultDomainType())
	}
	g := m.engineGroup(ctx, &diags)
	resource := m.encodeGroupSpec(ctx, &diags)
	if diags.HasError() {
		return diags, false
	}
	// The plan that runs is the plan that was shown: an apply that would now delete a member, or
	// treat one more disruptively than the plan said (the host or the group's other resources
	// changed in between), stops before changing anything.
	var ran *engine.GroupPlan // the last plan checked: the one the apply runs
	check := func(p engine.GroupPlan) error {
		ran = &p
		if shown == nil {
			return nil
		}
		if extra := p.Unplanned(shown); len(extra) > 0 {
			return fmt.Errorf("group %s changed since the plan was made, and applying now would do more than the plan showed: %s. Nothing was changed; run terraform apply again to see and apply the new plan", g.Name, strings.Join(extra, "; "))
		}
		return nil
	}
	change := providerdata.GroupChange{Group: g.Name, Pool: m.Pool.ValueString(), Apply: true, Claim: claim, Check: check}
	// The template the record had before the change, with its health check (template.health_check
	// in the configuration).
	var before engine.Template
	var beforeCheck *engine.HealthCheck
	if priorTemplate != nil {
		// After a rollback the record keeps the group as applied but for its template (and the
		// template's health check), the one the members are back on, and the resource's
		// configuration as this state now keeps it: the state's template block is the prior one,
		// health_check included. The rest (target_size, update_policy) stays as applied, so that
		// a member this apply created and left is not a member beyond the record's target_size.
		back := *m
		back.Template = priorTemplate
		rolledBack := back.encodeGroupSpec(ctx, &diags)
		change.RolledBack = func(s *engine.GroupState, exists bool) error {
			if !exists {
				return fmt.Errorf("group %s lost its record during the apply", g.Name)
			}
			s.Group.Template, s.Group.HealthCheck, s.Resource = before, beforeCheck, rolledBack
			return nil
		}
	}
	change.Mutate = func(s *engine.GroupState, exists bool) error {
		if exists && prior != "" && s.Resource != "" && !sameGroupSpec(s.Resource, prior) {
			return &providerdata.StaleError{Group: g.Name}
		}
		before, beforeCheck = s.Group.Template, s.Group.HealthCheck
		s.SetGroup(g)
		s.Resource = resource
		s.KeepRetained = keep
		if !exists {
			s.Pool = m.Pool.ValueString()
		}
		return nil
	}
	// What the apply did otherwise than planned (a live move that went cold) is told as warnings.
	var mu sync.Mutex
	work = reconcile.WithWarnings(work, func(summary, detail string) {
		mu.Lock()
		defer mu.Unlock()
		diags.AddWarning(summary, detail)
	})
	s, stored, applyErr := r.Data.Run(work, change)
	var rolledBack *reconcile.RollbackError
	if errors.As(applyErr, &rolledBack) && rolledBack.Reverted() && priorTemplate != nil {
		// The members this apply changed are back on the prior template: so is the state.
		m.Template = priorTemplate
	}
	if !stored {
		diags.AddError(lim.Explain("Cannot apply group "+g.Name, work, applyErr))
		return diags, false
	}
	var members []engine.Member
	if applyErr == nil && ran != nil {
		// Every operation of the plan succeeded, so the members are as its final state says:
		// reading each one back would cost a call per member and tell nothing more (the next
		// refresh reads the host). What the plan did is done: what is left is NONE
		// (protocol/leftover.go).
		members = slices.Clone(ran.Final)
		for i := range members {
			members[i].Planned = groupproto.Left(members[i].Planned)
		}
	} else {
		// What a failed or cut-off apply left is read back from the host.
		o, err := r.Data.Reconciler.Observe(ctx, s)
		if err != nil {
			diags.Append(diagnostics.GroupRead(g.Name, err))
			m.Instances = types.StringNull()
			return diags, true
		}
		members = MembersOf(o, s, m.Running.ValueBool())
	}
	health := plannedHealth(m.Instances, &diags)
	for i := range members {
		// After the apply, health keeps what the plan said, as Terraform expects; the next
		// refresh shows the health the host has. A member read back after a failed apply
		// says what a refresh says of it (MembersOf).
		if h, ok := health[members[i].Name]; ok {
			members[i].Health = engine.Health(h)
		}
	}
	list, d := instancesValue(members)
	diags.Append(d...)
	m.Instances = list
	if applyErr != nil {
		diags.AddError(lim.Explain("Cannot apply group "+g.Name, work, applyErr))
	}
	return diags, stored
}

// plannedHealth reads the planned health of each member from a planned instances list.
func plannedHealth(l types.String, diags *diag.Diagnostics) map[string]string {
	out := map[string]string{}
	for _, it := range instanceRows(l, diags) {
		if it.Health != nil {
			out[it.Name] = *it.Health
		}
	}
	return out
}
