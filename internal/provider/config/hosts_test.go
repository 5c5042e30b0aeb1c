package config

import (
	"errors"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/reconcile"
)

// TestConfigHosts: a config's sources are checked on its member's host, where it is or where the
// plan creates it; for a member not placed yet, on every host of the group; never on a host that
// does not answer.
func TestConfigHosts(t *testing.T) {
	s := engine.GroupState{Group: engine.Group{Name: "db", Base: "db", Hosts: []string{"default", "h2", "h3"}},
		Placement: map[string]string{"db-1": "h2", "db-3": "h3"}}
	p := engine.GroupPlan{Placement: map[string]string{"db-1": "h2", "db-2": "h3", "db-3": "h3"}}
	up := reconcile.Observation{}
	h3Down := reconcile.Observation{Down: map[string]error{"h3": errors.New("connection refused")}}
	cases := map[string]struct {
		name string
		o    reconcile.Observation
		want string
	}{
		"a member where it is":            {"db-1", up, "h2"},
		"a member the plan creates":       {"db-2", up, "h3"},
		"a config that waits":             {"db-9", up, "default h2 h3"},
		"a member on a host that is down": {"db-3", h3Down, ""},
		"a config that waits, h3 down":    {"db-9", h3Down, "default h2"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			if got := strings.Join(configHosts(s, p, c.o, c.name), " "); got != c.want {
				t.Fatalf("got %q, want %q", got, c.want)
			}
		})
	}
}
