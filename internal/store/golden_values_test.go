package store

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

const captured = "testdata/v1/captured/"

// TestGolden_groupRecordValues reads key fields of captured group records as the engine sees them.
func TestGolden_groupRecordValues(t *testing.T) {
	t.Parallel()
	type view struct {
		Owner      string
		Leased     string
		Size       int
		Running    bool
		Hosts      []string
		Placement  map[string]string
		Policy     *engine.Policy
		Config     engine.ConfigEntry
		Released   bool
		Allowed    engine.Action
		AutoHeal   *engine.AutoHealing
		Preserving *engine.FailedPreservation
	}
	one := func(v view) view {
		v.Owner, v.Size, v.Running = "98f2bdaa703d55c3", 2, true
		v.Placement = map[string]string{"tfgold-one-1": "default", "tfgold-one-2": "default"}
		v.Policy = &engine.Policy{Disks: []engine.PolicyDisk{{DeviceName: "data", DeleteRule: engine.DeleteNever}}}
		v.Allowed = engine.ActionReplace
		v.AutoHeal = &engine.AutoHealing{InitialDelay: "300s", Backoff: "30s", MaxConsecutiveFailures: 3}
		v.Preserving = &engine.FailedPreservation{AutoPreserveFailedMax: 1, PreserveTimeout: "1h"}
		return v
	}
	wal := engine.ConfigEntry{
		Config: engine.InstanceConfig{
			Disks:    []engine.ConfigDisk{{DeviceName: "wal", Source: "tfgold-one-2-wal.qcow2", Mode: engine.ModeReadWrite, DeleteRule: engine.DeleteOnPermanentDeletion}},
			Metadata: map[string]string{"node-id": "2"},
		},
		MinimalAction: engine.ActionNone, MostDisruptiveAllowed: engine.ActionRefresh,
	}
	restart := wal
	restart.MostDisruptiveAllowed = engine.ActionRestart
	tests := map[string]struct {
		path string
		want view
	}{
		"several hosts, stopped": {
			path: captured + "2-scaled-in-metadata/group-tfgold-multi-h2-gen0000000007.secret.xml",
			want: view{Owner: "33c86ec123da42dd", Size: 3, Hosts: []string{"h2", "default", "h3"}, Allowed: engine.ActionReplace,
				Placement: map[string]string{"tfgold-multi-1": "h2", "tfgold-multi-2": "default", "tfgold-multi-3": "h3"}},
		},
		"scaled in, with a config": {
			path: captured + "2-scaled-in-metadata/group-tfgold-one-default-gen0000000014.secret.xml",
			want: one(view{Config: wal}),
		},
		"a lease held during a restart, the scale-in's release kept": {
			path: captured + "3-lease-held-in-flight/group-tfgold-one-default-gen0000000019.secret.xml",
			want: one(view{Leased: "root@vm, provider pid 5085, run 0043c635833c320d", Config: restart, Released: true}),
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			r := readGroup(t, tt.path)
			got := view{
				Size: r.Group.TargetSize, Running: r.Group.Running, Hosts: r.Group.Hosts, Placement: r.Placement, Policy: r.Policy,
				Config: r.Configs["tfgold-one-2"], Released: r.Released != nil, Allowed: r.Group.Policy.MostDisruptiveAllowed,
				AutoHeal: r.Group.AutoHealing, Preserving: r.Group.FailedPreservation,
			}
			if r.Owner != nil {
				got.Owner = r.Owner.ID
			}
			if r.Lease != nil {
				got.Leased = r.Lease.Holder
				if d := r.Lease.Expires.Sub(r.Lease.Since); d < 59*time.Second || d > 61*time.Second {
					t.Errorf("lease of %v", d)
				}
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +read):\n%s", diff)
			}
			if !r.Placed || len(r.Writes) == 0 || r.Writes[len(r.Writes)-1].Run == "" {
				t.Errorf("placed %v, writes %v", r.Placed, r.Writes)
			}
		})
	}
}

// TestGolden_memberRecordValues reads key fields of captured member records as the engine sees them.
func TestGolden_memberRecordValues(t *testing.T) {
	t.Parallel()
	type view struct {
		Group          string
		Index          int
		FromPolicy     []string
		FromConfig     engine.PreservedState
		Adopted        bool
		VCPU, InFlight int64
		InFlightAction engine.Action
		Created        bool
	}
	tests := map[string]struct {
		path string
		want view
	}{
		"a member with a config": {
			path: captured + "1-created/member-tfgold-one-2-default.xml",
			want: view{Group: "tfgold-one", Index: 2, FromPolicy: []string{"data"}, VCPU: 1, Created: true,
				FromConfig: engine.PreservedState{
					Disks:    map[string]engine.PreservedDisk{"wal": {DeviceName: "wal", Source: "tfgold-one-2-wal.qcow2", Mode: engine.ModeReadWrite, DeleteRule: engine.DeleteOnPermanentDeletion}},
					Metadata: map[string]string{"node-id": "2"},
				}},
		},
		"a restart in flight": {
			path: captured + "3-lease-held-in-flight/member-tfgold-one-1-default.xml",
			want: view{Group: "tfgold-one", Index: 1, FromPolicy: []string{"data"}, VCPU: 1, InFlight: 2, InFlightAction: engine.ActionRestart, Created: true},
		},
		"after the restart": {
			path: captured + "4-after-restart/member-tfgold-one-1-default.xml",
			want: view{Group: "tfgold-one", Index: 1, FromPolicy: []string{"data"}, VCPU: 2, Created: true},
		},
		"an adopted domain": {
			path: captured + "5-adopted/member-tfgold-legacy-default.xml",
			want: view{Group: "tfgold-one", Index: 0, Adopted: true, VCPU: 1},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			m := readMember(t, tt.path)
			mi := m.Instance
			got := view{Group: m.Group, Index: m.Index, FromConfig: mi.PreservedFromConfig, Adopted: mi.Template.Adopted,
				VCPU: mi.Current.VCPU, InFlightAction: mi.InFlightAction, Created: mi.Created > 0}
			for d := range mi.PreservedFromPolicy.Disks {
				got.FromPolicy = append(got.FromPolicy, d)
			}
			if mi.InFlight != nil {
				got.InFlight = mi.InFlight.VCPU
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Fatalf("(-want +read):\n%s", diff)
			}
		})
	}
}
