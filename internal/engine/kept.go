package engine

import (
	"slices"
	"strings"
)

// Kept volumes outlive their group by record, not by name. A group destroy that keeps volumes
// the group made (delete_rule NEVER, now or in an earlier scale-in) writes them, host and name,
// into the group's kept record before the group record goes (GroupPlan.KeptRecord; merged with a
// kept record already there). The first record write of a group of that name takes them into
// its inventory (TakeOver), marked Reclaimed, and the kept record goes after that write. Killed
// between any two of these writes, the next apply finds either the group record (which still
// has them in its inventory) or the kept record (which still lists them): no kept volume is ever
// without a record that says the group made it, and a listed volume that is gone by then is
// dropped by the next plan (recovered).
//
// Why the mark: a create that reuses kept volumes may fail before the group's stateful policy is
// created (Terraform then taints the group, and its replacement's destroy runs with no policy),
// and without a policy a data disk is stateless and deleted with its member. A Reclaimed volume is
// never deleted by a destroy, a scale-in or a sweep, whatever the policy says; a move copies it
// and deletes its checked source (the copy is Reclaimed too). The mark is cleared once the
// group's stateful policy or a config preserves the disk (clearReclaimed): from then on its
// delete_rule governs it as for any preserved disk. Keeping the mark for ever would be simpler,
// but a user who later sets delete_rule = "ON_PERMANENT_INSTANCE_DELETION" would then never see
// the volume deleted, and every destroy would hand it on to the next group of the name.

// KeptRecordName is the name the kept record of a group is stored under beside group records:
// a '.' is not allowed in a group name (NamePattern), so it never names a group's own record.
func KeptRecordName(group string) string { return group + ".kept" }

// IsKeptRecordName reports whether a record name is a kept record's, not a group's.
func IsKeptRecordName(name string) bool { return strings.HasSuffix(name, ".kept") }

// keptRecordOf is what a destroy plan keeps of the group's inventory: every volume of it that
// the plan's tasks do not delete, confirmed, by host and name.
func keptRecordOf(inv Inventory, waves []Wave) []Made {
	deleted := map[string]bool{}
	var walk func(op Operation, tasks []Task)
	walk = func(op Operation, tasks []Task) {
		for _, t := range tasks {
			host := taskHost(op, t)
			if t.Kind == TaskDeleteVolume {
				deleted[objectKey(false, host, t.Volume.Volume)] = true
			}
			walk(op, t.Otherwise)
		}
	}
	for _, w := range waves {
		for _, op := range w.Ops {
			walk(op, op.Early)
			walk(op, op.Tasks)
		}
	}
	var out []Made
	for _, m := range inv.Items {
		if m.Kind != MadeVolume || deleted[m.key()] {
			continue
		}
		out = append(out, Made{Kind: MadeVolume, Host: HostOf(m.Host), Name: m.Name, Confirmed: true})
	}
	return Inventory{Items: out}.sorted().Items
}

// MergeKept is the kept record a destroy writes: what it keeps and what a kept record already
// there listed (an earlier group of the name, whose create was cut off before it removed the
// record), each once.
func MergeKept(earlier, kept []Made) []Made {
	var out []Made
	for _, m := range slices.Concat(earlier, kept) {
		out = append(out, Made{Kind: MadeVolume, Host: HostOf(m.Host), Name: m.Name, Confirmed: true})
	}
	return Inventory{Items: out}.sorted().Items
}

// TakeOver is the inventory of a group's first record with the volumes of the kept record of
// an earlier group of its name, each Reclaimed. They enter as confirmed entries: the first plan
// drops those whose volume is not on its host (recovered), before anything is planned on them.
func (inv Inventory) TakeOver(kept []Made) Inventory {
	if len(kept) == 0 {
		return inv
	}
	out := Inventory{Kept: true, Items: slices.Clone(inv.Items)}
	for _, m := range kept {
		if m.Kind != MadeVolume || out.Has(m.Host, m.Name) {
			continue
		}
		out.Items = append(out.Items, Made{Kind: MadeVolume, Host: HostOf(m.Host), Name: m.Name, Confirmed: true, Reclaimed: true})
	}
	return out.sorted()
}

// reclaimed reports whether the inventory's entry of the volume on host carries the mark.
func (inv Inventory) reclaimed(host, volume string) bool {
	host = HostOf(host)
	return slices.ContainsFunc(inv.Items, func(m Made) bool { return m.Reclaimed && m.is(false, host, volume) })
}

// reclaimedName reports whether a volume of that name carries the mark on any host: a move's
// copy of it carries it too.
func (inv Inventory) reclaimedName(volume string) bool {
	return slices.ContainsFunc(inv.Items, func(m Made) bool { return m.Reclaimed && m.Kind != MadeDomain && m.Name == volume })
}

// clearReclaimed takes the mark off every volume the group's stateful policy or a config now
// preserves: its delete_rule decides its fate from then on.
func (s GroupState) clearReclaimed(inv Inventory) Inventory {
	for i, m := range inv.Items {
		if m.Reclaimed && s.preservedVolume(m.Name) {
			inv.Items[i].Reclaimed = false
		}
	}
	return inv
}

// preservedVolume reports whether the volume is a member's disk that the stateful policy or the
// member's config preserves now.
func (s GroupState) preservedVolume(v string) bool {
	instance, device, staged, ok := s.ownerOf(v)
	if !ok || staged {
		return false
	}
	fromPolicy, fromConfig := Preserve(instance, s.Group.Template, s.StatefulPolicy(), s.Config(instance))
	if d, ok := fromPolicy.Disks[device]; ok && d.Source == v {
		return true
	}
	for _, d := range fromConfig.Disks {
		if d.Source == v {
			return true
		}
	}
	return false
}
