package provider

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestSettled_keepRetained: the members a plan keeps a retained state for are those a config
// named when the refresh it is made from read the record, and only a refresh's marker names any.
func TestSettled_keepRetained(t *testing.T) {
	t.Parallel()
	read := settled{Read: true, Configured: configuredMembers(engine.GroupState{Configs: map[string]engine.ConfigEntry{"db-2": {}, "db-1": {}}})}
	tests := map[string]struct {
		marker settled
		want   map[string]bool
	}{
		"a refresh's marker: the members configured then": {read, map[string]bool{"db-1": true, "db-2": true}},
		"an apply's marker: none":                         {settled{Spec: "x", Configured: []string{"db-1"}}, nil},
		"a refresh of a group without configs: none":      {settled{Read: true}, nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if diff := cmp.Diff(tt.want, tt.marker.keepRetained()); diff != "" {
				t.Errorf("keepRetained (-want +got):\n%s", diff)
			}
		})
	}
	if diff := cmp.Diff([]string{"db-1", "db-2"}, read.Configured); diff != "" {
		t.Errorf("configured members, sorted (-want +got):\n%s", diff)
	}
}
