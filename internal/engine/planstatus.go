package engine

import "slices"

// ConfigStatus is how far a per-instance config has reached its instance, as the config's
// status attribute shows it.
type ConfigStatus string

// Statuses of a per-instance config.
const (
	// ConfigEffective: the instance carries the config.
	ConfigEffective ConfigStatus = "EFFECTIVE"
	// ConfigWaiting: the config names an index beyond target_size; it is applied when a
	// scale-out creates the instance.
	ConfigWaiting ConfigStatus = "WAITING"
	// ConfigUnapplied: the group's plan still creates or changes the instance, or may not.
	ConfigUnapplied ConfigStatus = "UNAPPLIED"
)

// ConfigStatus reads the status of the config of instance name from the group's plan: the
// instance carries its config when the plan neither creates nor changes it (a power change alone
// does not count: power is the group's, not the config's), and the plan does not block it.
func (p GroupPlan) ConfigStatus(name string) ConfigStatus {
	if slices.Contains(p.Waiting, name) {
		return ConfigWaiting
	}
	if slices.ContainsFunc(p.Create, func(c NewMember) bool { return c.Name == name }) ||
		slices.ContainsFunc(p.Steps, func(st Step) bool { return st.Name == name && st.Changed() }) ||
		slices.ContainsFunc(p.Blocked, func(b Blocked) bool { return b.Name == name }) {
		return ConfigUnapplied
	}
	return ConfigEffective
}

// Idle reports whether applying the plan would change nothing on the host: no member created,
// deleted, moved, changed, started or stopped, no preservation started or released (its record is
// written: a member kept for analysis alone is a change the plan shows and the apply records),
// none blocked (a blocked member is a change the plan wants and may not make), and none held (a
// change that waits for its member's host is pending: the plan shows it, so that it is not
// taken for a group at rest).
func (p GroupPlan) Idle() bool {
	if len(p.Create) > 0 || len(p.Delete) > 0 || len(p.Blocked) > 0 || len(p.Abandon) > 0 || len(p.Moves) > 0 || len(p.Held) > 0 {
		return false
	}
	return !slices.ContainsFunc(p.Steps, func(st Step) bool {
		return st.Changed() || st.Power != "" || st.Preserve != nil || len(st.DropSnapshots) > 0
	})
}
