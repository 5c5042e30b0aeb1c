package providerdata

import (
	"maps"
	"sync"
)

// A per-instance config destroyed with remove_instance_state_on_destroy = false leaves its
// state on the member, retained, until the member's next update for another reason
// (engine.RetainedConfig). When the same apply also changes the group in a way that reaches that
// member, Terraform destroys the config first (the config refers to the group) and then plans
// the group again: that plan must keep the retained state through the change, as the plan the
// user approved did, made while the config was still there (engine.GroupState.KeepRetained).
//
// The config's destroy is the proof that the approved plan saw the config: Terraform destroys
// in an apply only what its plan planned to destroy, and a plan and its apply each run in a
// provider process of their own. So the destroy notes the member here, in this process, and the
// group's plan and apply that follow in it read the note. This holds with or without a refresh
// (-refresh=false) and needs nothing from the prior state's private data.

// retainedHere are the members whose configs destroys in this process retained, by group.
type retainedHere struct {
	mu sync.Mutex
	by map[string]map[string]bool
}

// NoteRetained notes that a destroy in this process removed the config of member name of group,
// keeping its state.
func (d *ProviderData) NoteRetained(group, name string) {
	d.retained.mu.Lock()
	defer d.retained.mu.Unlock()
	if d.retained.by == nil {
		d.retained.by = map[string]map[string]bool{}
	}
	if d.retained.by[group] == nil {
		d.retained.by[group] = map[string]bool{}
	}
	d.retained.by[group][name] = true
}

// RetainedInProcess is engine.GroupState.KeepRetained for a plan of group in this process: the
// members whose configs destroys in this process retained; nil when none did.
func (d *ProviderData) RetainedInProcess(group string) map[string]bool {
	d.retained.mu.Lock()
	defer d.retained.mu.Unlock()
	if len(d.retained.by[group]) == 0 {
		return nil
	}
	return maps.Clone(d.retained.by[group])
}
