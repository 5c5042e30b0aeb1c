package engine

import "fmt"

// Action is the least disruptive operation that brings an instance to its desired state.
type Action int

const (
	ActionNone Action = iota
	ActionRefresh
	ActionRestart
	ActionReplace
)

// ActionNames lists the action names in increasing order of disruption, as users write them.
var ActionNames = []string{"NONE", "REFRESH", "RESTART", "REPLACE"}

func (a Action) String() string {
	if a < ActionNone || a > ActionReplace {
		return fmt.Sprintf("Action(%d)", int(a))
	}
	return ActionNames[a]
}

// ParseAction turns a user-facing action name into an Action.
func ParseAction(s string) (Action, error) {
	for i, n := range ActionNames {
		if n == s {
			return Action(i), nil
		}
	}
	return ActionNone, fmt.Errorf("unknown action %q: allowed values are NONE, REFRESH, RESTART, REPLACE", s)
}

// MaxAction returns the more disruptive of two actions.
func MaxAction(a, b Action) Action {
	if a > b {
		return a
	}
	return b
}

// MinAction returns the less disruptive of two actions.
func MinAction(a, b Action) Action {
	if a < b {
		return a
	}
	return b
}

// MarshalText writes the action by name, so that records on the host read as users write them.
func (a Action) MarshalText() ([]byte, error) { return []byte(a.String()), nil }

// UnmarshalText reads an action written by MarshalText.
func (a *Action) UnmarshalText(b []byte) error {
	v, err := ParseAction(string(b))
	if err != nil {
		return err
	}
	*a = v
	return nil
}

// CheckActionBounds refuses a minimal action more disruptive than the most disruptive allowed
// one: every change would then need more than it may take.
func CheckActionBounds(minimal, allowed Action) error {
	if minimal > allowed {
		return fmt.Errorf("minimal_action %s is more disruptive than most_disruptive_allowed_action %s: every change would need more than is allowed. Lower minimal_action to %s or less, or raise most_disruptive_allowed_action to %s or more",
			minimal, allowed, allowed, minimal)
	}
	return nil
}
