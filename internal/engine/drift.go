package engine

import (
	"fmt"
	"slices"
)

// Drift compares a member as the host shows it with its record, for changes made behind
// Terraform's back. It returns the record's view of the member with what the host really has in
// its place (vcpu, memory, description, which disks are attached), so that planning from it
// repairs the drift with the least action, and the reasons for what a corrected view cannot
// express: a disk whose source or mode was changed on the host (put back live; the boot disk by a
// replacement), volumes the member needs that are gone (rebuilt by a replacement), and a
// running member whose persistent definition is gone (defined again, see Operation.Define).
//
// A member with a change in flight is left to the in-flight settlement, which already plans from
// both ends of the change; a domain no provider created, or an adopted one, has no record to
// drift from.
func Drift(o Observed) (ManagedInstance, []Reason) {
	mi := o.Instance
	if !drifts(o) {
		return mi, nil
	}
	cur := mi.Current
	cur.Disks = slices.Clone(cur.Disks)
	if o.VCPU > 0 {
		cur.VCPU = o.VCPU
	}
	if o.MemoryMiB > 0 {
		cur.MemoryMiB = o.MemoryMiB
	}
	if o.Description != nil {
		cur.Description = *o.Description
	}
	var extra []Reason
	if o.Attached != nil {
		var disks []DesiredDisk
		for _, d := range cur.Disks {
			a, ok := findDisk(o.Attached, d.DeviceName)
			if !ok {
				continue // detached on the host: the plan attaches it again
			}
			if a.Source != d.Source || a.ReadOnly != d.ReadOnly {
				// The record keeps its source, which the plan puts back: a source swapped on
				// the host is not a config letting a disk go.
				what, action := fmt.Sprintf("drift: disk %s swapped on the host", d.DeviceName), ActionRefresh
				if d.DeviceName == BootDeviceName {
					action = ActionReplace
				}
				extra = append(extra, Reason{Action: action, What: what})
			}
			disks = append(disks, d)
		}
		for _, a := range o.Attached {
			if _, ok := findDisk(cur.Disks, a.DeviceName); !ok {
				disks = append(disks, a) // attached on the host: the plan detaches it
			}
		}
		cur.Disks = disks
	}
	if o.Reserved != nil {
		// What the networks hold for the member's MACs, in place of what its record says: a host
		// entry removed or moved behind Terraform's back is put back by the plan.
		cur.NICs = slices.Clone(cur.NICs)
		for i := range cur.NICs {
			cur.NICs[i].Address = o.Reserved[i]
		}
	}
	mi.Current = cur
	for _, v := range o.Missing {
		extra = append(extra, Reason{Action: ActionReplace, What: fmt.Sprintf("drift: volume %s missing", v)})
	}
	if o.Transient {
		// Defining it again from its record disturbs nothing (NONE): the running domain keeps
		// running as it is, and gets back the definition and the autostart it lost.
		extra = append(extra, Reason{Action: ActionNone, What: DefinitionGone})
	}
	return mi, extra
}

// DefinitionGone is the drift reason of a member that runs without a persistent definition.
const DefinitionGone = "drift: definition gone (undefined while running: it would not start again)"

// drifts reports whether the member has a record to drift from and no change in flight.
func drifts(o Observed) bool {
	mi := o.Instance
	return !o.Unmanaged && !mi.Template.Adopted && mi.InFlight == nil && mi.LastAppliedHash != ""
}

func findDisk(disks []DesiredDisk, name string) (DesiredDisk, bool) {
	for _, d := range disks {
		if d.DeviceName == name {
			return d, true
		}
	}
	return DesiredDisk{}, false
}

// withDrift marks the plan's reasons that come from drift rather than from the configuration
// (those the record alone would not give), and adds Drift's own reasons.
func (p InstancePlan) withDrift(recorded ManagedInstance, extra []Reason) InstancePlan {
	_, configured := recorded.diff(p.Desired)
	for i, r := range p.Reasons {
		if !slices.Contains(configured, r) {
			p.Reasons[i].What = "drift: " + r.What
		}
	}
	for _, r := range extra {
		p.Reasons = append(p.Reasons, r)
		p.Needed = MaxAction(p.Needed, r.Action)
		p.Action = MaxAction(p.Action, r.Action)
		p.Changed = true
	}
	p.Blocked = p.Action > p.Allowed
	return p
}
