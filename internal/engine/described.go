package engine

import "maps"

// A change of the template's description alone is applied by writing the domain's description and
// nothing else: one libvirt call per member instead of two, which is half the time of such a
// change on a large group (libvirt saves the domain's definition on every metadata write). The
// member's record then still names the template from before the change, and Described is where
// that record is read as the template it now has. Whatever shows or plans from a record's
// description, template or revision reads it through Described, but for a listing made without
// the group's template (its record's host does not answer), which shows records as written.

// Described is the member's record as its domain's description brings it up to date. A record
// whose template differs from t by the description alone, on a domain that has t's description,
// stands for a member updated to t (revision rev): its template, revision, description and last
// applied hash are taken as t's. Anything else is returned as recorded; the plan takes the
// description from the host all the same (Drift), so a description the template does not ask for
// is written again.
func Described(o Observed, t Template, rev string) ManagedInstance {
	mi := o.Instance
	if o.Description == nil || *o.Description == mi.Template.Description || *o.Description != t.Description ||
		o.Unmanaged || mi.Template.Adopted || mi.InFlight != nil || mi.LastAppliedHash == "" {
		return mi
	}
	was := mi.Template
	was.Description = t.Description
	if was.Revision() != rev || mi.Current.Hash() != mi.LastAppliedHash {
		// The template differs by more than the description, or the record does not say
		// that the member was fully applied from it.
		return mi
	}
	cur := mi.Current
	cur.Description = t.Description
	mi.Current, mi.Template, mi.TemplateRevision, mi.LastAppliedHash = cur, was, rev, cur.Hash()
	return mi
}

// Recorded is the member's record once the step is done: the plan applied from the step's
// template, keeping when the domain was created and, unless the step starts them again, its heal
// counts.
func (s Step) Recorded() ManagedInstance {
	applied := s.Plan.Applied(s.Template)
	applied.Created = s.Current.Created
	if !s.ResetHeals {
		applied.Heals, applied.LastHeal = s.Current.Heals, s.Current.LastHeal
	}
	return applied
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
	rev := st.Revision
	if rev == "" {
		rev = st.Template.Revision()
	}
	after := o
	after.Description = &st.Plan.Desired.Description
	next := Described(after, st.Template, rev)
	return next.TemplateRevision != rev || next.LastAppliedHash != st.Plan.Hash || next.InFlight != nil ||
		next.Preserved != "" || next.PreservedSince != 0 ||
		!samePreserved(next.PreservedFromPolicy, st.Plan.PreservedFromPolicy) || !samePreserved(next.PreservedFromConfig, st.Plan.PreservedFromConfig)
}

// samePreserved reports whether two preserved states keep the same disks and metadata.
func samePreserved(a, b PreservedState) bool {
	return maps.Equal(a.Disks, b.Disks) && maps.Equal(a.Metadata, b.Metadata)
}
