package engine

import (
	"fmt"
	"slices"
	"time"
)

// One owner, one writer: the group record names the Terraform state that owns the group and the
// apply that is changing it. These are the rules every write of the record goes by; reconcile
// reads the record, asks them, and writes what they return.

// Lease says which apply is changing a group, since when, and until when it may do so without
// renewing. It is kept in the group record, so that every Terraform run on every machine sees it.
type Lease struct {
	Holder string
	// Host and PID are the machine and process of the holder's provider, so that a holder that
	// died on the machine of the next apply is recognised at once rather than at expiry.
	Host    string
	PID     int
	Since   time.Time
	Expires time.Time
}

// Owner names the Terraform state a group belongs to: the one that created it, or the last one
// that imported it.
type Owner struct {
	ID    string
	Since time.Time
	// Creating is set until the apply that created the group has finished, so that the next
	// create of the same group finishes a creation that failed half-way instead of refusing it.
	Creating bool
}

// Write is one record write: the generation and the run that wrote it.
type Write struct {
	Generation int64
	Run        string
}

// GroupRecord is everything the group record holds: the group's state, and beside it who owns
// the group, who is changing it, and who wrote its last generations. The planning rules read
// only the state.
type GroupRecord struct {
	GroupState
	Owner *Owner
	Lease *Lease
	// Writes are the last record writes, oldest first: which run wrote which generation, so that
	// an apply can tell its own writes since its plan from another's (Claim.Basis).
	Writes []Write
}

// Claim is what a group resource knows of its ownership.
type Claim struct {
	// ID is the owner ID kept in the resource's Terraform state.
	ID string
	// TakeoverFrom is the owner ID the group had when this state imported it: the group is taken
	// over from that owner at the next change.
	TakeoverFrom string
	// Create is set by the apply that creates the group.
	Create bool
	// Basis is the generation of the group record that the plan this apply runs was made from
	// (what the refresh read); 0 when not known. Taking the group's lease is refused when the
	// record has moved on since: another apply changed the group after the plan was made, and
	// the plan is not run over its change.
	Basis int64
}

// keptWrites bounds GroupRecord.Writes: more than one apply writes between its plan and its hold.
const keptWrites = 64

// Wrote adds the write of generation gen by run to the history.
func (r *GroupRecord) Wrote(gen int64, run string) {
	r.Writes = append(r.Writes, Write{Generation: gen, Run: run})
	if len(r.Writes) > keptWrites {
		r.Writes = slices.Clone(r.Writes[len(r.Writes)-keptWrites:])
	}
}

// ChangedBy reports whether a run other than run wrote the record after generation basis, up
// to generation now; a history that does not reach back to basis cannot tell, which counts as
// changed.
func (r GroupRecord) ChangedBy(basis, now int64, run string) bool {
	seen := map[int64]bool{}
	for _, w := range r.Writes {
		if w.Generation <= basis || w.Generation > now {
			continue
		}
		if w.Run != run {
			return true
		}
		seen[w.Generation] = true
	}
	return int64(len(seen)) < now-basis
}

// CheckBasis refuses to run a plan made from generation basis of the group's record when the
// record is at generation now and another run than run wrote it in between. The run's own
// writes since (a config or policy of the group applied before it, in this apply) are part of
// its plan.
func (r GroupRecord) CheckBasis(group string, basis, now int64, run string) error {
	if basis == 0 || basis == now || !r.ChangedBy(basis, now, run) {
		return nil
	}
	return &StalePlanError{Group: group, Basis: basis, Now: now}
}

// TakeLease returns the lease me writes at now: a new one when the group is free, its lease
// expired or its holder is gone (gone, when not nil, says so of a holder, such as a process of
// this machine that no longer runs), the same one renewed when me has it already. Another live
// holder is a *LeaseError.
func TakeLease(group string, cur *Lease, me Lease, now time.Time, ttl time.Duration, gone func(Lease) bool) (*Lease, error) {
	me.Since, me.Expires = now, now.Add(ttl)
	switch {
	case cur == nil || !now.Before(cur.Expires):
		return &me, nil
	case cur.Holder == me.Holder:
		me.Since = cur.Since
		return &me, nil
	case gone != nil && gone(*cur):
		return &me, nil
	default:
		return nil, &LeaseError{Group: group, Lease: *cur}
	}
}

// ClaimOwner returns the owner a change made under claim c leaves in the record. A group whose
// record has no owner (written before owners existed) is claimed by the first state that changes
// it; a create finds the group free, or a creation that failed half-way (and finishes it).
func ClaimOwner(group string, cur *Owner, exists bool, c Claim, now time.Time) (*Owner, error) {
	switch {
	case c.Create && !exists:
		return &Owner{ID: c.ID, Since: now, Creating: true}, nil
	case cur != nil && cur.ID == c.ID:
		return cur, nil
	case c.Create && cur != nil && cur.Creating:
		return &Owner{ID: c.ID, Since: now, Creating: true}, nil
	case c.Create:
		return nil, &ExistsError{Group: group, Why: "its group record is there"}
	case cur == nil || cur.ID == "" || cur.ID == c.TakeoverFrom:
		return &Owner{ID: c.ID, Since: now}, nil
	default:
		return nil, &OwnerError{Group: group, Owner: *cur}
	}
}

// Writer is who writes a group record, and when: the lease it takes and how long that lasts.
type Writer struct {
	// Me is the writer's lease, undated.
	Me  Lease
	Now time.Time
	TTL time.Duration
	// Gone, when not nil, tells a holder that is gone (see TakeLease).
	Gone func(Lease) bool
}

// Admit decides a write of the group's record (exists is false when the group has none yet) by
// w: with lease, it takes (or renews) the group's lease, refused while another apply holds it;
// with a claim, it checks the group's owner and records it. Nothing is changed when it refuses.
func (r *GroupRecord) Admit(group string, exists bool, w Writer, lease bool, claim *Claim) error {
	l, o := r.Lease, r.Owner
	if lease {
		var err error
		if l, err = TakeLease(group, r.Lease, w.Me, w.Now, w.TTL, w.Gone); err != nil {
			return err
		}
	}
	if claim != nil {
		var err error
		if o, err = ClaimOwner(group, r.Owner, exists, *claim, w.Now); err != nil {
			return err
		}
	}
	r.Lease, r.Owner = l, o
	return nil
}

// GiveBack is the write that ends holder's lease: it reports false, changing nothing, when
// holder does not hold it. finished says the work under the lease was done: the run's release
// is then finished, and a creation under claim (nil for none) by the group's owner is complete.
func (r *GroupRecord) GiveBack(holder, run string, finished bool, claim *Claim) bool {
	if r.Lease == nil || r.Lease.Holder != holder {
		return false
	}
	r.Lease = nil
	if !finished {
		return true
	}
	r.FinishRelease(run)
	if claim != nil && r.Owner != nil && r.Owner.ID == claim.ID {
		r.Owner.Creating = false
		r.Applied()
	}
	return true
}

// StalePlanError is a plan made before another apply changed the group.
type StalePlanError struct {
	Group      string
	Basis, Now int64
}

func (e *StalePlanError) Error() string {
	return fmt.Sprintf("group %s was changed by another apply since this plan was made (its record was at generation %d when the plan's refresh read it, and another terraform run wrote it up to generation %d since). Nothing was changed; run terraform apply again (with refresh) to plan from what the host has now", e.Group, e.Basis, e.Now)
}

// LeaseError is returned when another apply holds the group's lease.
type LeaseError struct {
	Group string
	Lease Lease
}

func (e *LeaseError) Error() string {
	return fmt.Sprintf("group %s is being changed by another apply (%s) since %s; its lease runs until %s unless renewed. Nothing was changed: wait for that apply to finish, or, if it was killed, until the lease expires, then apply again",
		e.Group, e.Lease.Holder, e.Lease.Since.UTC().Format(time.RFC3339), e.Lease.Expires.UTC().Format(time.RFC3339))
}

// ExistsError is returned when a create finds the group already there.
type ExistsError struct {
	Group string
	// Why says what was found: the group's record, or members without one.
	Why string
}

func (e *ExistsError) Error() string {
	return fmt.Sprintf("group %s already exists on this libvirt host (%s). Nothing was changed. To manage it from this Terraform state, import it: terraform import virt_stateful_group.<name> %s (or an import block); to make a new group, choose another name",
		e.Group, e.Why, e.Group)
}

// OwnerError is returned when a state changes a group that belongs to another state.
type OwnerError struct {
	Group string
	Owner Owner
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("group %s belongs to another Terraform state (owner %s since %s: it was created or imported there). Nothing was changed. To manage it from this state, import it again (terraform import); to stop managing it here without touching it, terraform state rm it",
		e.Group, e.Owner.ID, e.Owner.Since.UTC().Format(time.RFC3339))
}
