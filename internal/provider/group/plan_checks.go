package group

import (
	"context"
	"fmt"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/resource"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// checkConfiguration runs the checks a create and a change share, before the group's record is
// read: bad input is refused at plan whichever way the protocol decides, and a change whose
// configuration is refused reads nothing more (checkAgainstState stops on the errors). It reports
// false when there is no configuration to plan from.
func (r *StatefulGroupResource) checkConfiguration(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse) (StatefulGroupModel, bool) {
	var plan StatefulGroupModel
	resp.Diagnostics.Append(req.Plan.Get(ctx, &plan)...)
	if resp.Diagnostics.HasError() || plan.Template == nil {
		return plan, false
	}
	r.planBootDiskSize(ctx, req, resp, &plan)
	resp.Diagnostics.Append(checkNICs(plan.Template)...)
	checkTemplateTexts(ctx, &resp.Diagnostics, plan.Template)
	checkFirmware(&resp.Diagnostics, plan.Template)
	checkAbandonNames(ctx, &plan, &resp.Diagnostics)
	checkWriteOnlyValues(ctx, req.Config, req.State, &resp.Diagnostics)
	return plan, true
}

// checkAgainstState runs the host checks of a change with the state beside the plan: what the
// group has already (its hosts, an unchanged console_log_dir or share) is checked only where the
// change touches it, so that a host that changed behind Terraform's back does not block an
// unrelated change, such as a scale-in (CheckGroupHost). It reports false, with nothing more read, when the plan is
// refused already or the state has no template to compare with.
func (r *StatefulGroupResource) checkAgainstState(ctx context.Context, req resource.ModifyPlanRequest, resp *resource.ModifyPlanResponse, plan *StatefulGroupModel) (StatefulGroupModel, bool) {
	var state StatefulGroupModel
	resp.Diagnostics.Append(req.State.Get(ctx, &state)...)
	if resp.Diagnostics.HasError() || state.Template == nil {
		return state, false
	}
	r.CheckGroupHost(ctx, &resp.Diagnostics, plan, &state)
	r.checkConsoleLogDir(ctx, &resp.Diagnostics, plan, &state)
	r.checkFilesystems(ctx, &resp.Diagnostics, plan, &state)
	return state, true
}

// checkShrinks refuses a template disk the plan makes smaller than the state has it.
func checkShrinks(ctx context.Context, diags *diag.Diagnostics, plan, state *StatefulGroupModel) {
	from := state.Template.engineTemplate(ctx, diags)
	to := plan.Template.engineTemplate(ctx, diags)
	for _, s := range engine.Shrinks(from, to) {
		diags.AddAttributeError(templateDiskPath(plan.Template, s.DeviceName, "size_mib"), "Disk cannot shrink",
			fmt.Sprintf("template disk %q: size_mib %d is smaller than the current %d; a disk can only grow. Keep size_mib at %d or more, or remove the disk and add a new one under another device_name.",
				s.DeviceName, s.To, s.From, s.From))
	}
}
