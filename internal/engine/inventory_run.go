// The inventory a plan's run writes: an intent for each object it makes before it runs, each
// made object confirmed and each deleted one gone after (see inventory.go).

package engine

import "slices"

// inventoryOf is what the record keeps before the plan's operations run (the inventory with an
// intent for every object they make) and after they all ran (each made object confirmed, each
// deleted one gone). An object is made by a task only when the plan saw it absent, or when an
// earlier task of the plan deleted the group's own of that name: what was there already is not
// the group's (identity reuse keeps it out). makers names, for each intent of this plan (by its
// key), the operations whose tasks make that object (see InventoryAfterStop).
func (s GroupState) inventoryOf(waves []Wave) (before, after Inventory, makers map[string][]string) {
	if s.Listed == nil {
		return s.Inventory, s.Inventory, nil
	}
	makers = map[string][]string{}
	var maker string // the operation being walked
	// An object the record already holds is not this plan's to drop, whatever runs: its entry
	// stays, as an intent when the plan makes it again.
	had := map[string]bool{}
	for _, m := range s.Inventory.Items {
		had[m.key()] = true
	}
	before = Inventory{Kept: true, Items: slices.Clone(s.Inventory.Items)}
	final := map[string]Made{}
	for _, m := range s.Inventory.Items {
		final[m.key()] = m
	}
	deleted := map[string]bool{}
	made := func(m Made) {
		k := m.key()
		if _, ok := final[k]; ok {
			if _, mine := makers[k]; mine {
				makers[k] = append(makers[k], maker)
			}
			m.UUID = final[k].UUID
			m.Reclaimed = m.Reclaimed || final[k].Reclaimed
			final[k] = m
			return
		}
		present, known := s.Listed.present(m.Host, m.Name)
		if m.Kind != MadeDomain && m.Kind != MadeSnapshot && !deleted[k] && (!known || present) {
			return
		}
		m.Confirmed = false
		before.Items = append(before.Items, m)
		if !had[k] {
			makers[k] = append(makers[k], maker)
		}
		m.Confirmed = true
		final[k] = m
	}
	gone := func(domain bool, host, name string) {
		k := objectKey(domain, host, name)
		if _, ok := final[k]; ok {
			deleted[k] = true
			delete(final, k)
		}
		if !domain {
			// The snapshots inside a volume go with it.
			for sk, m := range final {
				if m.Kind == MadeSnapshot && HostOf(m.Host) == HostOf(host) && m.Name == name {
					delete(final, sk)
				}
			}
		}
	}
	var walk func(op Operation, tasks []Task)
	walk = func(op Operation, tasks []Task) {
		for _, t := range tasks {
			host := taskHost(op, t)
			v := t.Volume.Volume
			switch t.Kind {
			case TaskDeleteVolume, TaskDeleteNVRAM:
				gone(false, host, v)
			case TaskCreateVolume, TaskFreshVolume, TaskStage, TaskCopyVolume, TaskPrepareVolume:
				// A move's copy of a Reclaimed volume is Reclaimed too.
				made(Made{Kind: MadeVolume, Host: host, Name: v, Reclaimed: op.Kind == OpMove && s.Inventory.reclaimedName(v)})
				if t.Kind == TaskCopyVolume && HostOf(host) != HostOf(op.Host) {
					// A move's copy is the file's bytes, the snapshots inside it too: they are
					// the copy's from now on (the source's go with its volume).
					for _, sn := range s.Inventory.snapshotsOf(op.Host, v) {
						made(Made{Kind: MadeSnapshot, Host: host, Name: v, Tag: sn.Tag, Revision: sn.Revision, TakenAt: sn.TakenAt, ReadyAt: sn.ReadyAt})
					}
				}
			case TaskWriteSeed, TaskSwapSeed:
				made(Made{Kind: MadeSeed, Host: host, Name: SeedVolumeName(op.Name)})
			case TaskImportImage:
				// The group's copy of a host file: made when the pool lacked it.
				if t.Volume.Import != nil {
					made(Made{Kind: MadeVolume, Host: host, Name: t.Volume.Import.Volume})
				}
			case TaskForget:
				// An abandoned member takes its domain and volumes out of the group: they are
				// no longer the group's to delete or write over.
				for k, m := range final {
					if HostOf(m.Host) == host && (m.Name == op.Name || volumeOf(op.Name, m.Name)) {
						delete(final, k)
					}
				}
			case TaskSnapshot:
				sn := t.Snapshot
				made(Made{Kind: MadeSnapshot, Host: host, Name: sn.Volume, Tag: sn.Tag, Revision: sn.Revision, TakenAt: sn.TakenAt})
			case TaskDeleteSnapshot:
				k := Made{Kind: MadeSnapshot, Host: host, Name: t.Snapshot.Volume, Tag: t.Snapshot.Tag}.key()
				delete(final, k)
			case TaskUndefine:
				gone(true, host, op.Name)
			case TaskUndefineCopy:
				gone(true, host, op.Name)
			case TaskDefine:
				made(Made{Kind: MadeDomain, Host: host, Name: op.Name, UUID: t.UUID})
				if t.Desired.NVRAM != "" {
					made(Made{Kind: MadeNVRAM, Host: host, Name: t.Desired.NVRAM})
				}
			case TaskDefineNext:
				if t.Desired.NVRAM != "" {
					made(Made{Kind: MadeNVRAM, Host: host, Name: t.Desired.NVRAM})
				}
			case TaskMigrate:
				// Live, the member arrives defined on the target with its UUID; cold, its
				// Otherwise defines it there.
				made(Made{Kind: MadeDomain, Host: host, Name: op.Name, UUID: op.Step.UUID})
				gone(true, op.Host, op.Name)
				walk(op, t.Otherwise)
			default:
				// The rest neither make nor remove an object of the inventory.
			}
		}
	}
	for _, w := range waves {
		for _, op := range w.Ops {
			maker = op.Name
			walk(op, op.Early)
			walk(op, op.Tasks)
		}
	}
	after = Inventory{Kept: true}
	for _, m := range final {
		after.Items = append(after.Items, m)
	}
	return before.sorted(), after.sorted(), makers
}

// InventoryAfterStop is what the record keeps after a run of the plan that stopped at a failure:
// the inventory written before the run (Inventory) without the intents that only operations which
// never ran would have fulfilled. ran names the operations any of whose tasks ran. An object such
// an operation would have made was never made, and its intent, kept, would cost every later plan
// a look until an apply succeeds: a snapshot's, a read of its volume's qcow2 table, so that a
// 5,000-member rollout stopped in its first wave would have each plan read 5,000 tables (issue
// 47). An intent written by an earlier run, or one any operation that ran may have fulfilled,
// stays for the next plan to settle from the hosts.
func (p GroupPlan) InventoryAfterStop(ran []string) Inventory {
	if p.makers == nil {
		return p.Inventory
	}
	didRun := make(map[string]bool, len(ran))
	for _, n := range ran {
		didRun[n] = true
	}
	out := Inventory{Kept: p.Inventory.Kept}
	for _, m := range p.Inventory.Items {
		if ops, ok := p.makers[m.key()]; ok && !m.Confirmed && !slices.ContainsFunc(ops, func(n string) bool { return didRun[n] }) {
			continue
		}
		out.Items = append(out.Items, m)
	}
	return out
}

// withUUIDs gives every new definition of the waves that has no UUID a fresh one from next (nil:
// none), so that the inventory's intent of the domain holds the UUID it is defined with.
func withUUIDs(waves []Wave, next func() string) {
	if next == nil {
		return
	}
	var give func(tasks []Task)
	give = func(tasks []Task) {
		for i := range tasks {
			if tasks[i].Kind == TaskDefine && tasks[i].UUID == "" {
				tasks[i].UUID = next()
			}
			give(tasks[i].Otherwise)
		}
	}
	for _, w := range waves {
		for _, op := range w.Ops {
			give(op.Tasks)
		}
	}
}
