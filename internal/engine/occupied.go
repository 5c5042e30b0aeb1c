package engine

import (
	"fmt"
	"slices"
	"strings"
)

// NamesHeldError refuses a group whose members' names ("<base>-<index>") are held by domains no
// provider created, when the group does not adopt them (adopt_existing): there is no group to
// import, so the two ways in are to adopt the domains or to choose other names.
type NamesHeldError struct {
	Group string
	Base  string
	// Domains are the domains in the way, by name.
	Domains []string
}

func (e *NamesHeldError) Error() string {
	return fmt.Sprintf("domains %s, which no provider created, have the names group %s's members would get (%s-<index>). Nothing was changed. Either set adopt_existing = true on the group to take them as its members (each keeps its UUID, disks and power state, and only live changes reach it), or choose another base_instance_name (or name) so that the members get other names",
		strings.Join(e.Domains, ", "), e.Group, e.Base)
}

// NamesTakenError is returned when another group's members have the names a new group's
// members would get.
type NamesTakenError struct {
	Group   string
	Domains []string
}

func (e *NamesTakenError) Error() string {
	return fmt.Sprintf("group %s cannot be created: domains %s have the names its members would get. Nothing was changed. Choose another base_instance_name (or name)",
		e.Group, strings.Join(e.Domains, ", "))
}

// Occupied tells whether the domains listed under the group's "<base>-" names take the place of
// the new group g, which has no record: an *ExistsError for domains that carry g's record
// (members left without their group record: import the group); a *NamesHeldError for domains
// no provider created under the names g's members would get, unless g adopts them
// (adopt_existing); a *NamesTakenError for another group's members under its names. nil when
// the place is free.
func (g Group) Occupied(listing []Listed) error {
	var members, held, others []string
	for _, l := range listing {
		index, inScheme := ParseInstanceIndex(g.Base, l.Name)
		switch {
		case l.Recorded && l.Group == g.Name:
			members = append(members, l.Name)
		case !inScheme:
		case l.Adopted && !l.Recorded:
			others = append(others, fmt.Sprintf("%s (adopted by a virt_domain resource)", l.Name))
		case !l.Recorded:
			if !g.AdoptsByName(l.Name, index) && g.hasRoomFor(l.Name, index) {
				held = append(held, l.Name)
			}
		default:
			others = append(others, fmt.Sprintf("%s (a member of group %s)", l.Name, l.Group))
		}
	}
	// Hosts list domains in their own order: the words name them by index.
	g.byIndex(held)
	switch {
	case len(members) > 0:
		return &ExistsError{Group: g.Name, Why: fmt.Sprintf("domains %s are its members, though it has no group record", strings.Join(members, ", "))}
	case len(held) > 0:
		return &NamesHeldError{Group: g.Name, Base: g.Base, Domains: held}
	case len(others) > 0:
		return &NamesTakenError{Group: g.Name, Domains: others}
	}
	return nil
}

// Adopts lists, of the domains listed under the group's names, those it adopts by their names
// (adopt_existing): domains no provider created whose names it has room for.
func (g Group) Adopts(listing []Listed) []string {
	var out []string
	for _, l := range listing {
		if index, ok := ParseInstanceIndex(g.Base, l.Name); ok && !l.Recorded && g.AdoptsByName(l.Name, index) && !slices.Contains(out, l.Name) {
			out = append(out, l.Name)
		}
	}
	g.byIndex(out)
	return out
}

// byIndex sorts names of the group's scheme by their index.
func (g Group) byIndex(names []string) {
	slices.SortFunc(names, func(a, b string) int {
		i, _ := ParseInstanceIndex(g.Base, a)
		j, _ := ParseInstanceIndex(g.Base, b)
		return i - j
	})
}
