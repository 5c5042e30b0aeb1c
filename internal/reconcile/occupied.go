package reconcile

import (
	"context"
	"fmt"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// NamesTakenError is returned when another group's members have the names a new group's
// members would get (engine.Group.Occupied decides).
type NamesTakenError = engine.NamesTakenError

// Occupied tells whether something on the host already takes the place of a new group g, as
// engine.Group.Occupied decides from the domains under g's names on every host, or as another
// group's claim on those names (a *NamesTakenError). It returns nil when the place is free, with
// the domains g adopts by their names (engine.Group.Adopts).
func (r *Reconciler) Occupied(ctx context.Context, g engine.Group) (adopts []string, err error) {
	var listing []engine.Listed
	for _, h := range g.HostList() {
		b, err := r.host(h)
		if err != nil {
			return nil, err
		}
		var on []backend.Domain
		err = readHost(ctx, h, func(ctx context.Context) error {
			var err error
			on, err = b.ListDomains(ctx, g.Base+"-")
			return err
		})
		if err != nil {
			return nil, err
		}
		for _, d := range on {
			listing = append(listing, listedOf(d, h))
		}
	}
	if err := g.Occupied(listing); err != nil {
		return nil, err
	}
	// Another group whose members are named the same way (the same base_instance_name) may have
	// none now, and still own volumes under those names (disks its scale-in kept).
	first := engine.InstanceName(g.Base, 1)
	for _, h := range g.HostList() {
		b, err := r.host(h)
		if err != nil {
			return nil, err
		}
		var claimed []string
		var got []string
		if err := readHost(ctx, h, func(ctx context.Context) error {
			return claimsOn(ctx, b, h, g.Name, []string{first}, func(_, who string) { got = append(got, who) })
		}); err != nil {
			return nil, err
		}
		claimed = got
		if len(claimed) > 0 {
			return nil, &NamesTakenError{Group: g.Name, Domains: []string{fmt.Sprintf("%s and the rest of the %s-<index> names (claimed by %s)", first, g.Base, strings.Join(claimed, ", "))}}
		}
	}
	return g.Adopts(listing), nil
}

// TakenNames splits, of the names a plan would create members under, those that domains
// outside the group already have: held by domains no provider created, and others, each with the
// group whose member has it.
func (o Observation) TakenNames(group string, names []string) (held, others []string) {
	for _, n := range names {
		d, ok := o.All[n]
		switch {
		case !ok:
		case d.Record == nil && d.Adopted:
			others = append(others, fmt.Sprintf("%s (adopted by a virt_domain resource)", n))
		case d.Record == nil:
			held = append(held, n)
		case d.Record.Group != group:
			others = append(others, fmt.Sprintf("%s (a member of group %s)", n, d.Record.Group))
		}
	}
	return held, others
}

// listedOf is how the engine sees a listed domain of host h: its member record's group and
// index, and whether a virt_domain resource adopted it.
func listedOf(d backend.Domain, h string) engine.Listed {
	l := engine.Listed{Name: d.Name, Host: h, Adopted: d.Adopted}
	if d.Record != nil {
		l.Recorded, l.Group, l.Index = true, d.Record.Group, d.Record.Index
		if mv := d.Record.Instance.Move; mv != nil {
			l.MoveTo = mv.To
		}
	}
	return l
}

// otherOwner says who holds a domain of another owner, for the error that its name is taken.
func otherOwner(d backend.Domain, h string) string {
	if d.Record == nil {
		return fmt.Sprintf("a virt_domain resource (domain %s on host %s carries its adoption record)", d.Name, h)
	}
	return fmt.Sprintf("group %q (domain %s on host %s carries its record)", d.Record.Group, d.Name, h)
}
