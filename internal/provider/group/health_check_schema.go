package group

import (
	"fmt"
	"regexp"

	"github.com/hashicorp/terraform-plugin-framework-validators/int64validator"
	"github.com/hashicorp/terraform-plugin-framework-validators/stringvalidator"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/int64default"
	"github.com/hashicorp/terraform-plugin-framework/resource/schema/stringdefault"
	"github.com/hashicorp/terraform-plugin-framework/schema/validator"
	"github.com/hashicorp/terraform-plugin-framework/types"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// healthCheckBlock is template.health_check: how a running member's health is judged from inside
// the guest. It is not part of the template's revision, so changing it changes no member.
func healthCheckBlock() schema.SingleNestedBlock {
	threshold := func(what string, def int) schema.Int64Attribute {
		return schema.Int64Attribute{
			MarkdownDescription: fmt.Sprintf("%s Default %d; from %d to %d.", what, def, engine.HealthThresholdRule.Min, engine.HealthThresholdRule.Max),
			Optional:            true,
			Computed:            true,
			Default:             int64default.StaticInt64(int64(def)),
			Validators:          []validator.Int64{intIn(engine.HealthThresholdRule)},
		}
	}
	// Required inside the block, but the framework refuses a required attribute of a single
	// nested block even when the block is absent: checkHealthCheck requires it.
	port := schema.Int64Attribute{
		MarkdownDescription: fmt.Sprintf("**Required.** TCP port on the member's address, from %d to %d.", engine.ProbePortRule.Min, engine.ProbePortRule.Max),
		Optional:            true,
		Validators:          []validator.Int64{intIn(engine.ProbePortRule)},
	}
	return schema.SingleNestedBlock{
		MarkdownDescription: "Judges each running member by a probe from inside the guest, with exactly one probe block: `guest_agent`, `exec`, `tcp` or `http`. A member whose probe fails `unhealthy_threshold` times in a row is `UNHEALTHY`, and autohealing and `failed_instance_preservation` act on it as on a `FAILED` one; rollouts wait for the members they start to be `HEALTHY` (`update_policy.min_ready`, `ready_timeout`). Probes run at refresh, for every running member, and during an apply after each member a wave created, restarted or replaced. With `auto_healing`, a member is `STARTING`, not yet judged, for `auto_healing.initial_delay` after it was created or repaired; without `auto_healing` there is no such grace. Adding, changing or removing the block changes no member: it is not part of the template's revision. `guest_agent` and `exec` need the QEMU guest agent (`qemu-guest-agent`) running in the guest; `tcp` and `http` connect from the machine that runs Terraform, which needs a route to the members' addresses. See the guide *Health checks*.",
		Attributes: map[string]schema.Attribute{
			"interval": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("Time from one probe of a member to the next while its health is undecided. Default `%q`; at least %s and at most %s.", engine.FormatDuration(engine.DefaultProbeInterval), engine.FormatDuration(engine.ProbeIntervalRule.Min), engine.FormatDuration(engine.ProbeIntervalRule.Max)),
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.FormatDuration(engine.DefaultProbeInterval)),
				Validators:          []validator.String{providerdata.DurationIn(engine.ProbeIntervalRule)},
			},
			"timeout": schema.StringAttribute{
				MarkdownDescription: fmt.Sprintf("How long one probe may take before it counts as failed. Default `%q`; at least %s, and at most `interval`.", engine.FormatDuration(engine.DefaultProbeTimeout), engine.FormatDuration(engine.ProbeTimeoutRule.Min)),
				Optional:            true,
				Computed:            true,
				Default:             stringdefault.StaticString(engine.FormatDuration(engine.DefaultProbeTimeout)),
				Validators:          []validator.String{providerdata.DurationIn(engine.ProbeTimeoutRule)},
			},
			"healthy_threshold":   threshold("Probes in a row that must pass for a member to be `HEALTHY`.", engine.DefaultHealthyThreshold),
			"unhealthy_threshold": threshold("Probes in a row that must fail for a member to be `UNHEALTHY`.", engine.DefaultUnhealthyThreshold),
		},
		Blocks: map[string]schema.Block{
			"guest_agent": schema.SingleNestedBlock{
				MarkdownDescription: "Pings the QEMU guest agent through libvirt (`guest-ping`): healthy when the agent answers. Works over every transport, with no network path to the guest; needs `qemu-guest-agent` in the guest (every member has its `org.qemu.guest_agent.0` channel). Takes no arguments: `guest_agent {}`.",
			},
			"exec": schema.SingleNestedBlock{
				MarkdownDescription: "Runs a command in the guest through the QEMU guest agent (`guest-exec`, then `guest-exec-status` until it ends or `timeout` passes): healthy on exit status 0. A failed probe's exit status and the first 1 KiB of its output are the member's health reason. Needs `qemu-guest-agent` in the guest.",
				Attributes: map[string]schema.Attribute{
					"command": schema.ListAttribute{
						MarkdownDescription: "**Required.** The program's absolute path in the guest, then its arguments, such as `[\"/bin/tiny-service\", \"status\"]`. No shell runs it: for one, give `[\"/bin/sh\", \"-c\", \"...\"]`.",
						ElementType:         types.StringType,
						Optional:            true,
					},
				},
			},
			"tcp": schema.SingleNestedBlock{
				MarkdownDescription: "Opens a TCP connection to `port` on the member's address (its DHCP lease, or what the guest agent reports) from the machine that runs Terraform: healthy when it connects. That machine needs a route to the guest.",
				Attributes:          map[string]schema.Attribute{"port": port},
			},
			"http": schema.SingleNestedBlock{
				MarkdownDescription: "Sends `GET path` to `port` on the member's address from the machine that runs Terraform: healthy when the answer's status is `expect_status`. That machine needs a route to the guest.",
				Attributes: map[string]schema.Attribute{
					"port": port,
					"path": schema.StringAttribute{
						MarkdownDescription: fmt.Sprintf("The request's path, starting with `/`. Default `%q`.", engine.DefaultHTTPPath),
						Optional:            true,
						Computed:            true,
						Default:             stringdefault.StaticString(engine.DefaultHTTPPath),
						Validators:          []validator.String{stringvalidator.RegexMatches(httpPathRegexp, "must start with \"/\"")},
					},
					"expect_status": schema.Int64Attribute{
						MarkdownDescription: fmt.Sprintf("The status a healthy member answers with. Default %d; from %d to %d.", engine.DefaultHTTPExpectStatus, engine.ExpectStatusRule.Min, engine.ExpectStatusRule.Max),
						Optional:            true,
						Computed:            true,
						Default:             int64default.StaticInt64(engine.DefaultHTTPExpectStatus),
						Validators:          []validator.Int64{intIn(engine.ExpectStatusRule)},
					},
				},
			},
		},
	}
}

// intIn accepts the integers rule allows; the bounds live in the engine.
func intIn(rule engine.IntRule) validator.Int64 {
	return int64validator.Between(rule.Min, rule.Max)
}

// httpPathRegexp is an HTTP probe's path: absolute, with no space or control character.
var httpPathRegexp = regexp.MustCompile(`^/[^\x00-\x20\x7f]*$`)
