package providerdata

import (
	"context"
	"strings"
	"sync"

	"github.com/hashicorp/terraform-plugin-log/tflog"
	"google.golang.org/grpc/peer"

	"github.com/virtfleet/terraform-provider-virt/internal/groupproto"
)

// A destroy must always be possible, whatever the configuration says: a `terraform destroy`
// (or `plan -destroy`, `apply -destroy`) first makes a normal plan of the whole configuration to
// refresh the state, and stops at the first error of that plan. So a plan-time check of the
// configuration's inputs against the host (a missing source volume, a disk the template lacks, a
// group already there) would keep a destroy from removing what an earlier, failed apply made,
// and only -refresh=false or -target would get out. Nothing in what Terraform sends a provider
// tells that plan from an ordinary one: the provider asks which command the Terraform process it
// serves runs, and in a destroy run its plans of the configuration check nothing (they are never
// applied; the destroy plan that follows, with a null proposed state, is the one that runs).
// The legacy `terraform refresh` is the same: it makes a normal plan only to keep its refreshed
// state, and a configuration that cannot be applied must not keep a state from being refreshed.

// commandDetector is the adapter between the Terraform process a provider serves and the
// group's protocol: it tells which command a call comes from (groupproto.Command) by reading the
// command line of the Terraform processes the provider serves (terraformCommands). Configure
// makes one for the provider's data; it caches its answer by the address the provider serves
// on, since a provider serves one Terraform command on one address (in tests, one server per
// command, each on its own address).
type commandDetector struct {
	runs sync.Map // address -> groupproto.Command
	// commands finds the Terraform processes served on an address: terraformCommands, or a
	// fake in tests.
	commands func(addr string) []command
}

func NewCommandDetector() *commandDetector {
	return &commandDetector{commands: terraformCommands}
}

// Command is the command this call comes from: CommandDestroy for a destroy or a legacy
// refresh, whose plans of the configuration are never applied; CommandPlan otherwise.
func (c *commandDetector) Command(ctx context.Context) groupproto.Command {
	addr := ""
	if p, ok := peer.FromContext(ctx); ok && p.LocalAddr != nil {
		addr = p.LocalAddr.String()
	}
	if v, ok := c.runs.Load(addr); ok {
		return v.(groupproto.Command)
	}
	cmd := groupproto.CommandPlan
	for _, t := range c.commands(addr) {
		if destroyCommand(t.args, t.env) {
			cmd = groupproto.CommandDestroy
			break
		}
	}
	c.runs.Store(addr, cmd)
	if cmd == groupproto.CommandDestroy {
		tflog.Info(ctx, "serving a destroy: plans of the configuration check nothing against the host")
	}
	return cmd
}

// Command is the command this call comes from (commandDetector). Without the provider's data
// (a provider not configured yet) the command line is read afresh.
func (d *ProviderData) Command(ctx context.Context) groupproto.Command {
	if d == nil || d.Commands == nil {
		return NewCommandDetector().Command(ctx)
	}
	return d.Commands.Command(ctx)
}

// Destroying reports whether the Terraform command this call comes from is a destroy or a
// refresh: one whose plans of the configuration are never applied.
func (d *ProviderData) Destroying(ctx context.Context) bool {
	return d.Command(ctx) == groupproto.CommandDestroy
}

// command is a process's arguments (the program first) and environment.
type command struct {
	args []string
	env  []string
}

// destroyCommand tells, from a Terraform (or OpenTofu) process's arguments and environment,
// whether it runs a destroy: `destroy`, or `plan`/`apply` with -destroy, on the command line or
// in TF_CLI_ARGS / TF_CLI_ARGS_<command>; or the legacy `refresh`. A saved plan applied with `apply PLANFILE` is not a
// destroy here: applying a saved plan plans nothing from the configuration.
func destroyCommand(args, env []string) bool {
	if len(args) < 2 {
		return false
	}
	sub, at := "", 0
	for i, a := range args[1:] {
		if !strings.HasPrefix(a, "-") {
			sub, at = a, i+2
			break
		}
	}
	switch sub {
	case "destroy", "refresh":
		return true
	case "plan", "apply":
	default:
		return false
	}
	flags := args[at:]
	for _, e := range env {
		k, v, _ := strings.Cut(e, "=")
		if k == "TF_CLI_ARGS" || k == "TF_CLI_ARGS_"+sub {
			flags = append(flags, strings.Fields(v)...)
		}
	}
	for _, f := range flags {
		switch strings.TrimPrefix(f, "-") {
		case "-destroy", "destroy", "-destroy=true", "destroy=true":
			return true
		}
	}
	return false
}
