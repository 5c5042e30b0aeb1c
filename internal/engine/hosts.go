package engine

import "fmt"

// DefaultHost names the provider's own uri among a group's hosts: a group with no
// distribution_policy lives there, and a distribution_policy may list it beside host blocks.
const DefaultHost = "default"

// StatusUnknown is the status of a member whose host cannot be reached: nothing is known of it
// but where it lives.
const StatusUnknown = "UNKNOWN"

// HostList is the hosts the group spreads its members over, in the order the user wrote them.
func (g Group) HostList() []string {
	if len(g.Hosts) == 0 {
		return []string{DefaultHost}
	}
	return g.Hosts
}

// RecordHost is the host the group record is written to when the group is created: the first
// of its hosts. The record stays where it was made (see reconcile's record lookup).
func (g Group) RecordHost() string { return g.HostList()[0] }

// HostOf is the host a member lives on: "" is the default host.
func HostOf(host string) string {
	if host == "" {
		return DefaultHost
	}
	return host
}

// place gives each new member its host. A member the group placed before goes back to that
// host, whatever the distribution says now: its preserved disks are there, and a stateful
// member never moves. Every other one goes to the host of the group's list with the fewest
// members, the earliest in the list on a tie, so that the group stays evenly spread; so does
// one placed on a host the provider no longer has (see Env.Hosts). counts
// holds how many members each host keeps after the plan's deletions, and is updated.
func place(g Group, env Env, placed map[string]string, counts map[string]int, name string) string {
	if h, ok := placed[name]; ok && env.configured(h) {
		counts[h]++
		return h
	}
	hosts := g.HostList()
	best := hosts[0]
	for _, h := range hosts[1:] {
		if counts[h] < counts[best] {
			best = h
		}
	}
	counts[best]++
	return best
}

// unreachable is what the plan says of a member whose host cannot be reached.
func unreachable(host string) string {
	return fmt.Sprintf("host %q cannot be reached", HostOf(host))
}

// UnknownMember is a member whose host cannot be reached, as plans and reads show it: UNKNOWN,
// left as it is, and why.
func UnknownMember(o Observed) Member {
	return Member{Name: o.Name, Index: o.Index, Status: StatusUnknown, Revision: o.Instance.TemplateRevision, CurrentAction: "NONE",
		Planned: "NONE: " + unreachable(o.Host), Health: HealthUnknown, Host: HostOf(o.Host)}
}
