package groupproto

// Command is the Terraform command the provider process serves, as far as the group's plan
// cares: a destroy (or the legacy refresh) makes a plan of the configuration only to refresh,
// and never applies it (the destroy detection in the provider says which).
type Command int

const (
	// CommandPlan is a plan or an apply: its plan of the configuration may be applied.
	CommandPlan Command = iota
	// CommandDestroy is `terraform destroy`, `plan -destroy`, `apply -destroy` or the legacy
	// `terraform refresh`: its plans of the configuration are never applied.
	CommandDestroy
)

// Record is what reading the group's record told the plan.
type Record int

const (
	// RecordFound: the record was read, and this state may change the group.
	RecordFound Record = iota
	// RecordMissing: there is no record of the group on its host.
	RecordMissing
	// RecordUnreachable: the record's host does not answer.
	RecordUnreachable
	// RecordRefused: the record could not be read, another state owns the group or another
	// apply holds it; the plan has said why, in a diagnostic.
	RecordRefused
)

// Cached is what this provider process holds of the group for the plan: nothing, the members
// an earlier call observed (a refresh, usually) under the same key, or, besides, the plan an
// earlier plan of this very group made from them.
type Cached int

const (
	CachedNothing Cached = iota
	CachedObservation
	CachedPlan
)

// Marker is the group's private-state marker (settled) as the protocol reads it.
type Marker struct {
	// Settled: the last apply of this state finished with nothing left to do at the
	// configuration this plan has, and the state's configuration is that one too.
	Settled bool
	// Read: the state's members are what a refresh read, at a record generation.
	Read bool
	// Probed: that refresh kept its probe outcomes.
	Probed bool
	// Hosts: that refresh kept what it found of the group's hosts.
	Hosts bool
}

// PlanInput is what a plan of the group gives the protocol. A plan in a destroy run, or of a
// new group, needs nothing else (the provider reads nothing more for it); a plan of a group the
// state has gives it all, once the configuration's checks have passed.
type PlanInput struct {
	Command Command
	// New: the state has no group (a create).
	New    bool
	Record Record
	// TakeOver: this state imported the group, which another state owns; the apply writes
	// this state in the record as its owner.
	TakeOver bool
	// Renamed: the configuration gives the group another name than the state's.
	Renamed bool
	// Refreshed: a refresh (Read) of the group ran in this process, so this is a plan with
	// refresh. False in a plan with -refresh=false, and in the apply's own plan (another
	// process than the plan's).
	Refreshed bool
	// StateListed: the state has the members' list (known, not null).
	StateListed bool
	Marker      Marker
	Cached      Cached
}

// PlanAction is what a plan of the group does.
type PlanAction int

const (
	// PlanCheckNothing: a destroy's plan of the configuration, which is never applied: nothing
	// of the configuration is checked against the host.
	PlanCheckNothing PlanAction = iota
	// PlanCreate: a new group: the create's checks, and its members shown as CREATE.
	PlanCreate
	// PlanStop: the plan was refused (its diagnostics say why); nothing more is planned.
	PlanStop
	// PlanRecordUnreachable: the record's host does not answer: with no change the members
	// stay as the refresh read them, a change is refused.
	PlanRecordUnreachable
	// PlanWriteRecordBack: the record is gone but the state keeps the group (its members are
	// there): the apply writes it back; the members are known after apply.
	PlanWriteRecordBack
	// PlanReplace: the group is planned as a new one (a new name); nothing of it is planned here.
	PlanReplace
	// PlanKeepState: no refresh, and the state is settled at this configuration: nothing to
	// plan and nothing read; the members are the state's.
	PlanKeepState
	// PlanFromCache: the plan this process made of this very group from the members it holds.
	PlanFromCache
	// PlanFromObservation: planned again from the members this process observed.
	PlanFromObservation
	// PlanJudgeByProbes: the members are observed, and judged by the probe outcomes the
	// refresh kept in the private state (the refresh ran in another process).
	PlanJudgeByProbes
	// PlanObserve: the members are observed again, and probed.
	PlanObserve
)

var planActionNames = [...]string{"check nothing", "create", "stop", "record unreachable", "write the record back", "replace",
	"keep the state", "plan from the cache", "plan from the observation", "judge by the kept probes", "observe again"}

func (a PlanAction) String() string {
	if a < 0 || int(a) >= len(planActionNames) {
		return "unknown"
	}
	return planActionNames[a]
}

// PlanDecision is the one decision of a plan of an existing group.
type PlanDecision struct {
	Action PlanAction
	// TakeOver: the plan shows every member, even one it leaves alone, as taken over, so that
	// the apply that writes the owner runs.
	TakeOver bool
	// PinHosts: the members are observed with the hosts as the refresh saw them (the plan the
	// user approved and the apply's own plan, in another process, see the same hosts).
	PinHosts bool
	// CheckHost: the members observed now are compared with those the refresh read into the
	// state; a difference refuses a plan that changes the group (RefuseHostChanged).
	CheckHost bool
}

// Plan decides a plan of an existing group.
func Plan(in PlanInput) PlanDecision {
	if in.Command == CommandDestroy {
		return PlanDecision{Action: PlanCheckNothing}
	}
	if in.New {
		return PlanDecision{Action: PlanCreate}
	}
	switch in.Record {
	case RecordUnreachable:
		return PlanDecision{Action: PlanRecordUnreachable}
	case RecordRefused:
		return PlanDecision{Action: PlanStop}
	case RecordMissing:
		if in.Renamed {
			return PlanDecision{Action: PlanReplace}
		}
		return PlanDecision{Action: PlanWriteRecordBack}
	case RecordFound:
	}
	if in.Renamed {
		return PlanDecision{Action: PlanReplace}
	}
	// What a refresh in another process left in the private state stands for this plan's own
	// look at the host, unless this state takes the group over (it plans from what is there).
	fromMarker := !in.Refreshed && !in.TakeOver && in.Marker.Read
	if !in.TakeOver && !in.Refreshed && in.StateListed && in.Marker.Settled {
		// -refresh=false on a state an apply left settled at this very configuration.
		return PlanDecision{Action: PlanKeepState}
	}
	d := PlanDecision{TakeOver: in.TakeOver, PinHosts: in.Marker.Hosts && in.Marker.Read && !in.TakeOver, CheckHost: fromMarker}
	switch {
	case in.Cached == CachedPlan:
		d.Action = PlanFromCache
	case in.Cached == CachedObservation:
		d.Action = PlanFromObservation
	case fromMarker && in.Marker.Probed:
		d.Action = PlanJudgeByProbes
	default:
		d.Action = PlanObserve
	}
	return d
}

// HostVerdict is what a plan does about the members that changed on the host since the refresh
// read them into the state.
type HostVerdict int

const (
	// HostSame: nothing changed, or the plan does not compare.
	HostSame HostVerdict = iota
	// HostWarn: members changed, and the group has nothing to do: the plan keeps the state's
	// members and warns.
	HostWarn
	// HostRefuse: members changed, and the plan changes the group: it is not the plan that was
	// approved (in an apply), or is made from a host the state does not show (-refresh=false).
	HostRefuse
)

// RefuseHostChanged decides, after the observation, on the members that changed on the host
// since the refresh: changed is how many differ, changing whether the plan changes the group.
func (d PlanDecision) RefuseHostChanged(changed int, changing bool) HostVerdict {
	switch {
	case !d.CheckHost || changed == 0:
		return HostSame
	case changing:
		return HostRefuse
	}
	return HostWarn
}

// Source is where an apply's plan of a change (planned before its record is written) starts
// from, by what this process holds of the group: the plan its plan made (the plan that was
// shown), the members its plan observed, or a new observation.
func Source(c Cached) PlanAction {
	switch c {
	case CachedPlan:
		return PlanFromCache
	case CachedObservation:
		return PlanFromObservation
	case CachedNothing:
	}
	return PlanObserve
}

// ApplyAction is how an apply runs once its change is written in the group's record.
type ApplyAction int

const (
	// ApplyThisPlan: the record written is the group that was planned and checked: that plan
	// runs.
	ApplyThisPlan ApplyAction = iota
	// ApplyPlanAgain: the record written is not the one planned (another change came in
	// between): the group is planned again from the members observed, and checked again.
	ApplyPlanAgain
	// ApplyObserve: nothing was planned before the write (a change with no check: a policy's,
	// a config's): the members are observed and the group planned.
	ApplyObserve
)

// Apply decides how the apply runs: planned, whether a plan was made and checked before the
// write; same, whether the record written is the group that plan planned.
func Apply(planned, same bool) ApplyAction {
	switch {
	case planned && same:
		return ApplyThisPlan
	case planned:
		return ApplyPlanAgain
	}
	return ApplyObserve
}
