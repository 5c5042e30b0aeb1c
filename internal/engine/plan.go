package engine

import (
	"fmt"
	"sort"
	"strings"
)

// Update policy types.
const (
	UpdateProactive     = "PROACTIVE"
	UpdateOpportunistic = "OPPORTUNISTIC"
)

// UpdateTypes lists the allowed update policy types.
var UpdateTypes = []string{UpdateProactive, UpdateOpportunistic}

// Instance statuses.
const (
	StatusRunning   = "RUNNING"
	StatusStopped   = "STOPPED"
	StatusPaused    = "PAUSED"
	StatusSuspended = "SUSPENDED"
	StatusFailed    = "FAILED"
	StatusMissing   = "MISSING"
)

// UpdatePolicy says how template changes reach existing instances.
type UpdatePolicy struct {
	Type                  string
	MinimalAction         Action
	MostDisruptiveAllowed Action
	MaxUnavailable        int
}

// DefaultUpdatePolicy is the policy of a group that sets none.
func DefaultUpdatePolicy() UpdatePolicy {
	return UpdatePolicy{Type: UpdateProactive, MinimalAction: ActionNone, MostDisruptiveAllowed: ActionReplace, MaxUnavailable: 1}
}

// Group is the desired state of a group.
type Group struct {
	Name       string
	Base       string
	TargetSize int
	Running    bool
	Template   Template
	Policy     UpdatePolicy
}

// Observed is an instance as it exists now.
type Observed struct {
	Name   string
	Index  int
	Status string
	// Applied is the template the instance was last built or updated from.
	Applied Template
}

// Step is what happens to one existing instance.
type Step struct {
	Name    string
	Index   int
	Action  Action
	Reasons []Reason
	// Changed is true when the instance's template differs from the desired one, even if only by
	// changes that cost NONE.
	Changed bool
	// Power is the status the instance must end in: StatusRunning or StatusStopped, or empty
	// when it is already there.
	Power string
}

// Blocked is an instance whose change needs more than the update policy allows.
type Blocked struct {
	Name    string
	Needs   Action
	Allowed Action
	Reasons []Reason
}

func (b Blocked) String() string {
	return fmt.Sprintf("%s needs %s (%s), allowed %s", b.Name, b.Needs, JoinReasons(b.Reasons), b.Allowed)
}

// Member is an instance as it will be once the plan is applied.
type Member struct {
	Name     string
	Index    int
	Status   string
	Revision string
}

// GroupPlan is what reconciling a group does.
type GroupPlan struct {
	Create  []int    // indices to create, lowest first
	Delete  []string // instance names to delete, highest index first
	Steps   []Step   // existing instances that change
	Blocked []Blocked
	Final   []Member // every member after the plan, by index
}

// JoinReasons renders reasons as a short comma separated list.
func JoinReasons(rs []Reason) string {
	parts := make([]string, len(rs))
	for i, r := range rs {
		parts[i] = r.What
	}
	return strings.Join(parts, ", ")
}

// DesiredStatus is the status every member of g must have.
func (g Group) DesiredStatus() string {
	if g.Running {
		return StatusRunning
	}
	return StatusStopped
}

// PlanGroup computes how to take the observed instances to the desired group.
func PlanGroup(g Group, observed []Observed) GroupPlan {
	byIndex := make(map[int]Observed, len(observed))
	indices := make([]int, 0, len(observed))
	for _, o := range observed {
		byIndex[o.Index] = o
		indices = append(indices, o.Index)
	}
	final, create, remove := Resize(indices, g.TargetSize)
	var p GroupPlan
	p.Create = create
	for _, i := range remove {
		p.Delete = append(p.Delete, byIndex[i].Name)
	}
	creating := make(map[int]bool, len(create))
	for _, i := range create {
		creating[i] = true
	}
	want := g.DesiredStatus()
	revision := g.Template.Revision()
	for _, i := range final {
		m := Member{Name: InstanceName(g.Base, i), Index: i, Status: want, Revision: revision}
		if creating[i] {
			p.Final = append(p.Final, m)
			continue
		}
		o := byIndex[i]
		m.Name = o.Name
		step := Step{Name: o.Name, Index: i}
		if o.Status != want {
			step.Power = want
		}
		if g.Policy.Type == UpdateOpportunistic {
			// Opportunistic updates reach an instance only when it is created again.
			m.Revision = o.Applied.Revision()
		} else if o.Applied.Revision() != revision {
			needed, reasons := Diff(o.Applied, g.Template)
			action := MaxAction(needed, g.Policy.MinimalAction)
			if action > g.Policy.MostDisruptiveAllowed {
				p.Blocked = append(p.Blocked, Blocked{Name: o.Name, Needs: action, Allowed: g.Policy.MostDisruptiveAllowed, Reasons: reasons})
				m.Revision = o.Applied.Revision()
			} else {
				step.Action, step.Reasons, step.Changed = action, reasons, true
			}
		}
		if step.Changed || step.Power != "" {
			p.Steps = append(p.Steps, step)
		}
		p.Final = append(p.Final, m)
	}
	sort.Slice(p.Steps, func(i, j int) bool { return p.Steps[i].Index < p.Steps[j].Index })
	return p
}

// Disruptive reports whether the step takes the instance down: RESTART and REPLACE do.
func (s Step) Disruptive() bool { return s.Action >= ActionRestart }
