// What the snapshot scenario checks after each rerun: every byte of the live data disks and of
// their snapshots accounted for, the inventory against the volumes, no helper domain left.

package main

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// snapCheck is what the scenario's own inspection found, besides the common checks.
type snapCheck struct {
	lost      []string // a live disk or a snapshot whose bytes are not accounted for
	phantom   []string // the inventory holds a snapshot its volume does not
	leftover  []string // a volume holds a snapshot of the provider's that the inventory does not
	helpers   []string // snapshot helper domains left
	metadata  []string // libvirt snapshot metadata left on a member
	expected  []string // snapshots that should be gone by now and are not (deletion kind)
	notes     []string
	errs      []string
	snapshots int // snapshots the volumes hold
}

func (s snapCheck) violations() []string {
	var out []string
	add := func(kind string, items []string) {
		for _, i := range items {
			out = append(out, kind+": "+i)
		}
	}
	add("bytes not accounted for", s.lost)
	add("inventory holds a snapshot its volume lacks", s.phantom)
	add("snapshot outside the inventory", s.leftover)
	add("snapshot helper domain left", s.helpers)
	add("libvirt snapshot metadata left", s.metadata)
	add("snapshot not deleted", s.expected)
	add("inspection failed", s.errs)
	return out
}

func (s snapCheck) summary() string {
	v := s.violations()
	out := fmt.Sprintf("%d snapshots in the volumes", s.snapshots)
	if len(v) > 0 {
		out += "; " + strings.ToUpper(strings.Join(v, "; "))
	} else {
		out += ", every byte accounted for"
	}
	if len(s.notes) > 0 {
		out += "; note: " + strings.Join(s.notes, "; ")
	}
	return out
}

// snapInspect checks the data volumes, their snapshots, the group's inventory of them, and what
// libvirt holds, after a rerun. pre are the bytes before the rollout, pres every byte each volume
// had before a rollout; wrote is the member given the new pattern (digest garbage), reverted
// whether the rollback put its disk back; none says that every snapshot must be gone.
func (c *chaos) snapInspect(pre map[string]string, pres map[string][]string, wrote, garbage string, reverted, none bool) snapCheck {
	var s snapCheck
	ctx, cancel := withTimeout(3 * time.Minute)
	defer cancel()
	b := c.h.conn()

	inv := map[string][]engine.Made{}
	rec, err := b.ReadGroupRecord(ctx, groupName)
	if err != nil {
		s.errs = append(s.errs, "read the group record: "+err.Error())
	} else if gr, err := store.DecodeGroup(rec.Data); err != nil {
		s.errs = append(s.errs, "decode the group record: "+err.Error())
	} else {
		for _, m := range gr.Inventory.Items {
			if m.Kind == engine.MadeSnapshot {
				inv[m.Name] = append(inv[m.Name], m)
			}
		}
	}

	for i := 1; i <= c.o.members; i++ {
		member := memberName(i)
		name := dataVolume(member)
		path, err := c.h.volumePath(c.pool, name)
		if err != nil {
			s.errs = append(s.errs, err.Error())
			continue
		}
		live, _, err := checksum(path, c.scratch)
		if err != nil {
			s.errs = append(s.errs, err.Error())
			continue
		}
		c.sums[name] = live
		tags, err := volumeSnapshots(path)
		if err != nil {
			s.errs = append(s.errs, err.Error())
			continue
		}
		content := map[string]string{}
		for _, t := range tags {
			if !isProviderTag(t) {
				continue
			}
			s.snapshots++
			sum, err := snapshotChecksum(path, t, c.scratch)
			if err != nil {
				s.errs = append(s.errs, err.Error())
				continue
			}
			content[t] = sum
			if !slices.Contains(pres[name], sum) {
				s.lost = append(s.lost, fmt.Sprintf("snapshot %s of %s holds %.12s…, bytes the volume never had before a rollout", t, name, sum))
			}
			if !slices.ContainsFunc(inv[name], func(m engine.Made) bool { return m.Tag == t }) {
				s.leftover = append(s.leftover, fmt.Sprintf("%s@%s", name, t))
			}
		}
		var held []string
		for _, m := range inv[name] {
			state := "confirmed"
			if !m.Confirmed {
				state = "intent"
			}
			held = append(held, m.Tag+" ("+state+")")
			if _, ok := content[m.Tag]; !ok {
				s.phantom = append(s.phantom, fmt.Sprintf("%s@%s (%s)", name, m.Tag, state))
			}
		}
		if n := len(content); n > 1 {
			sort.Strings(held)
			s.notes = append(s.notes, fmt.Sprintf("%s holds %d snapshots (inventory: %s)", name, n, strings.Join(held, ", ")))
		}
		if none && len(content) > 0 {
			s.expected = append(s.expected, fmt.Sprintf("%s still holds %d snapshots past a retention of 0s", name, len(content)))
		}
		switch {
		case live == pre[name]:
		case member == wrote && live == garbage && !reverted:
			// The rollback did not reach the revert: the pre-rollout bytes must be in a
			// snapshot the group keeps.
			kept := false
			for _, m := range inv[name] {
				kept = kept || content[m.Tag] == pre[name]
			}
			if !kept {
				s.lost = append(s.lost, fmt.Sprintf("%s has the new image's bytes and no snapshot of the inventory holds its pre-rollout bytes %.12s…", name, pre[name]))
			} else {
				s.notes = append(s.notes, fmt.Sprintf("%s keeps the new image's bytes (the revert was not reached), its pre-rollout bytes in a snapshot", name))
			}
		case member == wrote && live == garbage:
			s.lost = append(s.lost, fmt.Sprintf("%s has the new image's bytes although the rollback put the disk back", name))
		default:
			s.lost = append(s.lost, fmt.Sprintf("%s has %.12s…, neither its pre-rollout bytes %.12s… nor the new image's", name, live, pre[name]))
		}
		if snaps, err := c.domainSnapshots(member); err != nil {
			s.errs = append(s.errs, err.Error())
		} else if len(snaps) > 0 {
			s.metadata = append(s.metadata, fmt.Sprintf("%s: %s", member, strings.Join(snaps, ", ")))
		}
	}
	for v, ms := range inv {
		if !strings.HasPrefix(v, groupName+"-") || !strings.HasSuffix(v, "-data.qcow2") {
			for _, m := range ms {
				s.notes = append(s.notes, fmt.Sprintf("inventory holds snapshot %s of %s", m.Tag, v))
			}
		}
	}
	helpers, err := b.ListDomains(ctx, "snapshot."+groupName+"-")
	if err != nil {
		s.errs = append(s.errs, "list domains: "+err.Error())
	}
	for _, d := range helpers {
		s.helpers = append(s.helpers, fmt.Sprintf("%s (%s)", d.Name, d.Status))
	}
	return s
}

// partialWrite moves the findings of a live disk that is neither its pre-rollout bytes nor the new
// pattern to the notes: the harness's own write was cut off part-way.
func partialWrite(lost, notes []string) ([]string, []string) {
	var keep []string
	for _, l := range lost {
		if strings.Contains(l, "neither its pre-rollout bytes") {
			notes = append(notes, l+" (the harness's write was cut off by the power-off)")
			continue
		}
		keep = append(keep, l)
	}
	return keep, notes
}
