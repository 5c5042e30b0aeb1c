// This file holds how the group plan treats one member: the step for an existing one, a new one's final state.

package engine

import (
	"fmt"
	"sort"
)

// addCreate places a member to create and adds it and its final state; rev is the group
// template's revision. One that no host can take is blocked.
func (p *GroupPlan) addCreate(s GroupState, m NewMember, counts map[string]int, rev string, env Env) {
	if s.NoCreate {
		// The destroy of a policy or a config creates nothing.
		return
	}
	if problem := creationConflict(s, m, env, counts); problem != "" {
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
	planned := plannedCreate(s, m.Name, env)
	if m.Template != nil {
		// Held back by the canary from the start (canary.go).
		rev = m.Template.Revision()
		planned.Why, planned.Held = joinWhy(planned.Why, CanaryCreatedWhy), true
	}
	p.Final = append(p.Final, Member{Name: m.Name, Index: m.Index, Status: g.DesiredStatus(), Revision: rev, CurrentAction: "NONE",
		Planned: planned, Health: HealthHealthy, Host: m.Host})
}

// planExisting plans one existing member and adds its step, its blocking and its final state;
// heldBack is true when the group's canary holds it back on its own template (canary.go).
func (p *GroupPlan) planExisting(s GroupState, o Observed, groupRev string, heldBack bool, env Env) {
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
	case g.Policy.Type == UpdateOpportunistic && o.Instance.TemplateRevision != "" && env.action.force(o.Name) != ActionReplace:
		// Opportunistic updates reach an instance's template only when it is created again
		// (a recreation the user asks for with an action is one); its policy and config still
		// apply.
		t, rev = o.Instance.Template, o.Instance.Template.Revision()
	case heldBack:
		// Held back by the canary: planned from its own template, as above, whatever it needs
		// (a heal, a member action) and whatever is asked of it: a hold is the desired state, and
		// a repair must not take the member onto the template the hold keeps it from.
		t, rev = o.Instance.Template, o.Instance.Template.Revision()
	}
	minimal, allowed := s.Bounds(o.Name)
	mi, missing := Drift(o)
	config := s.Config(o.Name)
	_, hasConfig := s.Configs[o.Name]
	byName := t.Adopted && o.Index > 0 && !hasConfig
	// A member that keeps what its destroyed config gave it is planned with that state as its
	// config, so that the state alone is no reason to change it; dropped is its plan without.
	// A member adopted by name has no config to have destroyed: its own disks are its config.
	var dropped *InstancePlan
	if byName {
		config = adoptedConfig(o)
	} else if retained, ok := s.RetainedConfig(o.Name, o.Instance); ok {
		d := PlanInstance(mi, t, s.StatefulPolicy(), config, minimal, allowed)
		dropped, config = &d, retained
	}
	plan := PlanInstance(mi, t, s.StatefulPolicy(), config, minimal, allowed)
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
	if byName && o.Unmanaged {
		plan.Reasons = append([]Reason{{Action: ActionNone, What: "adopted existing domain (adopt_existing)"}}, plan.Reasons...)
	}
	if o.RecordLost {
		plan.Changed = true
		plan.Reasons = append([]Reason{{Action: ActionNone, What: RecordLostWhy}}, plan.Reasons...)
	}
	if o.Instance.TemplateRevision != rev {
		// The record must name the template even when the template changed nothing the
		// instance shows, for example a metadata key its config overrides.
		plan.Changed = true
	}
	judged := g.HealthOf(o, env.Now)
	observedHealth := judged.Health
	m := Member{Name: o.Name, Index: o.Index, Status: o.Status, Revision: rev, CurrentAction: "NONE", Health: HealthHealthy, Host: HostOf(o.Host)}
	step := Step{Name: o.Name, Index: o.Index, UUID: o.UUID, Current: o.Instance, Plan: plan, Action: plan.Action, Template: t, Revision: rev, Adopt: o.Unmanaged, Observed: o.Status}
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
	if t.Adopted && !o.Unmanaged && !hasConfig && !byName {
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
	forced := env.action.force(o.Name)
	if forced > ActionNone && !plan.Blocked {
		// A member action restarts or recreates the member whatever it needs, and in place of
		// any heal: the user asked for it.
		step = forcedStep(step, forced, env.action.why())
		step.Restore = env.action.restore(s, o)
		plan = step.Plan
	}
	if a := g.AutoHealing; a != nil && !t.Adopted && !plan.Blocked && forced == ActionNone {
		if mh, healable := g.Healable(o, env.Now); healable && (o.Instance.InFlight == nil || o.Instance.Heals > 0) && !configured(o.Instance, plan) {
			d := a.Decide(o.Instance, env.Now, mh.HealWhy())
			if d.Act {
				// Healing repairs the member, keeping its preserved disks, whatever the least
				// repair of its drift would be: a replacement, or for an UNHEALTHY member a
				// restart first (MemberHealth.HealAction), unless its drift needs more.
				action := max(mh.HealAction(d.Attempt), plan.Action)
				step.Plan.Changed, step.Heal = true, d.Attempt
				step.Plan.Reasons = []Reason{{Action: action, What: d.Why}}
				step.Plan.Needed, step.Plan.Action, step.Action = action, action, action
				step.Plan.Blocked = action > plan.Allowed
				plan = step.Plan
			} else {
				// The member is left as it is, failed, and the plan says why.
				asIs(Planned{Why: d.Why, Unhealed: true})
				return
			}
		}
	}
	if dropped != nil && step.Plan.Changed && !plan.Blocked && !s.KeepRetained[o.Name] {
		// The member changes for another reason (its template or config, drift, a heal): the
		// destroyed config's state goes with that change, unless the plan shown for this apply
		// still saw the config (KeepRetained).
		step.Plan = dropRetained(step.Plan, *dropped)
		step.Action, plan = step.Plan.Action, step.Plan
	}
	if plan.Blocked {
		p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Needs: plan.Action, Allowed: plan.Allowed, Reasons: plan.Reasons})
		m.Revision, m.CurrentAction, m.Health = o.Instance.TemplateRevision, CurrentAction(o.Instance), observedHealth
		step.Plan.Changed = false
	}
	step.DropSnapshots = expiredSnapshots(s, o, env.Now)
	if step.Plan.Changed || step.Power != "" || step.Preserve != nil || len(step.DropSnapshots) > 0 {
		p.Steps = append(p.Steps, step)
	} else {
		m.Health = observedHealth
	}
	m.Planned = step.Planned()
	if m.Planned.Kind == PlannedNone && m.Planned.Why == "" {
		m.Planned.Why = judged.Shown()
	}
	if heldBack {
		m.Planned.Why, m.Planned.Held = HeldWhy(m.Planned.Why), true
	}
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

// adoptedConfig is the config of a member the group adopted by its name (adopt_existing), which
// no per-instance config names: every disk the domain came with is its preserved disk, as it is
// attached, never deleted. A domain adopted now has its attached disks; an adopted member has
// the disks its record kept from its adoption, so that a disk attached behind the provider's
// back is drift, not a new preserved disk.
func adoptedConfig(o Observed) InstanceConfig {
	var c InstanceConfig
	if o.Unmanaged {
		for _, d := range o.Attached {
			mode := ModeReadWrite
			if d.ReadOnly {
				mode = ModeReadOnly
			}
			c.Disks = append(c.Disks, ConfigDisk{DeviceName: d.DeviceName, Source: d.Source, Mode: mode, DeleteRule: DeleteNever})
		}
		return c
	}
	for _, d := range o.Instance.PreservedFromConfig.Disks {
		c.Disks = append(c.Disks, ConfigDisk(d))
	}
	sort.Slice(c.Disks, func(i, j int) bool { return c.Disks[i].DeviceName < c.Disks[j].DeviceName })
	return c
}
