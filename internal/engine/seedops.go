package engine

import "maps"

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
