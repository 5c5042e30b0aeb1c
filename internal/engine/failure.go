package engine

import "slices"

// FailedOutcome is what a failed operation left of its member, and so what the next apply does
// about it. The executor reports it; the words are chosen where the error is rendered.
type FailedOutcome int

const (
	// FailedKept: the member had not been stopped when its change failed; it keeps its previous
	// state and the next apply tries the change again.
	FailedKept FailedOutcome = iota
	// FailedDown: the member had been stopped or removed when its change failed; the next apply
	// brings it back.
	FailedDown
	// FailedNotCreated: a new member was not created (its image vanished, a volume could not be
	// made, it did not start); it has no previous state, and the next apply creates it.
	FailedNotCreated
	// FailedNotReady: the member's change is done and recorded, but it did not become ready.
	FailedNotReady
)

// OutcomeOfFailure is what the failure of an operation of kind leaves: down says the member had
// been stopped or removed when the step failed, notReady that the change was done and only the
// wait for readiness failed.
func OutcomeOfFailure(kind OpKind, down, notReady bool) FailedOutcome {
	switch {
	case notReady:
		return FailedNotReady
	case kind == OpCreate:
		// Whatever step failed, a new member has nothing to keep: the next apply plans it as a
		// create again (what the failed create made is reused under its name or swept).
		return FailedNotCreated
	case down:
		return FailedDown
	}
	return FailedKept
}

// StopMethod is how a plan takes its members down.
type StopMethod int

const (
	// StopNone: the plan stops no member.
	StopNone StopMethod = iota
	// StopGraceful: an ACPI shutdown request, a wait of up to shutdown_timeout, then power off.
	StopGraceful
	// StopPowerOff: powered off at once (shutdown_timeout = "0s").
	StopPowerOff
	// StopHalted: every member stopped is paused, suspended or crashed, and powered off at once
	// whatever shutdown_timeout says (Status.HearsShutdown).
	StopHalted
)

// StopsBy is how the plan's restarts and replacements stop their members, as their tasks say
// (taskBuilder.stopping decides it from shutdown_timeout and each member's status): what the
// plan's warning tells the user. Members powered off because they cannot act on a shutdown
// request say so in their own planned action; the method is the one of the others, when any.
func (p GroupPlan) StopsBy() StopMethod {
	halted := false
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Kind != OpRestart && op.Kind != OpReplace {
				continue
			}
		tasks:
			for _, t := range append(slices.Clone(op.Early), op.Tasks...) {
				switch {
				case t.Kind == TaskShutdown:
					return StopGraceful
				case t.Kind == TaskPowerOff && t.Halted != "":
					halted = true
					break tasks
				case t.Kind == TaskPowerOff:
					return StopPowerOff
				}
			}
		}
	}
	if halted {
		return StopHalted
	}
	return StopNone
}
