package group

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// unsettledHosts are the hosts whose answer this plan's `instances` depends on though nothing
// keeps that answer until the apply's final plan, sorted: a plan made without the hosts a
// refresh saw (pinned false: -refresh=false after an apply, or a takeover) is made again, in the
// apply's process, from the hosts as they answer then. A host that did not answer (its members
// wait, no member moves or is placed there) or whose UUID was not read (a move from or to it is
// cold) may answer by then, and the final plan would contradict this one ("Provider produced
// inconsistent final plan"): `instances` is then known after apply (when the plan changes the
// resource: one that does not is not applied).
//
// With the hosts pinned (seen, the hosts as the plan's refresh saw them), only a host that
// refresh did not read counts: one the configuration adds to the group's hosts is read by each
// plan anew.
func unsettledHosts(p engine.GroupPlan, o reconcile.Observation, pinned bool, seen *reconcile.HostsSeen) []string {
	counts := func(h string) bool { return !pinned || !seen.Covers(h) }
	set := map[string]bool{}
	for h := range o.Down {
		if counts(h) {
			set[h] = true
		}
	}
	for _, mv := range p.Moves {
		if mv.Phase != engine.MoveStart || mv.Move.Live {
			continue
		}
		for _, h := range []string{engine.HostOf(mv.Move.From), engine.HostOf(mv.Move.To)} {
			if o.HostUUIDs[h] == "" && (!pinned || !seen.KeepsUUID(h)) {
				set[h] = true
			}
		}
	}
	out := make([]string, 0, len(set))
	for h := range set {
		out = append(out, h)
	}
	sort.Strings(out)
	return out
}

// warnUnsettledHosts says why the group's `instances` is known only after apply (unsettledHosts).
func warnUnsettledHosts(ctx context.Context, diags *diag.Diagnostics, group string, hosts []string) {
	tflog.Warn(ctx, "the group's instances are known after apply: hosts did not answer in full", map[string]any{"group": group, "hosts": hosts})
	diags.AddWarning(fmt.Sprintf("Instances of group %s are known after apply: hosts %s did not answer in full", group, strings.Join(hosts, ", ")),
		fmt.Sprintf("This plan was made without a refresh of the group (or takes it over), and hosts %s did not answer it in full (their members, or their UUIDs, which decide whether a move is live). The apply plans the group again from the hosts as they answer then, so what it does to the members may differ from what this plan would show: `instances` is known after apply. A plan with refresh shows each member's planned action.", strings.Join(hosts, ", ")))
}
