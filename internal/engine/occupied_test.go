package engine

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestGroup_Occupied(t *testing.T) {
	t.Parallel()
	g := group(2)
	adopting := g
	adopting.AdoptExisting = true
	abandoning := g
	abandoning.Abandon = []string{"db-1"}
	hand := func(name string) Listed { return Listed{Name: name, Host: DefaultHost} }
	cases := map[string]struct {
		group   Group
		listing []Listed
		want    error
	}{
		"nothing there": {g, nil, nil},
		"hand-made domains under the members' names: one error naming them and both ways in": {g,
			[]Listed{hand("db-2"), hand("db-1"), hand("db-3"), hand("dbx")},
			&NamesHeldError{Group: "db", Base: "db", Domains: []string{"db-1", "db-2"}}},
		"adopt_existing takes them": {adopting, []Listed{hand("db-1"), hand("db-2"), hand("db-3")}, nil},
		"an abandoned name is not created, the next one is": {abandoning, []Listed{hand("db-1"), hand("db-3")},
			&NamesHeldError{Group: "db", Base: "db", Domains: []string{"db-3"}}},
		"members carrying the group's record: it exists, import it": {adopting,
			[]Listed{{Name: "db-1", Host: DefaultHost, Recorded: true, Group: "db", Index: 1}, hand("db-2")},
			&ExistsError{Group: "db", Why: "domains db-1 are its members, though it has no group record"}},
		"another group's members are never adopted": {adopting,
			[]Listed{{Name: "db-1", Host: DefaultHost, Recorded: true, Group: "web", Index: 1}},
			&NamesTakenError{Group: "db", Domains: []string{"db-1 (a member of group web)"}}},
		"a domain a virt_domain resource adopted is never adopted": {adopting,
			[]Listed{{Name: "db-1", Host: DefaultHost, Adopted: true}, hand("db-2")},
			&NamesTakenError{Group: "db", Domains: []string{"db-1 (adopted by a virt_domain resource)"}}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, c.group.Occupied(c.listing)); d != "" {
				t.Errorf("Occupied (-want +got):\n%s", d)
			}
		})
	}
}

func TestNamesHeldError_namesBothWaysIn(t *testing.T) {
	t.Parallel()
	msg := (&NamesHeldError{Group: "uxdb", Base: "uxdb", Domains: []string{"uxdb-1", "uxdb-2"}}).Error()
	for _, want := range []string{"uxdb-1, uxdb-2", "adopt_existing = true", "another base_instance_name"} {
		if !strings.Contains(msg, want) {
			t.Errorf("%q does not say %q", msg, want)
		}
	}
	if strings.Contains(msg, "terraform import") {
		t.Errorf("%q sends the user to import a group that does not exist", msg)
	}
}

func TestGroup_Adopts(t *testing.T) {
	t.Parallel()
	g := group(2)
	g.AdoptExisting = true
	listing := []Listed{{Name: "db-1"}, {Name: "db-2", Recorded: true, Group: "web"}, {Name: "db-3"}, {Name: "db-1", Host: "h2"}}
	if d := cmp.Diff([]string{"db-1"}, g.Adopts(listing)); d != "" {
		t.Errorf("Adopts (-want +got):\n%s", d)
	}
	g.AdoptExisting = false
	if got := g.Adopts(listing); got != nil {
		t.Errorf("without adopt_existing, Adopts = %v", got)
	}
}
