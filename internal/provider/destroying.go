package provider

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

// destroyRuns caches, by the address the provider serves on, whether the Terraform process that
// talks to it runs a destroy (or a refresh): a provider process serves one Terraform command
// (in tests, one server per command, each on its own address).
var destroyRuns sync.Map // address -> bool

// destroying reports whether the Terraform command this call comes from is a destroy or a
// refresh: one whose plans of the configuration are never applied.
func destroying(ctx context.Context) bool {
	addr := ""
	if p, ok := peer.FromContext(ctx); ok && p.LocalAddr != nil {
		addr = p.LocalAddr.String()
	}
	if v, ok := destroyRuns.Load(addr); ok {
		return v.(bool)
	}
	yes := false
	for _, c := range terraformCommands(addr) {
		if destroyCommand(c.args, c.env) {
			yes = true
			break
		}
	}
	destroyRuns.Store(addr, yes)
	if yes {
		tflog.Info(ctx, "serving a destroy: plans of the configuration check nothing against the host")
	}
	return yes
}

// commandOf is the command this call comes from, as the group's protocol reads it: the
// adapter between the parent Terraform's command line (destroying) and groupproto.
func commandOf(ctx context.Context) groupproto.Command {
	if destroying(ctx) {
		return groupproto.CommandDestroy
	}
	return groupproto.CommandPlan
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
