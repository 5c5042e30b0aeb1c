package engine

import (
	"maps"
	"slices"
)

// A change of the template's description alone is applied by writing the domain's description and
// nothing else: one libvirt call per member instead of two, which is half the time of such a
// change on a large group (libvirt saves the domain's definition on every metadata write). The
// member's record then still names the template from before the change, and Described is where
// that record is read as the template it now has. Whatever shows or plans from a record's
// description, template or revision reads it through Described, but for a listing made without
// the group's template (its record's host does not answer), which shows records as written.

// Described is the member's record as its domain's description brings it up to date. A record
// whose template, with the domain's description in place of its own, has revision rev (the
// template planned) or one of revisions (those the group had, GroupState.TemplateRevisions),
// stands for a member updated to that template: its template, revision, description and last applied hash are taken as that
// template's. Anything else is returned as recorded; the plan takes the description from the
// host all the same (Drift), so a description no template of the group had is written again.
//
// A member with heals counted is returned as recorded: any change of its template starts the
// count again in its record, which is then written with the description, and reading a record
// whose write failed after the description's as updated would lose that.
func Described(o Observed, rev string, revisions []string) ManagedInstance {
	mi := o.Instance
	if o.Description == nil || *o.Description == mi.Template.Description || !drifts(o) || mi.Heals > 0 {
		return mi
	}
	was := mi.Template
	was.Description = *o.Description
	wasRev := was.Revision()
	if wasRev != rev && !slices.Contains(revisions, wasRev) {
		// A description no template of the group had with the rest of this one.
		return mi
	}
	if mi.Current.Hash() != mi.LastAppliedHash {
		// The record does not say that the member was fully applied from its template.
		return mi
	}
	cur := mi.Current
	cur.Description = was.Description
	mi.Current, mi.Template, mi.TemplateRevision, mi.LastAppliedHash = cur, was, wasRev, cur.Hash()
	return mi
}

// Recorded is the member's record once the step is done: the plan applied from the step's
// template, keeping when the domain was created and, unless the step starts them again, its heal
// counts. A heal that keeps the domain (an UNHEALTHY member's restart) counts itself, as its
// in-flight marker did: its LastHeal is stamped when the record is written (see restart), so
// that the next heal knows this one did not help.
func (s Step) Recorded() ManagedInstance {
	applied := s.applied()
	applied.Created = s.Current.Created
	switch {
	case s.Heal > 0:
		applied.Heals = s.Heal
	case !s.ResetHeals:
		applied.Heals, applied.LastHeal = s.Current.Heals, s.Current.LastHeal
	}
	return applied
}

// applied is the plan applied from the step's template, whose revision the plan worked out.
func (s Step) applied() ManagedInstance {
	if s.Revision == "" {
		return s.Plan.Applied(s.Template)
	}
	return s.Plan.appliedAs(s.Template, s.Revision)
}

// recordWritten reports whether a live change must write the member's record once its
// description is written: not when the record as it stands, read with the new description
// (Described), is already the record the step would write (Recorded). Where the description is
// not read, nothing would read the record that way, and it is written.
//
// Recorded is the record with the step's template revision and plan hash, no change in flight,
// no preservation, its own heal counts (unless the step resets them) and creation time, and the
// plan's preserved state; the revision and the hash stand for the template and the instance they
// are computed from. Comparing those fields spares a large group's plan two encodings and hashes
// of every member's record (TestLiveOp_writesOnlyWhatTheHostLacks checks it against Recorded).
func recordWritten(o Observed, st Step, op Operation) bool {
	if !op.Description || o.Description == nil || op.Mark || st.Preserve != nil || st.ResetHeals {
		return true
	}
	after := o
	after.Description = &st.Plan.Desired.Description
	next := Described(after, st.Revision, nil)
	return next.TemplateRevision != st.Revision || next.LastAppliedHash != st.Plan.Hash || next.InFlight != nil ||
		next.Preserved != "" || next.PreservedSince != 0 ||
		!samePreserved(next.PreservedFromPolicy, st.Plan.PreservedFromPolicy) || !samePreserved(next.PreservedFromConfig, st.Plan.PreservedFromConfig)
}

// samePreserved reports whether two preserved states keep the same disks and metadata.
func samePreserved(a, b PreservedState) bool {
	return maps.Equal(a.Disks, b.Disks) && maps.Equal(a.Metadata, b.Metadata)
}
