package engine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"
)

// Update policy types.
const (
	UpdateProactive     = "PROACTIVE"
	UpdateOpportunistic = "OPPORTUNISTIC"
)

// UpdateTypes lists the allowed update policy types.
var UpdateTypes = []string{UpdateProactive, UpdateOpportunistic}

// Status is a member's state as its host shows it, or as a plan leaves it: the backend converts
// its own states to these once, and the engine decides on them. The text is what users see.
type Status string

// Instance statuses.
const (
	StatusRunning   Status = "RUNNING"
	StatusStopped   Status = "STOPPED"
	StatusPaused    Status = "PAUSED"
	StatusSuspended Status = "SUSPENDED"
	StatusFailed    Status = "FAILED"
	StatusMissing   Status = "MISSING"
)

// UpdatePolicy says how template changes reach existing instances.
type UpdatePolicy struct {
	Type                  string
	MinimalAction         Action
	MostDisruptiveAllowed Action
	// MaxUnavailable is the budget as a number of members; MaxUnavailablePercent, when above 0,
	// gives it as a percentage of the target size instead.
	MaxUnavailable        int
	MaxUnavailablePercent int
	// MinReady is how long a wave's members must be HEALTHY before the next wave starts;
	// ReadyTimeout how long a member may take to become HEALTHY before its wave fails (0: the
	// default). OnFailure is STOP or ROLLBACK ("" is STOP).
	MinReady     time.Duration
	ReadyTimeout time.Duration
	OnFailure    string
	// Snapshot, when set, snapshots the chosen preserved disks of each member a rollout restarts
	// or replaces onto a new template (see snapshots.go).
	Snapshot *SnapshotPolicy
	// Canary, when set, holds the rollout of a template change once that many members run the
	// group's template (update_policy.canary, see canary.go); nil holds nothing.
	Canary *Canary
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
	// ShutdownTimeout is how long a member is given to shut down after an ACPI request before it
	// is powered off; see StopTimeout.
	ShutdownTimeout string
	// ScaleInOrder is which healthy members a scale-in removes first; "" is HIGHEST_INDEX.
	ScaleInOrder string
	// AutoHealing, when set, replaces failed members under its delays and limits; without it a
	// failed member is repaired like any drift.
	AutoHealing *AutoHealing
	// FailedPreservation, when set, keeps failed members as they are for analysis.
	FailedPreservation *FailedPreservation
	// HealthCheck, when set, judges running members by a probe from inside the guest
	// (template.health_check); nil judges them by the hypervisor's view alone.
	HealthCheck *HealthCheck
	// Hosts are the hosts new members are spread over (distribution_policy), by the names the
	// provider gives them; none means DefaultHost alone.
	Hosts []string
	// Drain are hosts whose members move away to the group's other hosts
	// (distribution_policy.drain); a member on a host not in Hosts moves away too.
	Drain []string
	// Rebalance moves members from the fullest of the group's hosts to the emptiest until the
	// spread is even (distribution_policy.rebalance); without it a host only takes new members.
	Rebalance bool
	// ColdMoves makes every move cold (distribution_policy.live = false): stop, copy, verify,
	// start on the target; otherwise a running member moves live where its hosts allow it.
	ColdMoves bool
	// AdoptExisting makes a domain no provider created under a "<base>-<index>" name, with an
	// index up to the target size, that member (adopt_existing): kept as it is, only live
	// changes reach it, and every disk it came with is its preserved disk, never deleted.
	AdoptExisting bool
	// Abandon are the names taken out of the group with their domains and volumes left as they
	// are (abandon): a member listed is abandoned, and scale-out skips the names while listed.
	Abandon []string
}

// Abandoned reports whether name is one the group abandons (Group.Abandon).
func (g Group) Abandoned(name string) bool { return slices.Contains(g.Abandon, name) }

// AdoptsByName reports whether the group takes a domain no provider created under name, whose
// number in the "<base>-<index>" scheme is index, as that member (adopt_existing): only names the
// group has room for and does not abandon.
func (g Group) AdoptsByName(name string, index int) bool {
	return g.AdoptExisting && g.hasRoomFor(name, index)
}

// hasRoomFor reports whether the group's size reaches name, numbered index in its scheme: one of
// its first target_size indices, not counting those it abandons (scale-out skips them), and not
// abandoned itself.
func (g Group) hasRoomFor(name string, index int) bool {
	skipped := 0
	for _, a := range g.Abandon {
		if i, ok := ParseInstanceIndex(g.Base, a); ok && i < index {
			skipped++
		}
	}
	return index >= 1 && index <= g.TargetSize+skipped && !g.Abandoned(name)
}

// AbandonProblems lists the names of Abandon that cannot be a member of the group: a member is
// abandoned by its "<base>-<index>" name. A listed name that is not a member now is not a
// problem: abandoning it again changes nothing.
func (g Group) AbandonProblems() []string {
	var out []string
	for _, n := range g.Abandon {
		if _, ok := ParseInstanceIndex(g.Base, n); !ok {
			out = append(out, n)
		}
	}
	return out
}

// ConfigEntry is one per-instance config as the group keeps it.
type ConfigEntry struct {
	Config                  InstanceConfig
	MinimalAction           Action
	MostDisruptiveAllowed   Action
	RemoveInstanceOnDestroy bool
	RemoveStateOnDestroy    bool
	// Preserve is the config's preserve: NOW, WHEN_FAILED, NO, or "" when unset.
	Preserve string
}

// DefaultConfigEntry is a config with the documented defaults and nothing preserved.
func DefaultConfigEntry() ConfigEntry {
	return ConfigEntry{MinimalAction: ActionNone, MostDisruptiveAllowed: ActionReplace}
}

// GroupState is everything the group record on the host holds: the group, its stateful policy
// (nil when no policy resource exists) and its per-instance configs by instance name.
type GroupState struct {
	Group   Group
	Pool    string
	Policy  *Policy
	Configs map[string]ConfigEntry
	// Resource is the group resource's own rendering of its configuration, kept so that import
	// rebuilds it exactly; the engine does not read it.
	Resource string
	// Released is what the stateful policy and the configs preserved before they were changed or
	// removed during one run; see Release.
	Released *Released
	// UnfinishedReleases are releases of earlier runs that are unfinished: the group's destroy
	// still honours them (see Released) until the group resource's own apply finishes.
	UnfinishedReleases []Released
	// Placement is the host of every member the group placed, by name: a member stays on its
	// host for good, and when that host cannot be reached this is how the group knows the
	// member is there (UNKNOWN) rather than gone.
	Placement map[string]string
	// Placed says that Placement names every member the group has, so that an empty one means
	// no members: the record kept it from the day it was made, or an apply has written it since.
	// A record from before every group kept its placement has it false (Candidates).
	Placed bool
	// Creating are the members of Placement that an apply began to create and that no apply has
	// seen made since: the apply writes them here before it runs and keeps only those that it
	// did not finish (StillCreating). On a host that does not answer, such a member is not known
	// to exist, and is no member (Unreachable).
	Creating []string
	// TemplateRevisions are the revisions of the templates the group has had, oldest first, up
	// to maxTemplateRevisions (SetGroup keeps them): a member whose record was left at an earlier
	// template by a change of the description alone is read as on the template its domain's
	// description completes, when the group had that template (Described).
	TemplateRevisions []string
	// Retained are the members whose per-instance config was destroyed with
	// remove_instance_state_on_destroy = false, sorted: each keeps the disks and metadata its
	// config gave it, as its own record holds them, until it changes for another reason (see
	// RetainedConfig). The state itself is the member's; the group keeps only the intent. A name
	// stays until a config of that instance is applied or destroyed again: once the member lost
	// the state (it changed for another reason, or was deleted), its record has nothing of a
	// config left and the name retains nothing, so it need not be pruned.
	Retained []string
	// Images are the image volumes the group made in its pool from a host file (HostImage), by
	// host: written before each is made, so that the group's destroy deletes them (and only
	// them) once no member backs onto them. Once the group has a copy of a source_image on a
	// host, new members there back onto it and the file is not read again: a file re-pointed
	// after the copy was made (a link swapped) reaches no member. Another source_image makes
	// another copy.
	Images map[string][]HostImage
	// KeepRetained is not part of the record: it names the members that had a per-instance
	// config when the plan this apply carries out was made (the refresh it was made from read
	// it). A member among them that retains a destroyed config's state had that config destroyed
	// since, in this very apply (Terraform destroys a config before it updates the group), and
	// keeps the state through this apply's change, as the plan that was shown did: the state
	// goes at its next update for another reason. The store never writes it.
	KeepRetained map[string]bool
	// NoCreate is not part of the record: it marks the group as the destroy of its policy or
	// of a per-instance config applies it. Such an apply only takes away what was removed: it
	// never creates a member (one that is missing, or whose record is gone, is the group's own
	// apply's business). The store never writes it.
	NoCreate bool
	// Inventory is every object the group made (see inventory.go): only those are ever
	// deleted, written over or swept.
	Inventory Inventory
	// Listed is not part of the record: what the pools showed when the plan was made, set (not
	// nil) once Inventoried settled Inventory against it. The store never writes it.
	Listed Listing
}

// maxTemplateRevisions bounds TemplateRevisions. A member's record lags only through changes of
// the description alone (any other change it receives writes its record), so the bound is reached
// only by a member that many template changes left alone.
const maxTemplateRevisions = 64

// SetGroup gives the group its configuration g and keeps its template's revision in
// TemplateRevisions.
func (s *GroupState) SetGroup(g Group) {
	s.Group = g
	rev := g.Template.Revision()
	revs := slices.DeleteFunc(slices.Clone(s.TemplateRevisions), func(r string) bool { return r == rev })
	revs = append(revs, rev)
	if len(revs) > maxTemplateRevisions {
		revs = revs[len(revs)-maxTemplateRevisions:]
	}
	s.TemplateRevisions = revs
}

// StatefulPolicy is the group's policy, empty when there is none.
func (s GroupState) StatefulPolicy() Policy {
	if s.Policy == nil {
		return Policy{}
	}
	return *s.Policy
}

// Config is the instance's config, or nothing preserved when it has none.
func (s GroupState) Config(name string) InstanceConfig { return s.Configs[name].Config }

// Bounds are the minimal and most disruptive allowed actions of an instance: the group's
// update policy, narrowed by the instance's own config when it has one.
func (s GroupState) Bounds(name string) (minimal, allowed Action) {
	minimal, allowed = s.Group.Policy.MinimalAction, s.Group.Policy.MostDisruptiveAllowed
	if c, ok := s.Configs[name]; ok {
		minimal = MaxAction(minimal, c.MinimalAction)
		allowed = MinAction(allowed, c.MostDisruptiveAllowed)
	}
	return minimal, allowed
}

// Named reports whether name is outside the group's "<base>-<index>" scheme.
func (s GroupState) Named(name string) bool {
	_, ok := ParseInstanceIndex(s.Group.Base, name)
	return !ok
}

// Candidates says which domains of a host can be the group's members, so that observing the
// group reads only those and a host's other domains cost it nothing: the names that start with
// prefix (the "<base>-<index>" scheme; a member's record tells it from another group's domain
// with the same start) and names, the names outside it that the group's configs give or that it
// placed members under (a member whose config was destroyed without removing it keeps its
// place). A group that has not written where its members are (its record is from before groups
// kept that, or it has none yet) may have members under any name: prefix is "" and names nil,
// which is every domain. One that has, and has no members (target_size 0), reads only the
// domains that could be its next ones: a host's other domains cost it nothing either.
func (s GroupState) Candidates() (prefix string, names []string) {
	if s.Group.Base == "" || (len(s.Placement) == 0 && !s.Placed) {
		return "", nil
	}
	prefix = s.Group.Base + "-"
	seen := map[string]bool{}
	add := func(n string) {
		if !strings.HasPrefix(n, prefix) && !seen[n] {
			seen[n] = true
			names = append(names, n)
		}
	}
	for n := range s.Configs {
		add(n)
	}
	for n := range s.Placement {
		add(n)
	}
	sort.Strings(names)
	return prefix, names
}

// DefaultShutdownTimeout is how long a member is given to shut down when the group sets no
// shutdown_timeout.
const DefaultShutdownTimeout = 60 * time.Second

// DefaultShutdownTimeoutText is DefaultShutdownTimeout as users write it.
const DefaultShutdownTimeoutText = "60s"

// StopTimeout is how long a stopping member is given after its ACPI shutdown request before it
// is powered off; zero powers it off at once.
func (g Group) StopTimeout() time.Duration {
	if d, err := ParseShutdownTimeout(g.ShutdownTimeout); err == nil {
		return d
	}
	return DefaultShutdownTimeout
}

// ParseShutdownTimeout reads shutdown_timeout as users write it: a Go duration of zero or more,
// such as "60s", "2m" or "0s".
func ParseShutdownTimeout(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, fmt.Errorf("%q is not a duration of zero or more such as \"60s\", \"2m\" or \"0s\"", s)
	}
	return d, nil
}

// DesiredStatus is the status every member of g must have.
func (g Group) DesiredStatus() Status {
	if g.Running {
		return StatusRunning
	}
	return StatusStopped
}
