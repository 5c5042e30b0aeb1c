package reconcile

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// Names that are another's: what Observe marks as taken (engine's Env.Taken) and what a plan
// asks before a group that has no record yet takes a name.

// take marks a name as held by who, unless it already is.
func (o *Observation) take(name, who string) {
	if o.Taken == nil {
		o.Taken = map[string]string{}
	}
	if _, ok := o.Taken[name]; !ok {
		o.Taken[name] = who
	}
}

// otherGroupsClaims marks the names outside the group's scheme that its configs give and that
// another group claims (engine's GroupState.Claims): another group's member scaled in with its
// disks kept has no domain, yet its volumes are that group's. Only a group with such configs
// reads the other groups' records.
func (r *Reconciler) otherGroupsClaims(ctx context.Context, s engine.GroupState, hosts []string, o *Observation) error {
	var names []string
	for name := range s.Configs {
		if _, ours := o.Domains[name]; !ours && s.Named(name) && o.Taken[name] == "" {
			names = append(names, name)
		}
	}
	if len(names) == 0 {
		return nil
	}
	sort.Strings(names)
	for _, h := range hosts {
		if _, down := o.Down[h]; down {
			continue
		}
		b, err := r.host(h)
		if err != nil {
			return err
		}
		var taken [][2]string
		if err := readHost(ctx, h, func(ctx context.Context) error {
			return claimsOn(ctx, b, h, s.Group.Name, names, func(name, who string) { taken = append(taken, [2]string{name, who}) })
		}); err != nil {
			return err
		}
		for _, t := range taken {
			o.take(t[0], t[1])
		}
	}
	return nil
}

// claimsOn calls take for every name of names that a group other than self claims in its
// record on host h.
func claimsOn(ctx context.Context, b backend.GroupRecords, h, self string, names []string, take func(name, who string)) error {
	groups, err := b.ListGroups(ctx)
	if err != nil {
		return fmt.Errorf("list the group records on host %s: %w", h, err)
	}
	for _, g := range groups {
		if g == self {
			continue
		}
		rec, err := readOtherRecord(ctx, b, g)
		if errors.Is(err, backend.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read the record of group %s on host %s: %w", g, h, err)
		}
		other, err := store.DecodeGroup(rec.Data)
		if err != nil {
			return fmt.Errorf("group record of %s on host %s (generation %d) cannot be decoded: %w", g, h, rec.Generation, err)
		}
		for _, name := range names {
			if other.GroupState.Claims(name) {
				take(name, fmt.Sprintf("group %q (its record on host %s claims the name)", g, h))
			}
		}
	}
	return nil
}

// otherRecordReads bounds the reads of another group's record while its writers change it.
const otherRecordReads = 5

// readOtherRecord reads another group's record for its claims. That group's own apply or destroy
// may be writing it at the same moment (two states on one host, or the acceptance tests in
// parallel): its newest generation then goes between the listing and the read (ErrConflict),
// which for this group's plan only means "read again": the next read finds the newer generation,
// or nothing once the record is deleted. Only a record that keeps changing under every read is an
// error.
func readOtherRecord(ctx context.Context, b backend.GroupRecords, group string) (backend.GroupRecord, error) {
	var err error
	for range otherRecordReads {
		processCounts.recordReads.Add(1)
		var rec backend.GroupRecord
		rec, err = b.ReadGroupRecord(ctx, group)
		if !errors.Is(err, backend.ErrConflict) {
			return rec, err
		}
	}
	return backend.GroupRecord{}, err
}

// NameHolder says who holds the name on the provider's hosts, for a group that has no record
// yet: a domain of the name (another group's member, or one no provider created: unmanaged is
// then true), or another group's claim in its record; "" when nothing does. A host that does not
// answer is skipped: the apply, which observes the group's hosts, checks again.
func (r *Reconciler) NameHolder(ctx context.Context, group, name string) (who string, unmanaged bool, err error) {
	for _, h := range r.HostNames() {
		b, err := r.host(h)
		if err != nil {
			return "", false, err
		}
		var doms []backend.Domain
		err = readHost(ctx, h, func(ctx context.Context) error {
			var err error
			doms, err = b.ListDomains(ctx, name, name)
			return err
		})
		if err != nil {
			tflog.Warn(ctx, "host cannot be reached: the name is not checked there", map[string]any{"host": h, "name": name, "error": err.Error()})
			continue
		}
		for _, d := range doms {
			switch {
			case d.Name != name:
			case d.Record == nil && d.Adopted:
				return otherOwner(d, h), false, nil
			case d.Record == nil:
				return fmt.Sprintf("a domain no provider created (on host %s)", h), true, nil
			case d.Record.Group != group:
				return fmt.Sprintf("group %q (domain %s on host %s carries its record)", d.Record.Group, name, h), false, nil
			}
		}
		var claimed string
		if err := readHost(ctx, h, func(ctx context.Context) error {
			return claimsOn(ctx, b, h, group, []string{name}, func(_, w string) {
				if claimed == "" {
					claimed = w
				}
			})
		}); err != nil {
			return "", false, err
		}
		who = claimed
		if who != "" {
			return who, false, nil
		}
	}
	return "", false, nil
}
