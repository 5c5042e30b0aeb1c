// This file holds what a destroy does while hosts of the group do not answer: its plan says so,
// and nothing of the group (its policy, its configs) goes before the group itself can.

package providerdata

import (
	"context"
	"fmt"
	"sort"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// destroyWaitsError says that a group's destroy cannot proceed now: members of it are on hosts
// that do not answer (engine.PlanDestroy blocks on them).
type destroyWaitsError struct {
	group   string
	down    []string
	blocked []engine.Blocked
}

func (e *destroyWaitsError) Error() string {
	return fmt.Sprintf("group %s cannot be destroyed now: hosts that did not answer: %s; members that cannot be deleted yet: %s",
		e.group, strings.Join(e.down, ", "), e.members())
}

func (e *destroyWaitsError) members() string {
	names := make([]string, len(e.blocked))
	for i, b := range e.blocked {
		names[i] = b.String()
	}
	return strings.Join(names, "; ")
}

// Warning is what a destroy plan says of it: the summary and the detail of its warning.
func (e *destroyWaitsError) Warning() (string, string) {
	return "Group " + e.group + " cannot be destroyed until its hosts answer",
		fmt.Sprintf("Hosts that did not answer: %s.\nMembers that cannot be deleted yet: %s.\n\nThe apply of this destroy fails and deletes nothing of the group: its members, its volumes, its stateful policy and its per-instance configs stay, in the state and on the hosts. Destroy again once every host answers.",
			strings.Join(e.down, ", "), e.members())
}

// NewDestroyWaits is why the destroy planned as p cannot proceed, down being the hosts that did not
// answer its observation; nil when it can.
func NewDestroyWaits(group string, p engine.GroupPlan, down map[string]error) *destroyWaitsError {
	if len(p.Blocked) == 0 {
		return nil
	}
	hosts := make([]string, 0, len(down))
	for h := range down {
		hosts = append(hosts, h)
	}
	sort.Strings(hosts)
	return &destroyWaitsError{group: group, down: hosts, blocked: p.Blocked}
}

// GroupDestroyWaits is why the destroy of group cannot proceed now (destroyWaitsError), or the
// error that kept it from being told; nil when it can, or when the group has no record.
//
// A policy or a config of the group is removed only when it is nil. Terraform destroys them
// before the group (they name it), and a destroy that removed them and then stopped at the
// group's own refusal would leave the group without the rules it was planned with: its members
// would follow the group's rules alone when it is destroyed later. A Delete cannot tell whether
// the group goes in the same run (a saved plan applied is not known to be a destroy), so the
// check holds for every removal: while members are on hosts that do not answer, the policy and
// the configs stay.
func (d *ProviderData) GroupDestroyWaits(ctx context.Context, group string) error {
	s, found, err := d.LoadGroup(ctx, group)
	if err != nil {
		return err
	}
	if !found {
		return nil
	}
	p, o, err := d.Reconciler.PreviewDestroy(ctx, s)
	if err != nil {
		return err
	}
	if w := NewDestroyWaits(group, p, o.Down); w != nil {
		return w
	}
	return nil
}

// WaitsForGroupHosts is the detail of the error that refuses to remove what (a group's policy
// or config) while the group's destroy cannot proceed.
func WaitsForGroupHosts(what string, err error) string {
	return fmt.Sprintf("%v.\n\nNothing was changed: %s stays, in the state and in the group record, until the group's destroy can proceed, so that the group is never left without it half-way through a destroy (its NEVER rules keep protecting the members' disks). Run the destroy (or this apply) again once every host of the group answers.", err, what)
}
