package group

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/hashicorp/terraform-plugin-framework/diag"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// unsettledHosts names the hosts whose answer the plan depends on when nothing keeps that answer
// for the apply's final plan: those down, and those whose UUID a cold move lacks. With the hosts
// the refresh saw kept (pinned), the final plan sees them so too: none.
func TestUnsettledHosts(t *testing.T) {
	t.Parallel()
	cold := func(from, to string) engine.MemberMove {
		return engine.MemberMove{Name: "db-1", Move: engine.Move{From: from, To: to}, Phase: engine.MoveStart}
	}
	both := map[string]string{"default": "a", "h2": "b"}
	cases := map[string]struct {
		p      engine.GroupPlan
		o      reconcile.Observation
		pinned bool
		seen   *reconcile.HostsSeen
		want   []string
	}{
		"every host answered, UUIDs read": {
			p: engine.GroupPlan{Moves: []engine.MemberMove{cold("h2", "default")}}, o: reconcile.Observation{HostUUIDs: both},
			want: []string{},
		},
		"h2 down": {
			o:    reconcile.Observation{Down: map[string]error{"h2": errors.New("no answer")}, HostUUIDs: map[string]string{"default": "a"}},
			want: []string{"h2"},
		},
		"h2 down, hosts kept from the refresh": {
			o:      reconcile.Observation{Down: map[string]error{"h2": errors.New("no answer")}},
			pinned: true,
			seen:   &reconcile.HostsSeen{Down: map[string]string{"h2": "no answer"}, Read: []string{"default", "h2"}},
			want:   []string{},
		},
		"hosts kept from the refresh, h3 added since: read by the plan, and its UUID unread": {
			p:      engine.GroupPlan{Moves: []engine.MemberMove{cold("default", "h3")}},
			o:      reconcile.Observation{HostUUIDs: map[string]string{"default": "a"}},
			pinned: true,
			seen:   &reconcile.HostsSeen{UUIDs: map[string]string{"default": "a"}, Read: []string{"default"}, UUIDsRead: true},
			want:   []string{"h3"},
		},
		"hosts kept from a refresh of the group on one host (no UUIDs), a cold move to h3 added since": {
			p:      engine.GroupPlan{Moves: []engine.MemberMove{cold("default", "h3")}},
			o:      reconcile.Observation{HostUUIDs: map[string]string{}},
			pinned: true,
			seen:   &reconcile.HostsSeen{Read: []string{"default"}},
			want:   []string{"default", "h3"},
		},
		"hosts kept from the refresh, h3 added since and down": {
			o:      reconcile.Observation{Down: map[string]error{"h3": errors.New("no answer")}},
			pinned: true,
			seen:   &reconcile.HostsSeen{Read: []string{"default", "h2"}},
			want:   []string{"h3"},
		},
		"a cold move to a host whose UUID was not read": {
			p: engine.GroupPlan{Moves: []engine.MemberMove{cold("default", "h2")}}, o: reconcile.Observation{HostUUIDs: map[string]string{"default": "a"}},
			want: []string{"h2"},
		},
		"a live move, a move's end: no UUID decides them": {
			p: engine.GroupPlan{Moves: []engine.MemberMove{
				{Name: "db-1", Move: engine.Move{From: "default", To: "h2", Live: true}, Phase: engine.MoveStart},
				{Name: "db-2", Move: engine.Move{From: "default", To: "h2"}, Phase: engine.MoveFinish},
			}},
			o:    reconcile.Observation{HostUUIDs: map[string]string{}},
			want: []string{},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, unsettledHosts(c.p, c.o, c.pinned, c.seen)); d != "" {
				t.Errorf("unsettledHosts (-want +got):\n%s", d)
			}
		})
	}
}

// The hosts a refresh saw travel in the private state to the apply's plan, in another process; a
// marker written before they were kept has none, and its plans read the hosts as they are.
func TestSettled_keepsTheHostsSeen(t *testing.T) {
	t.Parallel()
	seen := reconcile.HostsSeen{Down: map[string]string{"h2": "host h2 did not answer within 5s"}, UUIDs: map[string]string{"default": "a"}}
	cases := map[string]struct {
		stored   []byte
		want     reconcile.HostsSeen
		wantKept bool
	}{
		"kept by a refresh": {
			stored:   []byte(mustJSON(t, settled{Read: true, Hosts: hostsSeenRowOf(seen)})),
			want:     seen,
			wantKept: true,
		},
		"every host answered": {
			stored:   []byte(mustJSON(t, settled{Read: true, Hosts: hostsSeenRowOf(reconcile.HostsSeen{})})),
			wantKept: true,
		},
		"a marker from before": {stored: []byte(`{"spec":"","read":true,"generation":3}`)},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var d diag.Diagnostics
			got, kept := readSettled(context.Background(), privateBytes(c.stored), &d).seen()
			if d.HasError() {
				t.Fatal(d)
			}
			if kept != c.wantKept {
				t.Errorf("kept %v, want %v", kept, c.wantKept)
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("hosts seen (-want +got):\n%s", diff)
			}
		})
	}
}

// privateBytes is a private state that holds b under the settled key.
type privateBytes []byte

func (p privateBytes) GetKey(_ context.Context, key string) ([]byte, diag.Diagnostics) {
	if key != privateSettledKey {
		return nil, nil
	}
	return p, nil
}
