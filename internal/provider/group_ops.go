package provider

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// errNoGroup is returned by a change of a policy or config whose group has no record.
func errNoGroup(group string) error {
	return fmt.Errorf("group %q does not exist on this libvirt host: create its virt_stateful_group first, and reference it (group = virt_stateful_group.<name>.name) so that Terraform creates it before this resource: %w", group, backend.ErrNotFound)
}

// changeAndApply stores mutate's change in the group record and reconciles the group, under
// the provider's lock for the group, so that resources of one apply touching the same group
// take turns. apply=false stores the change only. stored tells whether the record now holds the
// change, so that Terraform state is saved for the next apply to finish what failed.
func (d *ProviderData) changeAndApply(ctx context.Context, group, pool string, apply bool, mutate func(s *engine.GroupState, exists bool) error) (s engine.GroupState, stored bool, err error) {
	return d.changeAndApplyChecked(ctx, group, pool, apply, mutate, nil)
}

// changeAndApplyChecked is changeAndApply with a check of the plan before it runs.
func (d *ProviderData) changeAndApplyChecked(ctx context.Context, group, pool string, apply bool, mutate func(s *engine.GroupState, exists bool) error, check func(engine.GroupPlan) error) (s engine.GroupState, stored bool, err error) {
	defer d.lockGroup(group)()
	s, err = d.Reconciler.Change(ctx, group, pool, mutate)
	if err != nil || !apply {
		return s, err == nil, err
	}
	return s, true, d.Reconciler.ApplyChecked(ctx, s, check)
}

// loadGroup reads the group record; found is false when the group has none.
func (d *ProviderData) loadGroup(ctx context.Context, group string) (s engine.GroupState, found bool, err error) {
	s, err = d.Reconciler.Load(ctx, group)
	if errors.Is(err, backend.ErrNotFound) {
		return s, false, nil
	}
	return s, err == nil, err
}

// addPlanDiagnostics reports every instance the plan may not change as an error on the attribute
// that bounds it, and, when the plan takes members down, one warning listing the restarts and
// replacements with their reasons. Everything else the plan does shows in each member's
// planned_action.
func addPlanDiagnostics(diags *diag.Diagnostics, p engine.GroupPlan, bound path.Path) {
	for _, b := range p.Blocked {
		if b.Problem != "" {
			diags.AddError("Instance cannot be changed", b.String())
			continue
		}
		diags.AddAttributeError(bound, "Change not allowed by the most disruptive allowed action",
			fmt.Sprintf("Instance %s needs %s (%s), but its most disruptive allowed action is %s. Allow %s, or change less.",
				b.Name, b.Needs, engine.JoinReasons(b.Reasons), b.Allowed, b.Needs))
	}
	var lines []string
	for _, s := range p.Steps {
		if s.Disruptive() {
			lines = append(lines, s.Name+": "+s.Planned())
		}
	}
	if len(lines) > 0 {
		diags.AddWarning("Members will be taken down",
			fmt.Sprintf("%s\n\nThey are stopped (ACPI shutdown, then power off after shutdown_timeout) %d at a time at most (max_unavailable); the rollout stops at the first failure.",
				strings.Join(lines, "\n"), max(1, maxWave(p))))
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

// applyError renders a failed reconcile as a diagnostic detail.
func applyError(err error) string {
	var blocked *reconcile.BlockedError
	var rollout *reconcile.RolloutError
	if errors.As(err, &blocked) || errors.As(err, &rollout) {
		return err.Error()
	}
	return err.Error() + "\n\nWhat was done is kept and marked on each instance; the next apply finishes or undoes the rest."
}
