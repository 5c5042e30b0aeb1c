package engine

import (
	"fmt"
	"maps"
	"slices"
	"strings"
)

// Ownership: a name is not proof of ownership. A group creates a member only under a name that
// nothing else holds, and writes over a volume only when the group made it. What is another's
// (a domain carrying another group's record, another group's claim on the name, a volume the
// group never made) is never created over, changed or deleted: the plan refuses the member.

// Claims reports whether the group holds or may one day hold the name: a name of its
// "<base>-<index>" scheme, one of its configs, or one it placed a member under.
func (s GroupState) Claims(name string) bool {
	if s.Group.Base != "" && !s.Named(name) {
		return true
	}
	if _, ok := s.Configs[name]; ok {
		return true
	}
	_, ok := s.Placement[name]
	return ok
}

// knows reports whether the group ever placed a member under the name, so that volumes of that
// name are its own leftovers (an interrupted creation, a member that lost its definition). A
// record from before groups kept their placement cannot tell, and is trusted as before.
func (s GroupState) knows(name string) bool {
	if !s.Placed && len(s.Placement) == 0 {
		return true
	}
	_, ok := s.Placement[name]
	return ok
}

// creationConflict says why the member m may not be created, "" when it may: its name is taken
// (env.Taken), or a volume it would write over is there and is not the group's. A volume the
// member reuses as it is (a preserved disk of the group's own naming scheme: identity reuse) is
// not written over; under a name outside the scheme, a volume the group never made may be
// another group's preserved disk, and is not reused either.
func creationConflict(s GroupState, m NewMember, env Env, counts map[string]int) string {
	if who, ok := env.Taken[m.Name]; ok {
		return fmt.Sprintf("the name belongs to %s, and a group never creates, changes or deletes what is another's (a domain, its volumes): give the per-instance config a name that is free", who)
	}
	if len(s.Listed) > 0 {
		return inventoryConflict(s, m, env, counts)
	}
	if env.Volumes == nil || s.knows(m.Name) {
		return ""
	}
	var theirs []string
	for _, op := range creationVolumes(m.Plan.Desired, s.Group.Template, env) {
		if !env.Volumes[op.Volume] || (op.Fate == Keep && !s.Named(m.Name)) {
			continue
		}
		theirs = append(theirs, op.Volume)
	}
	if seed := SeedVolumeName(m.Name); m.Plan.Desired.CloudInit != nil && env.Volumes[seed] {
		theirs = append(theirs, seed)
	}
	if len(theirs) == 0 {
		return ""
	}
	slices.Sort(theirs)
	return fmt.Sprintf("volume %s is already in the pool, and no member of this group ever had the name %s: a new member never writes over or reuses a volume the group did not make. Delete or rename the volume if it is garbage (virsh vol-delete), or give the member a name that is free",
		strings.Join(theirs, ", "), m.Name)
}

// inventoryConflict is creationConflict asked of the inventory: a volume the member would write
// over (its boot volume, NVRAM, seed, a staged boot volume) that is on its host and that the
// group did not make refuses the member, whatever the name. A stateless data volume of the
// member's own deterministic name is reused as it is (identity reuse) and stays out of the
// inventory: the group never deletes it. Under a name outside the scheme, a volume the group
// never made may be another group's preserved disk, and is not reused either.
func inventoryConflict(s GroupState, m NewMember, env Env, counts map[string]int) string {
	// Where the member would go, as addCreate places it (on a copy of the counts: a member
	// refused here takes no place).
	c := maps.Clone(counts)
	if c == nil {
		c = map[string]int{}
	}
	host, ok := place(s.Group, env, s.Placement, c, m.Name)
	if !ok {
		host = DefaultHost
	}
	var theirs []string
	check := func(v string) {
		if s.foreign(host, v) {
			theirs = append(theirs, v)
		}
	}
	for _, op := range creationVolumes(m.Plan.Desired, s.Group.Template, env) {
		// A staged boot volume a creation would only clear away is left instead (ownFates),
		// and names the member's plan; it does not keep the member from being made.
		if (op.Fate == Keep && !s.Named(m.Name)) || op.Fate == Delete {
			continue
		}
		check(op.Volume)
	}
	if m.Plan.Desired.CloudInit != nil {
		check(SeedVolumeName(m.Name))
	}
	if m.Plan.Desired.NVRAM != "" {
		check(m.Plan.Desired.NVRAM)
	}
	if len(theirs) == 0 {
		return ""
	}
	slices.Sort(theirs)
	return fmt.Sprintf("volume %s is already in the pool on host %s and the group did not make it (%s): a new member never writes over, deletes or attaches a volume the group did not make, whatever its name. Delete or rename the volume if it is garbage (virsh vol-delete), or give the member a name that is free",
		strings.Join(theirs, ", "), host, notMade)
}
