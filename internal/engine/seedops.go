package engine

import (
	"fmt"
	"maps"
)

// SeedOp is what an operation does to a member's NoCloud seed.
type SeedOp int

const (
	// SeedKeep leaves the seed as it is.
	SeedKeep SeedOp = iota
	// SeedWrite writes the seed from the desired instance; a running member has its CD-ROM's
	// media swapped for the new one, live.
	SeedWrite
	// SeedDelete deletes the seed volume.
	SeedDelete
)

// seedChanged reports whether the member's seed must be written again to reach desired: its
// name, metadata or cloud-init changed, or a change that may have written half of it was
// interrupted.
func seedChanged(o Observed, desired DesiredInstance) bool {
	if desired.CloudInit == nil {
		return false
	}
	c := o.Instance.Current
	return o.SeedMissing || o.Instance.InFlight != nil || c.CloudInit == nil || *c.CloudInit != *desired.CloudInit || !maps.Equal(c.Metadata, desired.Metadata)
}

// hadSeed reports whether the member may have a seed volume to delete: its record or an
// interrupted change gives it one, or the pool listing shows one (or was not read).
func hadSeed(o Observed, env Env) bool {
	name := SeedVolumeName(o.Name)
	return o.Instance.Current.CloudInit != nil || deref(o.Instance.InFlight).CloudInit != nil || env.Volumes == nil || env.Volumes[name]
}

// creationSeed writes a new member's seed when it has one.
func creationSeed(desired DesiredInstance) SeedOp {
	if desired.CloudInit != nil {
		return SeedWrite
	}
	return SeedKeep
}

// deletionSeed deletes a deleted member's seed: it is made from the template and the member's
// name, and goes with the member.
func deletionSeed(o Observed, env Env) SeedOp {
	if hadSeed(o, env) {
		return SeedDelete
	}
	return SeedKeep
}

// userDataChanged reports whether a member's user data changes from current to desired: the text
// of user_data, or the version of the write-only user_data_wo, whose value the engine never sees
// (a new version is the only change of it Terraform can show). Either is a change cloud-init
// applies only to a new instance (REPLACE, see diff).
func userDataChanged(current, desired CloudInit) bool {
	return current.UserData != desired.UserData || current.UserDataWOVersion != desired.UserDataWOVersion
}

// userDataChange is the reason of a user data change, named after the attribute that changed.
func userDataChange(current, desired CloudInit) string {
	if current.UserDataWOVersion != desired.UserDataWOVersion {
		return fmt.Sprintf("cloud_init user_data_wo_version %d -> %d", current.UserDataWOVersion, desired.UserDataWOVersion)
	}
	return "cloud_init user_data changed"
}

// seedKeepsUserData reports whether the member's seed volume on its host holds the write-only
// user data desired has: the member's record says its seed was written with that version, no
// change in flight may have written another one over it, and the pool lists the volume. A run
// that has not got the value (an apply of another resource than the group) then builds the new
// seed with the user data read back from the current one; otherwise only the group's apply can
// write the seed.
func seedKeepsUserData(o Observed, desired DesiredInstance) bool {
	d := desired.CloudInit
	if d == nil || d.UserDataWOVersion == 0 || o.SeedMissing || o.Unmanaged {
		return false
	}
	held := func(x DesiredInstance) bool {
		return x.CloudInit != nil && x.CloudInit.UserDataWOVersion == d.UserDataWOVersion
	}
	if in := o.Instance.InFlight; in != nil && !held(*in) {
		return false
	}
	return held(o.Instance.Current)
}

// NeedsUserData are the members whose seed the plan writes with write-only user data that only
// the apply's own value can give: seed tasks the engine did not let take it from the member's
// current seed (a new member, a seed that is gone, another version). A configuration that leaves
// user_data_wo out cannot apply them.
func (p GroupPlan) NeedsUserData() []string {
	var out []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, t := range op.Tasks {
				seed := t.Kind == TaskWriteSeed || t.Kind == TaskSwapSeed
				if seed && !t.UserDataFromSeed && t.Desired.CloudInit != nil && t.Desired.CloudInit.UserDataWOVersion > 0 {
					out = append(out, op.Name)
					break
				}
			}
		}
	}
	return out
}
