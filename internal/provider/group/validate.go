package group

import (
	"context"
	"fmt"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/attr"
	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"
	"github.com/hashicorp/terraform-plugin-framework/resource"
	"github.com/hashicorp/terraform-plugin-framework/types"
	"github.com/hashicorp/terraform-plugin-framework/types/basetypes"

	"github.com/virtfleet/terraform-provider-virt/internal/diagnostics"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// ValidateConfig checks what needs more than one attribute, at terraform validate.
func (r *StatefulGroupResource) ValidateConfig(ctx context.Context, req resource.ValidateConfigRequest, resp *resource.ValidateConfigResponse) {
	var minimal, allowed types.String
	up := path.Root("update_policy")
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("minimal_action"), &minimal)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("most_disruptive_allowed_action"), &allowed)...)
	providerdata.CheckActionBounds(&resp.Diagnostics, up.AtName("minimal_action"), minimal, allowed)
	var updateType, canary types.String
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("type"), &updateType)...)
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, up.AtName("canary"), &canary)...)
	if !canary.IsNull() && updateType.ValueString() == engine.UpdateOpportunistic {
		// An OPPORTUNISTIC group has no rollout to hold: its members reach a new template only
		// when they are created again.
		resp.Diagnostics.AddAttributeError(up.AtName("canary"), "Invalid update policy",
			fmt.Sprintf("%s = %q holds a rollout, and %s = %q has none (its members take a new template only when they are created again): remove canary, or set type = %q.",
				up.AtName("canary"), canary.ValueString(), up.AtName("type"), engine.UpdateOpportunistic, engine.UpdateProactive))
	}
	var hc types.Object
	resp.Diagnostics.Append(req.Config.GetAttribute(ctx, pathHealthCheck, &hc)...)
	checkHealthCheck(ctx, &resp.Diagnostics, hc)
	checkDevices(ctx, req.Config, &resp.Diagnostics)
}

var pathHealthCheck = path.Root("template").AtName("health_check")

// checkHealthCheck reports, at validate time, what the health check's attributes cannot tell
// alone: exactly one probe block, a timeout within the interval, an exec command that names a
// program. The rules are the engine's. What is unknown yet is checked at the plan that knows it.
func checkHealthCheck(ctx context.Context, diags *diag.Diagnostics, obj types.Object) {
	if obj.IsNull() || obj.IsUnknown() {
		return
	}
	var h healthCheckModel
	if d := obj.As(ctx, &h, basetypes.ObjectAsOptions{}); d.HasError() {
		return // an unknown probe block: checked once it is known
	}
	if err := engine.CheckProbeKinds(h.probeKinds()); err != nil {
		diags.AddAttributeError(pathHealthCheck, "Invalid health check", fmt.Sprintf("%s has %s.", pathHealthCheck, err))
	}
	if providerdata.Known(h.Interval, h.Timeout) {
		// An unset attribute is its default, as the plan will have it.
		interval, timeout := engine.DefaultProbeInterval, engine.DefaultProbeTimeout
		var errI, errT error
		if !h.Interval.IsNull() {
			interval, errI = engine.ProbeIntervalRule.Parse(h.Interval.ValueString())
		}
		if !h.Timeout.IsNull() {
			timeout, errT = engine.ProbeTimeoutRule.Parse(h.Timeout.ValueString())
		}
		if errI == nil && errT == nil {
			if err := engine.CheckProbeTimeout(timeout, interval); err != nil {
				at := pathHealthCheck.AtName("timeout")
				if h.Timeout.IsNull() {
					at = pathHealthCheck.AtName("interval")
				}
				diags.AddAttributeError(at, "Invalid value", fmt.Sprintf("%s = %q, %s = %q: %v.", pathHealthCheck.AtName("interval"),
					engine.FormatDuration(interval), pathHealthCheck.AtName("timeout"), engine.FormatDuration(timeout), err))
			}
		}
	}
	// The schema cannot require these (see healthCheckBlock).
	for _, r := range []struct {
		set   bool
		value attr.Value
		at    path.Path
		what  string
	}{
		{h.Exec != nil, execCommand(h.Exec), pathHealthCheck.AtName("exec").AtName("command"), "the program to run and its arguments, such as [\"/bin/tiny-service\", \"status\"]"},
		{h.TCP != nil, tcpPort(h.TCP), pathHealthCheck.AtName("tcp").AtName("port"), fmt.Sprintf("the port to connect to, from %d to %d", engine.ProbePortRule.Min, engine.ProbePortRule.Max)},
		{h.HTTP != nil, httpPort(h.HTTP), pathHealthCheck.AtName("http").AtName("port"), fmt.Sprintf("the port to send the request to, from %d to %d", engine.ProbePortRule.Min, engine.ProbePortRule.Max)},
	} {
		if r.set && r.value.IsNull() {
			diags.Append(diagnostics.RequiredInBlock(r.at, r.what))
		}
	}
	if h.Exec != nil && !h.Exec.Command.IsNull() && !h.Exec.Command.IsUnknown() {
		at := pathHealthCheck.AtName("exec").AtName("command")
		var command []types.String
		if d := h.Exec.Command.ElementsAs(ctx, &command, false); d.HasError() {
			return
		}
		words := make([]string, len(command))
		for i, w := range command {
			if w.IsUnknown() {
				return
			}
			words[i] = w.ValueString()
		}
		if err := engine.CheckExecCommand(words); err != nil {
			diags.AddAttributeError(at, "Invalid value", fmt.Sprintf("%s = %s: %v.", at, providerdata.QuoteList(words), err))
		}
	}
}

func execCommand(e *execProbeModel) attr.Value {
	if e == nil {
		return types.ListNull(types.StringType)
	}
	return e.Command
}

func tcpPort(p *tcpProbeModel) attr.Value {
	if p == nil {
		return types.Int64Null()
	}
	return p.Port
}

func httpPort(p *httpProbeModel) attr.Value {
	if p == nil {
		return types.Int64Null()
	}
	return p.Port
}

// checkNICs enforces that a network interface names its network exactly when its type needs one.
func checkNICs(t *TemplateModel) diag.Diagnostics {
	var diags diag.Diagnostics
	for i, n := range t.NetworkInterface {
		if !providerdata.Known(n.Type, n.Network) {
			continue
		}
		p := path.Root("template").AtName("network_interface").AtListIndex(i).AtName("network")
		switch {
		case n.Type.ValueString() == "network" && n.Network.ValueString() == "":
			diags.AddAttributeError(p, "Missing network", "network_interface with type \"network\" needs network, the name of a libvirt network such as \"default\"; or set type = \"user\".")
		case n.Type.ValueString() == "user" && !n.Network.IsNull():
			diags.AddAttributeError(p, "Unexpected network", fmt.Sprintf("network_interface with type \"user\" takes no network, got %q.", n.Network.ValueString()))
		}
		if n.Type.ValueString() == "user" && providerdata.Known(n.Address) && !n.Address.IsNull() {
			nic := fmt.Sprintf("network_interface[%d]", i)
			diags.Append(diagnostics.UserModeAddress(path.Root("template").AtName("network_interface").AtListIndex(i).AtName("address"), fmt.Sprintf("%s.address = %q", nic, n.Address.ValueString()),
				nic, `address on an interface with type = "network", or leave address unset`))
		}
	}
	return diags
}

// checkTemplateTexts refuses, at plan, template texts larger than libvirt can carry in a
// member's definition and the group record (engine.MaxTemplateTextBytes), on the attribute of
// the largest. An unknown text is checked at the plan that knows it.
func checkTemplateTexts(ctx context.Context, diags *diag.Diagnostics, t *TemplateModel) {
	if t == nil || !providerdata.Known(t.Metadata, t.Labels, t.Description) || (t.CloudInit != nil && !providerdata.Known(t.CloudInit.UserData, t.CloudInit.NetworkConfig)) {
		return
	}
	var ignored diag.Diagnostics
	et := engine.Template{
		Shape:    engine.Shape{Labels: providerdata.StringMap(ctx, t.Labels, &ignored), Description: t.Description.ValueString(), CloudInit: t.CloudInit.engineCloudInit()},
		Metadata: providerdata.StringMap(ctx, t.Metadata, &ignored),
	}
	parts := engine.TemplateTexts(et)
	if err := engine.CheckTextSize(parts, engine.MaxTemplateTextBytes, "The template's user_data, network_config, metadata, labels and description"); err != nil {
		at := path.Root("template")
		for _, name := range strings.Split(parts[0].Attribute, ".") {
			at = at.AtName(name)
		}
		diags.AddAttributeError(at, "Template text too large", err.Error()+".")
	}
}

var _ resource.ResourceWithValidateConfig = (*StatefulGroupResource)(nil)
