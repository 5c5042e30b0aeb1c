package engine

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroupState_Classify(t *testing.T) {
	t.Parallel()
	group := GroupState{Group: Group{Name: "db", Base: "db"}, Configs: map[string]ConfigEntry{"legacy": {}, "db-7": {}}}
	noRecord := group
	noRecord.Group.Base = "" // read while the record's host is down
	adopting := group
	adopting.Group.AdoptExisting, adopting.Group.TargetSize, adopting.Group.Abandon = true, 3, []string{"db-2"}
	placed := group
	placed.Placement, placed.Placed = map[string]string{"db-1": "default", "db-2": "h2", "named": "default"}, true
	// The inventory holds db-1's domain by UUID (and db-3's, which no placement names).
	inventoried := placed
	inventoried.Inventory = Inventory{Kept: true, Items: []Made{
		{Kind: MadeDomain, Host: DefaultHost, Name: "db-1", UUID: "uuid-1", Confirmed: true},
		{Kind: MadeDomain, Host: DefaultHost, Name: "db-3", UUID: "uuid-3", Confirmed: true},
	}}
	placedCreating := placed
	placedCreating.Creating = []string{"db-1"}
	placedCreating.Group.Abandon = []string{"db-2"}
	member := func(name, host string, index int) Listed {
		return Listed{Name: name, Host: host, Recorded: true, Group: "db", Index: index}
	}
	cases := map[string]struct {
		state   GroupState
		listing []Listed
		want    []Classified
	}{
		"nothing listed": {group, nil, []Classified{}},
		"members by their record": {group,
			[]Listed{member("db-1", "default", 1), member("db-2", "h2", 2), member("named", "default", 0)},
			[]Classified{{MembershipManaged, 1}, {MembershipManaged, 2}, {MembershipManaged, 0}}},
		"a domain no config names is not the group's": {group,
			[]Listed{{Name: "db-3", Host: "default"}},
			[]Classified{{MembershipForeign, 0}}},
		"domains the configs name are adopted, with the index of their name": {group,
			[]Listed{{Name: "legacy", Host: "default"}, {Name: "db-7", Host: "default"}},
			[]Classified{{MembershipAdopted, 0}, {MembershipAdopted, 7}}},
		"another group's record takes the name": {group,
			[]Listed{{Name: "legacy", Host: "default", Recorded: true, Group: "web", Index: 0}},
			[]Classified{{MembershipOtherGroup, 0}}},
		"a record for another index's name is left alone": {group,
			[]Listed{member("db-9", "default", 2), member("db-2", "default", 2)},
			[]Classified{{MembershipMisnamed, 0}, {MembershipManaged, 2}}},
		"without a base name every record of the group is trusted": {noRecord,
			[]Listed{member("db-9", "default", 2)},
			[]Classified{{MembershipManaged, 2}}},
		"the first host in the group's order has the member": {group,
			[]Listed{member("db-1", "default", 1), member("db-1", "h2", 1)},
			[]Classified{{MembershipManaged, 1}, {MembershipDuplicate, 0}}},
		"a later host's other domain of a member's name is a duplicate, not a claim": {group,
			[]Listed{member("db-1", "default", 1), {Name: "db-1", Host: "h2", Recorded: true, Group: "web"}},
			[]Classified{{MembershipManaged, 1}, {MembershipDuplicate, 0}}},
		"a name that is not a member on the first host can be one on the next": {group,
			[]Listed{{Name: "db-1", Host: "default"}, member("db-9", "default", 1), member("db-1", "h2", 1)},
			[]Classified{{MembershipForeign, 0}, {MembershipMisnamed, 0}, {MembershipManaged, 1}}},
		"adopt_existing adopts the names the size reaches, abandoned ones skipped and not adopted": {adopting,
			[]Listed{{Name: "db-1", Host: "default"}, {Name: "db-2", Host: "default"}, {Name: "db-3", Host: "default"}, {Name: "db-4", Host: "default"}, {Name: "db-5", Host: "default"}, {Name: "other", Host: "default"}},
			[]Classified{{MembershipAdopted, 1}, {MembershipForeign, 0}, {MembershipAdopted, 3}, {MembershipAdopted, 4}, {MembershipForeign, 0}, {MembershipForeign, 0}}},
		"adopt_existing never adopts another group's member": {adopting,
			[]Listed{{Name: "db-1", Host: "default", Recorded: true, Group: "web", Index: 1}},
			[]Classified{{MembershipOtherGroup, 0}}},
		"an abandoned member still carrying its record is a member until the abandonment runs": {adopting,
			[]Listed{member("db-2", "default", 2)},
			[]Classified{{MembershipManaged, 2}}},
		"a domain a virt_domain resource adopted is neither adopted by adopt_existing nor by a config": {adopting,
			[]Listed{{Name: "db-1", Host: "default", Adopted: true}, {Name: "legacy", Host: "default", Adopted: true}},
			[]Classified{{MembershipOtherGroup, 0}, {MembershipOtherGroup, 0}}},
		"a placed domain without a record is the member whose record was lost": {placed,
			[]Listed{{Name: "db-1", Host: "default"}, {Name: "db-2", Host: "h2"}, {Name: "named", Host: "default"}},
			[]Classified{{MembershipRecordLost, 1}, {MembershipRecordLost, 2}, {MembershipRecordLost, 0}}},
		"the inventory's UUID decides who lost its record: the same name with another UUID is a stranger": {inventoried,
			[]Listed{{Name: "db-1", Host: "default", UUID: "uuid-other"}, {Name: "db-3", Host: "default", UUID: "uuid-3"}, {Name: "db-2", Host: "h2", UUID: "any"}},
			[]Classified{{MembershipForeign, 0}, {MembershipRecordLost, 3}, {MembershipRecordLost, 2}}},
		"the inventory's UUID holds the member that lost its record": {inventoried,
			[]Listed{{Name: "db-1", Host: "default", UUID: "uuid-1"}},
			[]Classified{{MembershipRecordLost, 1}}},
		"a placed name on another host than its placement's is not held": {placed,
			[]Listed{{Name: "db-2", Host: "default"}},
			[]Classified{{MembershipForeign, 0}}},
		"a placed name another group's record or a virt_domain holds stays theirs": {placed,
			[]Listed{{Name: "db-1", Host: "default", Recorded: true, Group: "web", Index: 1}, {Name: "db-2", Host: "h2", Adopted: true}},
			[]Classified{{MembershipOtherGroup, 0}, {MembershipOtherGroup, 0}}},
		"a member being created, or abandoned, is not held without its record": {placedCreating,
			[]Listed{{Name: "db-1", Host: "default"}, {Name: "db-2", Host: "h2"}},
			[]Classified{{MembershipForeign, 0}, {MembershipForeign, 0}}},
		"a recorded member stays managed beside one that lost its record": {placed,
			[]Listed{member("db-1", "default", 1), {Name: "db-2", Host: "h2"}},
			[]Classified{{MembershipManaged, 1}, {MembershipRecordLost, 2}}},
		"an adopted domain on two hosts is adopted once": {group,
			[]Listed{{Name: "legacy", Host: "default"}, {Name: "legacy", Host: "h2"}},
			[]Classified{{MembershipAdopted, 0}, {MembershipDuplicate, 0}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, c.state.Classify(c.listing)); d != "" {
				t.Errorf("Classify (-want +got):\n%s", d)
			}
		})
	}
}

func TestMembership_String(t *testing.T) {
	t.Parallel()
	got := map[Membership]string{}
	for m := MembershipForeign; m <= MembershipRecordLost+1; m++ {
		got[m] = m.String()
	}
	want := map[Membership]string{MembershipForeign: "FOREIGN", MembershipManaged: "MANAGED", MembershipAdopted: "ADOPTED",
		MembershipDuplicate: "DUPLICATE", MembershipMisnamed: "MISNAMED", MembershipOtherGroup: "OTHER_GROUP",
		MembershipRecordLost: "RECORD_LOST", MembershipRecordLost + 1: "UNKNOWN"}
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("String (-want +got):\n%s", d)
	}
}
