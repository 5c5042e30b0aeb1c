package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Observed is an instance as it exists now.
type Observed struct {
	Name string
	// Index is the instance's index, 0 for a named member outside the "<base>-<index>" scheme.
	Index  int
	Status Status
	// Instance is the instance's bookkeeping. For a domain no provider created, Current is the
	// domain as it stands and Template its AdoptedTemplate.
	Instance ManagedInstance
	// Unmanaged is true for a domain no provider created, which a config adopts.
	Unmanaged bool
	// RecordLost is true for a member whose domain lost its member record (removed by hand) and
	// that the group record holds (MembershipRecordLost: Instance is GroupState.LostRecord), or
	// whose persistent definition lost it while the running domain still has it: the plan writes
	// the record back.
	RecordLost bool
	// UUID is the domain's libvirt UUID.
	UUID string
	// Attached is what is really attached to the domain now, sources written as configs write
	// them, whatever the bookkeeping says.
	Attached []DesiredDisk
	// VCPU and MemoryMiB are the domain's own, as libvirt reports them; 0 when not read.
	VCPU      int64
	MemoryMiB int64
	// Description is the domain's own description, as libvirt reports it; nil when not read.
	Description *string
	// Missing are the volumes of the group's pool that attached disks name and the pool lacks.
	Missing []string
	// StateReason is the host's reason for the domain's state; StateReasonNone when ordinary.
	StateReason StateReason
	// Host is the host the member lives on; "" is DefaultHost.
	Host string
	// Unknown is true when the member's host cannot be reached: only its name, index and host
	// are known, from the group's placement.
	Unknown bool
	// SeedMissing is true when the member has a NoCloud seed and the pool listing lacks its volume.
	SeedMissing bool
	// Transient is true when the domain runs without a persistent definition (`virsh undefine`
	// of a running member): it has no autostart and is gone at its next shutdown.
	Transient bool
	// MACs are the MAC addresses of the domain's network interfaces, in order; IPs the addresses
	// the host knows they have (DHCP leases, the guest agent). Both are only shown.
	MACs []string
	IPs  []string
	// GraphicsPort is the running domain's console port; 0 when it has none or is not running.
	// Only shown.
	GraphicsPort int
	// Reserved are the addresses the networks' DHCP host entries give the member's interfaces,
	// by interface position, as read from each interface's network by the member's MAC; nil
	// when they were not read (no interface holds its address, or a network could not be read).
	Reserved map[int]string
	// SourceRuns is true for a member defined on the target of its move whose source still has
	// a running copy (started after the move had stopped it): which copy is the member is the
	// user's to say, and the move is not finished until one of them is gone or stopped.
	SourceRuns bool
	// Probe is what the group's health check found of the running member while it was
	// observed; nil when no probe ran.
	Probe *ProbeOutcome
}

// Step is what happens to one existing instance.
type Step struct {
	Name  string
	Index int
	// UUID and Current are the domain's identity and bookkeeping as observed: a restart keeps
	// the UUID, and every change writes its in-flight marker over that bookkeeping.
	UUID    string
	Current ManagedInstance
	Plan    InstancePlan
	Action  Action
	// Template is the template the instance is updated from, and Revision its revision (worked
	// out once by the plan).
	Template Template
	Revision string
	// Power is the status the instance must end in: StatusRunning or StatusStopped, or empty
	// when it is already there or its power is not the group's to decide.
	Power Status
	// Observed is the instance's status as observed: a step that takes a paused, suspended or
	// crashed member down says that it is powered off without waiting (see stopping).
	Observed Status
	// Adopt is true when the step adopts a domain no provider created.
	Adopt bool
	// Heal is the consecutive autoheal attempt this replacement is (1 for the first); 0 when
	// the step is not an autoheal.
	Heal int
	// ResetHeals is true when the step applies a template or config change: autohealing counts
	// from zero again after it.
	ResetHeals bool
	// Preserve, when set, is the preservation the step writes in the member's record (a start,
	// or a release with Kind ""); a step with only that is a record write (OpMark).
	Preserve *PreserveDecision
	// DropSnapshots are the member's snapshots past their retention, which the step
	// deletes; a step with only those deletes them and writes nothing else (OpMark).
	DropSnapshots []SnapshotOp
	// Restore are the snapshots a restore (MemberRestore) puts the member's disks back to, once
	// it is stopped; the step takes no snapshot of its own.
	Restore []SnapshotOp
}

// Changed reports whether the step writes anything to the instance besides its power state.
func (s Step) Changed() bool { return s.Plan.Changed }

// NewMember is an instance to create.
type NewMember struct {
	Name  string
	Index int
	Plan  InstancePlan
	// Host is the host the member is created on.
	Host string
	// Template, when set, is the template the member is built from instead of the group's: a
	// member created while the canary holds the rollout is built from the template the members
	// held back run (canary.go).
	Template *Template
}

// Blocked is an instance whose change needs more than its bounds allow, or cannot be made.
type Blocked struct {
	Name    string
	Needs   Action
	Allowed Action
	Reasons []Reason
	// Problem, when set, says why the instance cannot be changed at all.
	Problem string
}

func (b Blocked) String() string {
	if b.Problem != "" {
		return b.Name + ": " + b.Problem
	}
	return fmt.Sprintf("%s needs %s (%s), allowed %s", b.Name, b.Needs, JoinReasons(b.Reasons), b.Allowed)
}

// Member is an instance as it will be once the plan is applied.
type Member struct {
	Name     string
	Index    int
	Status   Status
	Revision string
	// CurrentAction is what is under way on the instance: NONE, or the interrupted change its
	// in-flight marker records.
	CurrentAction string
	// Planned is what the plan does to the instance and why: NONE, or for example a REPLACE
	// for "boot image changed", or CREATE.
	Planned Planned
	// Health is the member's health: as the host shows it for a member observed now, or, in a
	// plan, as the apply leaves it (a member the plan repairs is HEALTHY).
	Health Health
	// Host is the host the member lives on.
	Host string
}

// CurrentAction names what is under way on an instance, from its in-flight marker.
func CurrentAction(mi ManagedInstance) string {
	if mi.InFlight == nil {
		return "NONE"
	}
	if mi.Move != nil {
		return "MOVING"
	}
	switch mi.InFlightAction {
	case ActionReplace:
		return "RECREATING"
	case ActionRestart:
		return "RESTARTING"
	case ActionRefresh, ActionNone:
		// A marker that names no more disruptive action is a refresh.
	}
	return "REFRESHING"
}

// GroupPlan is what reconciling a group does.
type GroupPlan struct {
	Create []NewMember // instances to create, indexed ones lowest first, then named ones
	Delete []string    // instance names to delete, in the order the scale-in picked them
	// DeleteReasons says why each deleted member was picked.
	DeleteReasons map[string]string
	// Kept are, in a destroy's plan (PlanDestroy), the group's own volumes that no member
	// holds and that stay: kept by an earlier deletion (a scale-in) under their delete_rule, and
	// kept by the destroy under the same rule. Host by host, in the pool's order.
	Kept []Left
	// KeptRecord is, in a destroy's plan, what the group's kept record lists once the group is
	// gone: every volume of its inventory the plan does not delete (kept.go).
	KeptRecord []Made
	// Preservation is each member's preservation after the plan (third reference).
	Preservation map[string]PreserveDecision
	Steps        []Step // existing instances that change
	Blocked      []Blocked
	// Waiting lists configs whose instance is beyond the target size: they are applied when
	// scale-out creates it.
	Waiting []string
	Final   []Member // every member after the plan: indexed ones by index, then named ones by name
	// Waves is the plan as it runs: ordered waves of typed operations, each with its reason and
	// every volume's fate. Wave k+1 runs only when every operation of wave k succeeded.
	Waves []Wave
	// Placement is the host of every member once the plan is applied, and of every member it
	// creates or deletes (so that one interrupted half-way is still found): what the group
	// record keeps before the plan runs.
	Placement map[string]string
	// Creating are the members the plan creates, which the record lists as such while the plan
	// runs (GroupState.Creating).
	Creating []string
	// Moves are the members the plan moves between hosts (or whose cut-off move it finishes or
	// undoes): each is only moved, its other changes wait for the next apply.
	Moves []MemberMove
	// Abandon are the members the plan takes out of the group (Group.Abandon), as observed:
	// their records go, their domains and volumes stay as they are.
	Abandon []Observed
	// Held are the changes the plan wants of members whose host does not answer (a scale-in's
	// pick, a drain's move): each waits for its host, and nothing is done in its place.
	Held []HostWait
	// Inventory is what the group record keeps before the plan runs: the group's inventory,
	// settled against the hosts, with an intent for every object the plan makes; FinalInventory
	// is what it keeps once every operation ran (see inventory.go).
	Inventory, FinalInventory Inventory
	// makers names the operations that make each intent of Inventory (by its key), for
	// InventoryAfterStop.
	makers map[string][]string
	// Left are the volumes of the group's naming scheme that the plan leaves because the group
	// did not make them (besides those its operations name).
	Left []Left
}

// JoinReasons renders reasons as a short comma separated list.
func JoinReasons(rs []Reason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.What
	}
	return strings.Join(parts, ", ")
}

// PlanGroup computes how to take the observed instances to the desired group: indexed members
// are resized to the target size, named members follow the configs outside the naming scheme,
// and every remaining member is planned with its template, policy and config.
func PlanGroup(s GroupState, observed []Observed, env Env) GroupPlan {
	s = s.Inventoried(observed, env)
	g := s.Group
	policy := s.StatefulPolicy()
	byIndex := map[int]Observed{}
	named := map[string]Observed{}
	byName := map[string]Observed{}
	var indices []int
	var p GroupPlan
	for _, o := range observed {
		byName[o.Name] = o
		switch {
		case o.Index > 0 && o.Unmanaged && !g.AdoptsByName(o.Name, o.Index):
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: "a domain of that name exists and no provider created it; a per-instance config adopts only a name outside the <base>-<index> scheme: set adopt_existing = true on the group to adopt it as that member"})
		case o.Index > 0 && !o.Unmanaged && g.Abandoned(o.Name):
			// Taken out of the group as it is: its record goes, its domain and volumes stay.
			if o.Unknown {
				p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: unreachable(o.Host) + ": it is abandoned once its host answers"})
				continue
			}
			p.Abandon = append(p.Abandon, o)
		case o.Index > 0:
			byIndex[o.Index] = o
			indices = append(indices, o.Index)
		default:
			named[o.Name] = o
		}
	}
	p.Preservation = PreserveMembers(s, observed, env.Now)
	env.action.preservation(observed, p.Preservation, g.FailedPreservation, env)
	preserved := map[string]bool{}
	for name, d := range p.Preservation {
		if d.Preserved() {
			preserved[name] = true
		}
	}
	// Which members a scale-in removes is the scale-in order's business, not only the highest
	// indices.
	var skip []int
	for _, name := range g.Abandon {
		if i, ok := ParseInstanceIndex(g.Base, name); ok {
			skip = append(skip, i)
		}
	}
	final, create, remove := ResizeSkipping(indices, skip, g.TargetSize, func(n int) []int {
		members := make([]Observed, 0, len(indices))
		for _, i := range indices {
			members = append(members, byIndex[i])
		}
		var picked []int
		p.DeleteReasons = map[string]string{}
		for _, v := range PickScaleIn(members, n, g.ScaleInOrder, func(o Observed) MemberHealth { return g.HealthOf(o, env.Now) }, preserved) {
			picked = append(picked, v.Index)
			p.DeleteReasons[byIndex[v.Index].Name] = v.Reason
		}
		return picked
	})
	p.Placement = map[string]string{}
	held := map[int]bool{}
	for _, i := range remove {
		o := byIndex[i]
		if o.Unknown {
			// The policy's pick waits for its host; no other member is removed in its place.
			// It stays a member until then, as the plan and the record show it.
			held[i] = true
			p.Held = append(p.Held, HostWait{Name: o.Name, Host: HostOf(o.Host), Why: scaleInWaits(o.Host), Picked: p.DeleteReasons[o.Name]})
			delete(p.DeleteReasons, o.Name)
			final = append(final, i)
			continue
		}
		p.Delete = append(p.Delete, o.Name)
		p.Placement[o.Name] = HostOf(o.Host)
	}
	sort.Ints(final)
	for _, o := range p.Abandon {
		// Still the group's until its record is gone: an interrupted run finds it again.
		p.Placement[o.Name] = HostOf(o.Host)
	}
	creating := map[int]bool{}
	for _, i := range create {
		creating[i] = true
	}
	// What each host keeps decides where new members go.
	counts := map[string]int{}
	for _, o := range observed {
		if !slices.Contains(p.Delete, o.Name) {
			counts[HostOf(o.Host)]++
		}
	}
	// The group template's revision is a hash of it: computed once, not once per member.
	rev := g.Template.Revision()
	present := map[string]bool{}
	for _, i := range final {
		present[InstanceName(g.Base, i)] = true
	}
	var names []string
	for name := range s.Configs {
		if s.Named(name) {
			names = append(names, name)
		} else if !present[name] {
			p.Waiting = append(p.Waiting, name)
		}
	}
	for name, o := range named {
		if _, ok := s.Configs[name]; !ok && !o.Unmanaged {
			// A named member whose config was destroyed without removing the instance stays.
			names = append(names, name)
		}
	}
	sort.Strings(names)
	sort.Strings(p.Waiting)
	// The canary hold is decided over every member that stays and every member the plan creates,
	// before any is planned: which members it holds back depends on how many others run the
	// group's template.
	staying := make([]Observed, 0, len(final)+len(names))
	var creations []NewMember
	for _, i := range final {
		switch {
		case creating[i]:
			creations = append(creations, NewMember{Name: InstanceName(g.Base, i), Index: i})
		case !held[i]:
			staying = append(staying, byIndex[i])
		}
	}
	for _, name := range names {
		if o, ok := named[name]; ok {
			staying = append(staying, o)
		} else {
			creations = append(creations, NewMember{Name: name})
		}
	}
	heldBack, stable := s.canaryHold(staying, creations, preserved)
	newMember := func(name string, i int) NewMember {
		if heldBack[name] {
			// Created while the canary holds: from the template the held members run.
			return NewMember{Name: name, Index: i, Plan: NewInstancePlan(name, *stable, policy, s.Config(name)), Template: stable}
		}
		return NewMember{Name: name, Index: i, Plan: NewInstancePlan(name, g.Template, policy, s.Config(name))}
	}
	for _, i := range final {
		name := InstanceName(g.Base, i)
		if creating[i] {
			p.addCreate(s, newMember(name, i), counts, rev, env)
			continue
		}
		if held[i] {
			m := UnknownMember(byIndex[i])
			m.Planned.Why = scaleInWaits(m.Host)
			p.Final = append(p.Final, m)
			continue
		}
		p.planExisting(s, byIndex[i], rev, heldBack[name], env)
	}
	for _, name := range names {
		if o, ok := named[name]; ok {
			p.planExisting(s, o, rev, heldBack[name], env)
			continue
		}
		p.addCreate(s, newMember(name, 0), counts, rev, env)
	}
	p.planMoves(s, byName, env)
	for _, m := range p.Final {
		p.Placement[m.Name] = m.Host
	}
	for _, mv := range p.Moves {
		// Until the target has its definition the member is found on its source: the record
		// keeps that host (and the listing reads it) while the move runs.
		if mv.Phase == MoveStart {
			p.Placement[mv.Name] = HostOf(mv.Move.From)
		}
	}
	p.buildWaves(s, byName, env)
	if env.DestroyRun {
		p.leaveMaking()
	}
	withUUIDs(p.Waves, env.NewUUID)
	p.Inventory, p.FinalInventory, p.makers = s.inventoryOf(p.Waves)
	return p
}

// FinalPlacement is the host of every member once the plan is applied: what the group record
// keeps after it ran.
func (p GroupPlan) FinalPlacement() map[string]string {
	out := make(map[string]string, len(p.Final))
	for _, m := range p.Final {
		out[m.Name] = m.Host
	}
	return out
}

// Disruptive reports whether the step takes the instance down: RESTART and REPLACE do.
func (s Step) Disruptive() bool { return s.Plan.Changed && s.Action >= ActionRestart }

// SortMembers puts members in the order a plan's Final has them: indexed ones by index, then
// named ones (index 0) by name. A refresh lists the members in this order too, so that the
// group's `instances` keeps each member's place from refresh to plan to apply.
func SortMembers(ms []Member) {
	slices.SortStableFunc(ms, func(a, b Member) int { return MemberOrder(a.Index, a.Name, b.Index, b.Name) })
}

// MemberOrder compares two members, by index and name, in SortMembers's order: negative when the
// first comes first.
func MemberOrder(aIndex int, aName string, bIndex int, bName string) int {
	switch {
	case (aIndex == 0) != (bIndex == 0):
		if aIndex == 0 {
			return 1
		}
		return -1
	case aIndex != bIndex:
		return aIndex - bIndex
	}
	return strings.Compare(aName, bName)
}
