// This file holds what a member keeps of a per-instance config destroyed without removing its
// state (remove_instance_state_on_destroy = false), and when it loses it.

package engine

import (
	"maps"
	"slices"
	"sort"
)

// RetainedReason ends the reasons of a change that takes away what a destroyed config left.
const RetainedReason = "its per-instance config was destroyed"

// Retain records that the instance keeps the state its config gave it, the config being
// destroyed without removing it: the group plans no change for that state by itself (GCP's
// reading of "removed at the instance's next update").
func (s *GroupState) Retain(name string) {
	if !slices.Contains(s.Retained, name) {
		s.Retained = append(slices.Clone(s.Retained), name)
		sort.Strings(s.Retained)
	}
}

// Unretain forgets that the instance keeps a destroyed config's state: a new config for it, or
// a destroy that removes the state, says what it has from now on.
func (s *GroupState) Unretain(name string) {
	if i := slices.Index(s.Retained, name); i >= 0 {
		s.Retained = slices.Delete(slices.Clone(s.Retained), i, i+1)
	}
	if len(s.Retained) == 0 {
		s.Retained = nil
	}
}

// RetainedConfig is the state an instance keeps of its destroyed config, as a config: what its
// record says a config gave it (PreservedFromConfig), when the group retains it and no config
// names the instance now. It is read from the member, so that an entry left after the member
// lost that state (it changed for another reason since) never puts anything back.
func (s GroupState) RetainedConfig(name string, mi ManagedInstance) (InstanceConfig, bool) {
	if _, configured := s.Configs[name]; configured || !slices.Contains(s.Retained, name) || mi.PreservedFromConfig.Empty() {
		return InstanceConfig{}, false
	}
	var c InstanceConfig
	for _, dev := range slices.Sorted(maps.Keys(mi.PreservedFromConfig.Disks)) {
		d := mi.PreservedFromConfig.Disks[dev]
		c.Disks = append(c.Disks, ConfigDisk{DeviceName: dev, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule})
	}
	if len(mi.PreservedFromConfig.Metadata) > 0 {
		c.Metadata = maps.Clone(mi.PreservedFromConfig.Metadata)
	}
	for _, nic := range slices.Sorted(maps.Keys(mi.PreservedFromConfig.NetworkIPs)) {
		c.NetworkIPs = append(c.NetworkIPs, NetworkIP{Interface: nic, Address: mi.PreservedFromConfig.NetworkIPs[nic]})
	}
	return c, true
}

// dropRetained is the plan of a member that keeps a destroyed config's state (kept, planned with
// that state as its config) once it changes for another reason: the change takes the state away
// with it, reaching what the member planned without it (dropped), and its reasons say so. A
// member whose bounds do not allow the removal keeps the state and its change as planned.
func dropRetained(kept, dropped InstancePlan) InstancePlan {
	_, more := InstanceDiff(kept.Desired, dropped.Desired)
	out := kept
	out.Desired, out.Hash = dropped.Desired, dropped.Hash
	out.PreservedFromPolicy, out.PreservedFromConfig = dropped.PreservedFromPolicy, dropped.PreservedFromConfig
	out.Reasons = slices.Clone(kept.Reasons)
	for _, r := range more {
		r.What += " (" + RetainedReason + ")"
		out.Reasons = append(out.Reasons, r)
		out.Needed = MaxAction(out.Needed, r.Action)
		out.Action = MaxAction(out.Action, r.Action)
	}
	if out.Action > out.Allowed && !kept.Blocked {
		return kept
	}
	out.Blocked = out.Action > out.Allowed
	return out
}
