// This file holds how a member is taken down: which members an ACPI shutdown request can reach,
// and the tasks of a stop.

package engine

// HearsShutdown reports whether a member in status s can act on an ACPI shutdown request. A
// paused guest cannot run to act on it; neither can one suspended to RAM (libvirt's pmsuspended)
// or crashed, and libvirt refuses the request for every state but running. Waiting
// shutdown_timeout for such a member would only delay its power-off, so it is powered off at
// once. Powering off a paused member loses nothing the guest had not already written: it cannot
// write anything more while it waits. The zero status (not observed) and a stopped member are
// asked as usual; the request costs nothing there.
func (s Status) HearsShutdown() bool {
	switch s {
	case StatusPaused, StatusSuspended, StatusFailed:
		return false
	}
	return true
}

// PowerOffWhy says why a member in status s (one that does not hear a shutdown request) is
// powered off without one, as the plan and the log show it: "paused: powered off without
// waiting".
func (s Status) PowerOffWhy() string {
	state := map[Status]string{StatusPaused: "paused", StatusSuspended: "suspended (pmsuspended)", StatusFailed: "crashed"}[s]
	if state == "" {
		state = "not running"
	}
	return state + ": powered off without waiting"
}

// stopping is how the operation's member is taken down, as the shutdown request (which a
// deletion issues early, see delete) and the tasks after it:
//   - a member observed paused, suspended or crashed is powered off at once: it cannot act on a
//     request (HearsShutdown), and the power-off says why (Task.Halted);
//   - with shutdown_timeout "0s", every member is powered off at once;
//   - otherwise an ACPI request, then a wait of up to shutdown_timeout and a power-off. A member
//     that was running at the plan and is paused, suspended or crashed when the request is made
//     is refused it by libvirt; the request's Otherwise, a power-off, runs instead, and the wait
//     then finds it stopped.
func (b *taskBuilder) stopping() (request, rest []Task) {
	if !b.op.Observed.HearsShutdown() {
		return nil, []Task{{Kind: TaskPowerOff, Halted: b.op.Observed}}
	}
	timeout := b.s.Group.StopTimeout()
	if timeout == 0 {
		return nil, []Task{{Kind: TaskPowerOff}}
	}
	return []Task{{Kind: TaskShutdown, Otherwise: []Task{{Kind: TaskPowerOff}}}}, []Task{{Kind: TaskStopWait, Timeout: timeout}}
}

// stop takes the member down (see stopping).
func (b *taskBuilder) stop() {
	request, rest := b.stopping()
	b.add(request...)
	b.add(rest...)
}

// haltedWhy is what a plan adds to the words of a change that takes its member down when the
// member was observed in status s: why it is powered off without waiting, or "" when it is asked
// to shut down as usual.
func haltedWhy(why string, s Status) string {
	if s.HearsShutdown() {
		return why
	}
	if why == "" {
		return s.PowerOffWhy()
	}
	return why + "; " + s.PowerOffWhy()
}

// DeletedWhy is what the plan says of a member it deletes: why the scale-in picked it
// (DeleteReasons), and that it is powered off without waiting when it is paused, suspended or
// crashed.
func (p GroupPlan) DeletedWhy(name string) string {
	why := p.DeleteReasons[name]
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Kind == OpDelete && op.Name == name && op.Power == StatusStopped {
				return haltedWhy(why, op.Observed)
			}
		}
	}
	return why
}
