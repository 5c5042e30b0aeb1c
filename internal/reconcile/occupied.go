package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// NamesTakenError is returned when another group's members have the names a new group's
// members would get.
type NamesTakenError struct {
	Group   string
	Domains []string
}

func (e *NamesTakenError) Error() string {
	return fmt.Sprintf("group %s cannot be created: domains %s have the names its members would get. Nothing was changed. Choose another base_instance_name (or name)",
		e.Group, strings.Join(e.Domains, ", "))
}

// Occupied tells whether something on the host already takes the place of a new group g, as an
// *engine.ExistsError (domains whose record names the group: members left without their group record;
// domains no provider created under the names its members would get) or a *NamesTakenError
// (another group's members under those names). It returns nil when the place is free.
func (r *Reconciler) Occupied(ctx context.Context, g engine.Group) error {
	var doms []backend.Domain
	for _, h := range g.HostList() {
		b, err := r.host(h)
		if err != nil {
			return err
		}
		on, err := b.ListDomains(ctx, g.Base+"-")
		if err != nil {
			return err
		}
		doms = append(doms, on...)
	}
	var members, others, foreign []string
	for _, d := range doms {
		_, named := engine.ParseInstanceIndex(g.Base, d.Name)
		switch {
		case d.Record != nil && d.Record.Group == g.Name:
			members = append(members, d.Name)
		case !named:
		case d.Record == nil:
			others = append(others, d.Name)
		default:
			foreign = append(foreign, fmt.Sprintf("%s (a member of group %s)", d.Name, d.Record.Group))
		}
	}
	switch {
	case len(members) > 0:
		return &engine.ExistsError{Group: g.Name, Why: fmt.Sprintf("domains %s are its members, though it has no group record", strings.Join(members, ", "))}
	case len(others) > 0:
		return &engine.ExistsError{Group: g.Name, Why: fmt.Sprintf("domains %s, which no provider created, have the names its members would get", strings.Join(others, ", "))}
	case len(foreign) > 0:
		return &NamesTakenError{Group: g.Name, Domains: foreign}
	}
	// Another group whose members are named the same way (the same base_instance_name) may have
	// none now, and still own volumes under those names (disks its scale-in kept).
	first := engine.InstanceName(g.Base, 1)
	for _, h := range g.HostList() {
		b, err := r.host(h)
		if err != nil {
			return err
		}
		var claimed []string
		if err := claimsOn(ctx, b, h, g.Name, []string{first}, func(_, who string) { claimed = append(claimed, who) }); err != nil {
			return err
		}
		if len(claimed) > 0 {
			return &NamesTakenError{Group: g.Name, Domains: []string{fmt.Sprintf("%s and the rest of the %s-<index> names (claimed by %s)", first, g.Base, strings.Join(claimed, ", "))}}
		}
	}
	return nil
}

// TakenNames returns, of the names a plan would create members under, those that domains
// outside the group already have, each with who has it.
func (o Observation) TakenNames(group string, names []string) []string {
	var out []string
	for _, n := range names {
		d, ok := o.All[n]
		switch {
		case !ok:
		case d.Record == nil:
			out = append(out, n+" (a domain no provider created)")
		case d.Record.Group != group:
			out = append(out, fmt.Sprintf("%s (a member of group %s)", n, d.Record.Group))
		}
	}
	return out
}
