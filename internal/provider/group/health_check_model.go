package group

import (
	"context"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// healthCheckModel is template.health_check (health_check_schema.go), converted to the engine's
// HealthCheck here.
type healthCheckModel struct {
	GuestAgent         *guestAgentProbeModel `tfsdk:"guest_agent"`
	Exec               *execProbeModel       `tfsdk:"exec"`
	TCP                *tcpProbeModel        `tfsdk:"tcp"`
	HTTP               *httpProbeModel       `tfsdk:"http"`
	Interval           types.String          `tfsdk:"interval"`
	Timeout            types.String          `tfsdk:"timeout"`
	HealthyThreshold   types.Int64           `tfsdk:"healthy_threshold"`
	UnhealthyThreshold types.Int64           `tfsdk:"unhealthy_threshold"`
}

// guestAgentProbeModel is `guest_agent {}`: the block's presence is the whole of it.
type guestAgentProbeModel struct{}

type execProbeModel struct {
	Command types.List `tfsdk:"command"`
}

type tcpProbeModel struct {
	Port types.Int64 `tfsdk:"port"`
}

type httpProbeModel struct {
	Port         types.Int64  `tfsdk:"port"`
	Path         types.String `tfsdk:"path"`
	ExpectStatus types.Int64  `tfsdk:"expect_status"`
}

// probeKinds are the probe blocks the health check has, in the engine's order.
func (h *healthCheckModel) probeKinds() []engine.ProbeKind {
	var kinds []engine.ProbeKind
	for _, p := range []struct {
		set  bool
		kind engine.ProbeKind
	}{{h.GuestAgent != nil, engine.ProbeGuestAgent}, {h.Exec != nil, engine.ProbeExec}, {h.TCP != nil, engine.ProbeTCP}, {h.HTTP != nil, engine.ProbeHTTP}} {
		if p.set {
			kinds = append(kinds, p.kind)
		}
	}
	return kinds
}

// known reports whether the health check is fully known; a missing one is.
func (h *healthCheckModel) known() bool {
	if h == nil {
		return true
	}
	if !providerdata.Known(h.Interval, h.Timeout, h.HealthyThreshold, h.UnhealthyThreshold) {
		return false
	}
	return (h.Exec == nil || providerdata.Known(h.Exec.Command)) && (h.TCP == nil || providerdata.Known(h.TCP.Port)) &&
		(h.HTTP == nil || providerdata.Known(h.HTTP.Port, h.HTTP.Path, h.HTTP.ExpectStatus))
}

// engineHealthCheck is the block as the engine reads it; nil without the block. Values the
// validators refuse are left at zero (the engine's defaults): the plan stops at their diagnostic.
func (h *healthCheckModel) engineHealthCheck(ctx context.Context, diags *diag.Diagnostics) *engine.HealthCheck {
	if h == nil {
		return nil
	}
	hc := engine.HealthCheck{HealthyThreshold: int(h.HealthyThreshold.ValueInt64()), UnhealthyThreshold: int(h.UnhealthyThreshold.ValueInt64())}
	hc.Interval, _ = engine.ProbeIntervalRule.Parse(h.Interval.ValueString())
	hc.Timeout, _ = engine.ProbeTimeoutRule.Parse(h.Timeout.ValueString())
	switch {
	case h.GuestAgent != nil:
		hc.Probe.Kind = engine.ProbeGuestAgent
	case h.Exec != nil:
		hc.Probe.Kind = engine.ProbeExec
		if !h.Exec.Command.IsNull() && !h.Exec.Command.IsUnknown() {
			diags.Append(h.Exec.Command.ElementsAs(ctx, &hc.Probe.Command, false)...)
		}
	case h.TCP != nil:
		hc.Probe.Kind = engine.ProbeTCP
		hc.Probe.Port = int(h.TCP.Port.ValueInt64())
	case h.HTTP != nil:
		hc.Probe = engine.Probe{Kind: engine.ProbeHTTP, Port: int(h.HTTP.Port.ValueInt64()), Path: h.HTTP.Path.ValueString(), ExpectStatus: int(h.HTTP.ExpectStatus.ValueInt64())}
	}
	return &hc
}

// resourceSpec is the health check as the group record keeps the configuration; nil without it.
func (h *healthCheckModel) resourceSpec(ctx context.Context, diags *diag.Diagnostics) *store.ResourceHealthCheck {
	if h == nil {
		return nil
	}
	out := &store.ResourceHealthCheck{
		Interval: h.Interval.ValueString(), Timeout: h.Timeout.ValueString(),
		HealthyThreshold: h.HealthyThreshold.ValueInt64(), UnhealthyThreshold: h.UnhealthyThreshold.ValueInt64(),
	}
	if h.GuestAgent != nil {
		out.GuestAgent = &store.ResourceGuestAgent{}
	}
	if h.Exec != nil {
		out.Exec = &store.ResourceExecProbe{Command: []string{}}
		if !h.Exec.Command.IsNull() && !h.Exec.Command.IsUnknown() {
			diags.Append(h.Exec.Command.ElementsAs(ctx, &out.Exec.Command, false)...)
		}
	}
	if h.TCP != nil {
		out.TCP = &store.ResourceTCPProbe{Port: h.TCP.Port.ValueInt64()}
	}
	if h.HTTP != nil {
		out.HTTP = &store.ResourceHTTPProbe{Port: h.HTTP.Port.ValueInt64(), Path: h.HTTP.Path.ValueString(), ExpectStatus: h.HTTP.ExpectStatus.ValueInt64()}
	}
	return out
}
