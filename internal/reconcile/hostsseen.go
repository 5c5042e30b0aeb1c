package reconcile

import (
	"context"
	"fmt"
	"slices"
	"sort"
)

// One `terraform apply` plans a group twice, in two provider processes: the plan the user
// approves, after the refresh (Read), and the plan Terraform asks for again just before the
// change (the "final plan"), which must not contradict a value the first one knew. Which hosts
// answer decides much of a plan: a member of a host that does not answer is UNKNOWN and waits, a
// drained host's members move only to a host that answers, and a move is live only between two
// hosts whose UUIDs were read. A host that stalled at the refresh and answers moments later
// made the final plan differ (issue 43, the wire chaos's trials 31 and 51: "Provider produced
// inconsistent final plan"). So the refresh keeps which hosts it saw (HostsSeen, in the state's
// private data), and the plans made from that refresh see the hosts as it saw them (WithHostsSeen):
// a host down then is down for them, and a move is live only between the hosts whose UUIDs it
// read. The next refresh reads the hosts anew.

// HostsSeen is what a refresh found of the group's hosts.
type HostsSeen struct {
	// Down are the hosts that did not answer, with why.
	Down map[string]string
	// UUIDs are the hosts' UUIDs the refresh read (Observation.HostUUIDs); nil for a group on
	// one host.
	UUIDs map[string]string
	// UUIDsRead says the refresh read the hosts' UUIDs (a group on several hosts): a host of
	// Read whose UUID UUIDs lacks did not give it. A refresh of a group on one host reads none,
	// and a plan that adds hosts to it reads them all.
	UUIDsRead bool
	// Read are the hosts the refresh read, whether they answered or not. A host it did not read
	// (added to the group's hosts by the configuration being planned) is read by each plan:
	// nothing of it is kept, and a plan that depends on its answer has `instances` known after
	// apply (the provider's unsettledHosts).
	Read []string
}

// SeenOf is what observation o found of its hosts.
func SeenOf(o Observation) HostsSeen {
	var down map[string]string
	for h, err := range o.Down {
		if down == nil {
			down = map[string]string{}
		}
		down[h] = err.Error()
	}
	var uuids map[string]string
	if o.HostUUIDs != nil {
		uuids = make(map[string]string, len(o.HostUUIDs))
		for h, id := range o.HostUUIDs {
			uuids[h] = id
		}
	}
	return HostsSeen{Down: down, UUIDs: uuids, UUIDsRead: o.HostUUIDs != nil, Read: slices.Clone(o.Read)}
}

// KeepsUUID reports whether what the refresh found of host h's UUID holds for the plans made
// from it: it read h, and the UUIDs of the group's hosts.
func (h *HostsSeen) KeepsUUID(host string) bool { return h.covers(host) && h.UUIDsRead }

// Covers reports whether the refresh read host h: what it saw of h holds for the plans made from
// it. A nil HostsSeen covers nothing.
func (h *HostsSeen) Covers(host string) bool { return h.covers(host) }

func (h *HostsSeen) covers(host string) bool {
	return h != nil && slices.Contains(h.Read, host)
}

// uuidsUnread are the hosts of hosts whose UUID the refresh did not read.
func (h *HostsSeen) uuidsUnread(hosts []string) []string {
	var out []string
	for _, n := range hosts {
		if !h.KeepsUUID(n) {
			out = append(out, n)
		}
	}
	return out
}

// DownHosts are the hosts seen down, sorted.
func (h HostsSeen) DownHosts() []string {
	out := make([]string, 0, len(h.Down))
	for n := range h.Down {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// SeenDownError is a host that the refresh this plan is made from saw down: the plan sees it so
// too, though it may answer now, so that it plans what that refresh's plan showed.
type SeenDownError struct {
	Host string
	// Why is why the refresh saw it down.
	Why string
}

func (e *SeenDownError) Error() string {
	return fmt.Sprintf("host %s did not answer when this plan's refresh read it (%s); it is read again at the next refresh", e.Host, e.Why)
}

type hostsSeenKey struct{}

// WithHostsSeen makes the observations made under ctx see the group's hosts as seen says: a
// host down then is not read and is down, and the hosts' UUIDs are seen's, not read.
func WithHostsSeen(ctx context.Context, seen HostsSeen) context.Context {
	return context.WithValue(ctx, hostsSeenKey{}, &seen)
}

// hostsSeen is what WithHostsSeen gave ctx; nil when nothing.
func hostsSeen(ctx context.Context) *HostsSeen {
	s, _ := ctx.Value(hostsSeenKey{}).(*HostsSeen)
	return s
}

// down reports whether host h was seen down, and why; never for a nil HostsSeen.
func (h *HostsSeen) down(host string) (string, bool) {
	if h == nil {
		return "", false
	}
	why, ok := h.Down[host]
	return why, ok
}

// uuidsOf are the seen UUIDs of hosts that are not down, as hostUUIDs returns them: nil for a
// group on one host, and a host whose UUID was not read is left out (its moves are cold).
func (h *HostsSeen) uuidsOf(hosts []string, down map[string]error) map[string]string {
	if len(hosts) < 2 {
		return nil
	}
	out := map[string]string{}
	for _, n := range hosts {
		if _, isDown := down[n]; isDown || !h.KeepsUUID(n) {
			continue
		}
		if id := h.UUIDs[n]; id != "" {
			out[n] = id
		}
	}
	return out
}
