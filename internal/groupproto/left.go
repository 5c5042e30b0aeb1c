package groupproto

import "github.com/virtfleet/terraform-provider-virt/internal/engine"

// Left is what is left of a member's planned action once the apply that ran its plan finished
// without an error: nothing (NONE). A member autohealing leaves as it is (initial delay,
// backoff, max_consecutive_failures) keeps its reason, which the apply did not act on, and a
// member the canary holds back says so. The
// state an apply saves holds this, so that a refresh right after it, which shows NONE for a
// member with nothing to do, finds nothing changed outside of Terraform.
func Left(p engine.Planned) engine.Planned {
	switch {
	case p.Unhealed:
		return engine.Planned{Why: p.Why, Unhealed: true}
	case p.Held:
		// Held back by the canary: still so after the apply, as a refresh shows it.
		return engine.Planned{Why: engine.HeldWhy(""), Held: true}
	}
	return engine.Planned{}
}
