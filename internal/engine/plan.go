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
	Health string
	// Host is the host the member lives on.
	Host string
}

// CurrentAction names what is under way on an instance, from its in-flight marker.
func CurrentAction(mi ManagedInstance) string {
	if mi.InFlight == nil {
		return "NONE"
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
		case o.Index > 0 && o.Unmanaged:
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: "a domain of that name exists and no provider created it; only a name outside the <base>-<index> scheme can adopt a domain"})
		case o.Index > 0:
			byIndex[o.Index] = o
			indices = append(indices, o.Index)
		default:
			named[o.Name] = o
		}
	}
	p.Preservation = PreserveMembers(s, observed, env.Now)
	preserved := map[string]bool{}
	for name, d := range p.Preservation {
		if d.Preserved() {
			preserved[name] = true
		}
	}
	// Which members a scale-in removes is the scale-in order's business, not only the highest
	// indices.
	final, create, remove := ResizeBy(indices, g.TargetSize, func(n int) []int {
		members := make([]Observed, 0, len(indices))
		for _, i := range indices {
			members = append(members, byIndex[i])
		}
		var picked []int
		p.DeleteReasons = map[string]string{}
		for _, v := range PickScaleIn(members, n, g.ScaleInOrder, g.Running, preserved) {
			picked = append(picked, v.Index)
			p.DeleteReasons[byIndex[v.Index].Name] = v.Reason
		}
		return picked
	})
	p.Placement = map[string]string{}
	for _, i := range remove {
		o := byIndex[i]
		if o.Unknown {
			p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Problem: "the scale-in picked it, and " + unreachable(o.Host) + ": it can be removed once its host answers (or lower the scale-in only when it does)"})
		}
		p.Delete = append(p.Delete, o.Name)
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
		name := InstanceName(g.Base, i)
		present[name] = true
		if creating[i] {
			p.addCreate(s, NewMember{Name: name, Index: i, Plan: NewInstancePlan(name, g.Template, policy, s.Config(name))}, counts, rev, env)
			continue
		}
		p.planExisting(s, byIndex[i], rev, env)
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
	for _, name := range names {
		if o, ok := named[name]; ok {
			p.planExisting(s, o, rev, env)
			continue
		}
		p.addCreate(s, NewMember{Name: name, Plan: NewInstancePlan(name, g.Template, policy, s.Config(name))}, counts, rev, env)
	}
	for _, m := range p.Final {
		p.Placement[m.Name] = m.Host
	}
	p.buildWaves(s, byName, env)
	return p
}

// addCreate places a member to create and adds it and its final state; rev is the group
// template's revision. One that no host can take is blocked.
func (p *GroupPlan) addCreate(s GroupState, m NewMember, counts map[string]int, rev string, env Env) {
	if problem := creationConflict(s, m, env); problem != "" {
		p.Blocked = append(p.Blocked, Blocked{Name: m.Name, Problem: problem})
		return
	}
	g := s.Group
	host, ok := place(g, env, s.Placement, counts, m.Name)
	if !ok {
		p.Blocked = append(p.Blocked, Blocked{Name: m.Name, Problem: noHostAnswers(g, env)})
		return
	}
	m.Host = host
	p.Create = append(p.Create, m)
	p.Creating = append(p.Creating, m.Name)
	p.Final = append(p.Final, Member{Name: m.Name, Index: m.Index, Status: g.DesiredStatus(), Revision: rev, CurrentAction: "NONE",
		Planned: plannedCreate(s, m.Name, env), Health: HealthHealthy, Host: m.Host})
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

// planExisting plans one existing member and adds its step, its blocking and its final state.
func (p *GroupPlan) planExisting(s GroupState, o Observed, groupRev string, env Env) {
	g := s.Group
	if o.Unknown {
		// Nothing is known of it but where it is: it is neither changed nor made up for
		// elsewhere, and the plan says why.
		p.Final = append(p.Final, UnknownMember(o))
		return
	}
	o.Instance = Described(o, groupRev, s.TemplateRevisions)
	t, rev := g.Template, groupRev
	switch {
	case o.Unmanaged || o.Instance.Template.Adopted:
		t, rev = o.Instance.Template, o.Instance.Template.Revision()
	case g.Policy.Type == UpdateOpportunistic && o.Instance.TemplateRevision != "":
		// Opportunistic updates reach an instance's template only when it is created again;
		// its policy and config still apply.
		t, rev = o.Instance.Template, o.Instance.Template.Revision()
	}
	minimal, allowed := s.Bounds(o.Name)
	mi, missing := Drift(o)
	plan := PlanInstance(mi, t, s.StatefulPolicy(), s.Config(o.Name), minimal, allowed)
	if o.SeedMissing && plan.Desired.CloudInit != nil {
		missing = append(missing, Reason{Action: ActionRefresh, What: "drift: cloud-init seed volume " + SeedVolumeName(o.Name) + " missing"})
	}
	recorded := o.Instance
	if o.Description != nil && drifts(o) {
		// The domain's description is the member's: its record's copy lags after a change of
		// the description alone (Described), so a difference in it is never told as drift.
		recorded.Current.Description = *o.Description
	}
	plan = plan.withDrift(recorded, missing)
	if o.Instance.TemplateRevision != rev {
		// The record must name the template even when the template changed nothing the
		// instance shows, for example a metadata key its config overrides.
		plan.Changed = true
	}
	observedHealth, _ := Health(o, g.Running)
	m := Member{Name: o.Name, Index: o.Index, Status: o.Status, Revision: rev, CurrentAction: "NONE", Health: HealthHealthy, Host: HostOf(o.Host)}
	step := Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance, Plan: plan, Action: plan.Action, Template: t, Revision: rev, Adopt: o.Unmanaged}
	if !t.Adopted {
		m.Status = g.DesiredStatus()
		if o.Status != m.Status {
			step.Power = m.Status
		}
	}
	// asIs shows the member as the host has it: a member the plan leaves alone on purpose.
	asIs := func(planned Planned) {
		m.Status, m.Revision, m.CurrentAction, m.Health = o.Status, o.Instance.TemplateRevision, CurrentAction(o.Instance), observedHealth
		m.Planned = planned
		p.Final = append(p.Final, m)
	}
	if _, configured := s.Configs[o.Name]; t.Adopted && !o.Unmanaged && !configured {
		// An adopted domain is in the group by its config, and every disk it has came with it,
		// its boot disk among them: with the config gone, nothing says what it should look
		// like, and "detach what no config names" would unplug a running VM's own disks.
		asIs(Planned{Why: "adopted, and its per-instance config is gone: left as it is"})
		return
	}
	if d, ok := p.Preservation[o.Name]; ok && d.Preserved() {
		// Kept exactly as it is: not healed, updated, started or stopped.
		if !d.Changed {
			asIs(Planned{Why: d.Why})
			return
		}
		p.Steps = append(p.Steps, Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance, Template: o.Instance.Template, Revision: o.Instance.TemplateRevision, Preserve: &d})
		asIs(Planned{Kind: PlannedPreserve, Why: d.Why})
		return
	} else if ok && d.Changed {
		// Released: the member is planned as usual, and the release is written with it.
		d := d
		step.Preserve = &d
	}
	step.ResetHeals = o.Instance.Heals > 0 && configured(o.Instance, plan)
	if a := g.AutoHealing; a != nil && !t.Adopted && !plan.Blocked {
		if _, why := Health(o, g.Running); Healable(o, g.Running) && (o.Instance.InFlight == nil || o.Instance.Heals > 0) && !configured(o.Instance, plan) {
			d := a.Decide(o.Instance, env.Now, why)
			if d.Act {
				// Healing replaces the member, keeping its preserved disks, whatever the least
				// repair of its drift would be.
				step.Plan.Changed, step.Heal = true, d.Attempt
				step.Plan.Reasons = []Reason{{Action: ActionReplace, What: d.Why}}
				step.Plan.Needed, step.Plan.Action, step.Action = ActionReplace, ActionReplace, ActionReplace
				step.Plan.Blocked = ActionReplace > plan.Allowed
				plan = step.Plan
			} else {
				// The member is left as it is, failed, and the plan says why.
				asIs(Planned{Why: d.Why, Unhealed: true})
				return
			}
		}
	}
	if plan.Blocked {
		p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Needs: plan.Action, Allowed: plan.Allowed, Reasons: plan.Reasons})
		m.Revision, m.CurrentAction, m.Health = o.Instance.TemplateRevision, CurrentAction(o.Instance), observedHealth
		step.Plan.Changed = false
	}
	if step.Plan.Changed || step.Power != "" || step.Preserve != nil {
		p.Steps = append(p.Steps, step)
	} else {
		m.Health = observedHealth
	}
	m.Planned = step.Planned()
	p.Final = append(p.Final, m)
}

// plannedCreate is what the plan shows for a member it creates: with auto_healing, a member
// whose own boot volume is still in the pool existed and lost its definition, and is healed.
func plannedCreate(s GroupState, name string, env Env) Planned {
	if h, ok := s.Placement[name]; ok && !env.configured(h) {
		return Planned{Kind: PlannedCreate, Why: fmt.Sprintf("host %q was removed from the provider, and the member with it", HostOf(h))}
	}
	if s.Group.AutoHealing != nil && env.Volumes[VolumeName(name, BootDeviceName)] {
		return Planned{Kind: PlannedReplace, Why: "autoheal (definition missing)"}
	}
	return Planned{Kind: PlannedCreate}
}

// configured reports whether the plan changes the member because its template or config
// changed (not only for drift): such a change is applied as usual, and autohealing starts
// counting again after it.
func configured(recorded ManagedInstance, plan InstancePlan) bool {
	_, reasons := InstanceDiff(recorded.Current, plan.Desired)
	return len(reasons) > 0 || recorded.LastAppliedHash != plan.Hash
}

// Disruptive reports whether the step takes the instance down: RESTART and REPLACE do.
func (s Step) Disruptive() bool { return s.Plan.Changed && s.Action >= ActionRestart }
