// This file holds who a member is when records were damaged by hand: the group record's word
// over a domain's metadata, and a destroy run that makes nothing.

package engine

// RecordLostWhy is what a plan says of a member whose own record was removed from its domain's
// metadata: the group record holds it, and its record is written back.
const RecordLostWhy = "member record missing from the domain's metadata: written back (the group record holds the member)"

// HoldsIdentity reports whether the group record holds the listed domain as one of its members,
// whatever the domain's metadata says: what makes a domain that lost its member record (removed
// by hand) the member still, rather than a stranger whose name the group then tries to create
// again. It is the one place identity by the record is decided. Where the inventory holds the
// member's domain with its UUID, the UUID decides: a domain of the member's name and another
// UUID (defined by hand after the member went) is not the member. Otherwise (a record of an
// earlier release, or a plan that did not read the inventory) the record holds where it placed
// each member (Placement), and a domain is held when its name is placed on its host.
//
// A member the record lists as being created (Creating) is not held: its domain is defined with
// its member record, so one of its name without a record is not known to be the group's.
func (s GroupState) HoldsIdentity(l Listed) bool {
	if s.Group.Base == "" || l.Recorded || l.Adopted || s.Group.Abandoned(l.Name) {
		// An abandoned member's record is removed on purpose, and its domain is no longer the
		// group's, even while the placement still names it (an abandonment cut off).
		return false
	}
	if m, ok := s.Inventory.Domain(HostOf(l.Host), l.Name); ok && m.UUID != "" {
		if m.UUID != l.UUID {
			return false
		}
	} else if host, placed := s.Placement[l.Name]; !placed || HostOf(host) != HostOf(l.Host) {
		return false
	}
	for _, c := range s.Creating {
		if c == l.Name {
			return false
		}
	}
	return true
}

// LostRecord is the record of a member whose domain lost it (HoldsIdentity): nothing of what it
// had is known but its domain, so it is taken as built from the group's template with its
// policy and config as they are now, and its record is written back by the next plan (its
// template revision is unknown, which every plan writes). It is never a reason to create,
// replace or delete anything: its disks are the ones attached, and its volumes keep the fates
// that template, policy and config give them.
func (s GroupState) LostRecord(name string) ManagedInstance {
	fromPolicy, fromConfig := Preserve(name, s.Group.Template, s.StatefulPolicy(), s.Config(name))
	return ManagedInstance{
		Current:             Desire(name, s.Group.Template, fromPolicy, fromConfig),
		PreservedFromPolicy: fromPolicy,
		PreservedFromConfig: fromConfig,
		Template:            s.Group.Template,
	}
}

// Makes reports whether a task makes something or brings a member up: a domain or a definition,
// a volume, a seed, a copy, a network entry, a start. A destroy run's plans have none of them
// (see DestroyRun).
func (k TaskKind) Makes() bool {
	switch k {
	case TaskNameFree, TaskCreateVolume, TaskFreshVolume, TaskStage, TaskWriteSeed, TaskSwapSeed, TaskDefine,
		TaskDefineNext, TaskDefineAgain, TaskStart, TaskWaitReady, TaskReserve, TaskCopyVolume, TaskPrepareVolume, TaskMigrate, TaskImportImage:
		return true
	default:
		// The rest delete, stop, release, describe or write records; a refusal changes nothing.
		return false
	}
}

// Makes reports whether any task of the operation makes something (TaskKind.Makes).
func (op Operation) Makes() bool {
	for _, ts := range [][]Task{op.Early, op.Tasks} {
		for _, t := range ts {
			if t.Kind.Makes() {
				return true
			}
		}
	}
	return false
}

// leaveMaking takes out of the plan every operation that makes something (Operation.Makes), for a
// plan made in a destroy run (Env.DestroyRun): the group's policy and configs are removed before
// the group itself, and what their removal applies must not create a member, a volume or a
// definition that the group's destroy then deletes, nor fail on a name that a member whose record
// was damaged still holds. What is left deletes, stops and writes records. The members it would
// have created are not placed.
func (p *GroupPlan) leaveMaking() {
	creating := map[string]bool{}
	for _, n := range p.Creating {
		creating[n] = true
		delete(p.Placement, n)
	}
	p.Create, p.Creating = nil, nil
	final := p.Final[:0:0]
	for _, m := range p.Final {
		if !creating[m.Name] {
			final = append(final, m)
		}
	}
	p.Final = final
	var waves []Wave
	for _, w := range p.Waves {
		var ops []Operation
		for _, op := range w.Ops {
			if !op.Makes() {
				ops = append(ops, op)
			}
		}
		if len(ops) > 0 {
			waves = append(waves, Wave{Ops: ops})
		}
	}
	p.Waves = waves
}
