package engine

// Listed is a domain as a host's listing shows it, with what membership depends on: its name,
// the host it is on, and what its member record says, if it has one.
type Listed struct {
	Name string
	Host string
	// Recorded is true when the domain carries a member record (a provider created it);
	// Group and Index are then the record's.
	Recorded bool
	Group    string
	Index    int
	// Adopted is true when the domain carries a virt_domain resource's adoption record: a
	// domain another Terraform state manages alone. No group adopts it; its name is taken.
	Adopted bool
	// MoveTo is the target host of the move the record carries; "" when none.
	MoveTo string
	// UUID is the domain's libvirt UUID: what identity by the group record reads
	// (HoldsIdentity) where the record holds members' UUIDs.
	UUID string
}

// moveTarget reports whether the listed domain is the copy a move defined on its target: the
// member, whatever copy its source still has (see MoveFinish).
func (s GroupState) moveTarget(l Listed) bool {
	return l.Recorded && l.Group == s.Group.Name && l.MoveTo != "" && HostOf(l.MoveTo) == HostOf(l.Host)
}

// Membership is how a listed domain stands to a group.
type Membership int

// Memberships of a listed domain.
const (
	// MembershipForeign: no provider created the domain and no config of the group names it;
	// it is none of the group's business.
	MembershipForeign Membership = iota
	// MembershipManaged: the domain carries the group's record; it is a member.
	MembershipManaged
	// MembershipAdopted: no provider created the domain, and one of the group's configs names
	// it or the group adopts domains under its members' names (adopt_existing); it is a member
	// to adopt.
	MembershipAdopted
	// MembershipDuplicate: a domain of the same name is a member on a host earlier in the
	// group's order; this one is left alone.
	MembershipDuplicate
	// MembershipMisnamed: the domain carries the group's record for an index whose name is not
	// the domain's (a copy renamed behind the provider's back, say); it is left alone, so
	// that two domains never claim one index.
	MembershipMisnamed
	// MembershipOtherGroup: the domain carries another group's record, or a virt_domain
	// resource's adoption record (Listed.Adopted); its name is taken.
	MembershipOtherGroup
	// MembershipRecordLost: the domain carries no record, and the group record holds it as a
	// member (HoldsIdentity): it is that member, whose record was removed by hand and is
	// written back (LostRecord).
	MembershipRecordLost
)

var membershipNames = [...]string{"FOREIGN", "MANAGED", "ADOPTED", "DUPLICATE", "MISNAMED", "OTHER_GROUP", "RECORD_LOST"}

func (m Membership) String() string {
	if m < 0 || int(m) >= len(membershipNames) {
		return "UNKNOWN"
	}
	return membershipNames[m]
}

// Member reports whether the domain is one of the group's members (managed or to adopt).
func (m Membership) Member() bool {
	return m == MembershipManaged || m == MembershipAdopted || m == MembershipRecordLost
}

// Classified is a listed domain's membership, with the member's index: the record's for a
// managed member, the name's in the "<base>-<i>" scheme for one to adopt (0 for a named member).
type Classified struct {
	Membership Membership
	Index      int
}

// Classify decides which domains of a listing are the group's members. The listing is every
// host's domains, host by host in the group's order (the order Observe lists them in): when two
// hosts have a member of one name, the first host's is the member and the other a duplicate, but
// that the copy a move defined on its target is the member wherever its host is listed. A
// group read without its record (its record's host is down) has no base name, and trusts every
// record that names it.
func (s GroupState) Classify(listing []Listed) []Classified {
	out := make([]Classified, len(listing))
	members := map[string]bool{}
	// A move's target copy is the member before any other copy of its name is looked at.
	for _, l := range listing {
		if s.moveTarget(l) {
			members[l.Name] = true
		}
	}
	for i, l := range listing {
		c := &out[i]
		switch {
		case members[l.Name] && !s.moveTarget(l):
			c.Membership = MembershipDuplicate
		case l.Recorded && l.Group == s.Group.Name:
			if l.Index > 0 && s.Group.Base != "" && l.Name != InstanceName(s.Group.Base, l.Index) {
				c.Membership = MembershipMisnamed
				continue
			}
			c.Membership, c.Index = MembershipManaged, l.Index
		case l.Recorded || l.Adopted:
			c.Membership = MembershipOtherGroup
		case s.HoldsIdentity(l):
			// The group record's word over the domain's metadata: its member, record lost.
			index, _ := ParseInstanceIndex(s.Group.Base, l.Name)
			c.Membership, c.Index = MembershipRecordLost, index
		default:
			// No provider created it: a member to adopt when a config names it, or when the
			// group adopts domains under its members' names (adopt_existing).
			index, inScheme := ParseInstanceIndex(s.Group.Base, l.Name)
			_, configured := s.Configs[l.Name]
			if adopts := inScheme && s.Group.AdoptsByName(l.Name, index); !configured && !adopts {
				continue
			}
			c.Membership = MembershipAdopted
			c.Index = index
		}
		if c.Membership.Member() {
			members[l.Name] = true
		}
	}
	return out
}
