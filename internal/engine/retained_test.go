package engine

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestPlanGroup_retainedConfigState: a member whose config was destroyed with
// remove_instance_state_on_destroy = false keeps what the config gave it until it changes for
// another reason, which takes that state away in the same change and says so.
func TestPlanGroup_retainedConfigState(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)
	cfg := InstanceConfig{
		Disks:    []ConfigDisk{{DeviceName: "extra", Source: "db-1-extra-user.qcow2"}},
		Metadata: map[string]string{"node-id": "7"},
	}
	// member is db-1 as the config left it, with db-2 beside it as the template made it.
	member := func() []Observed {
		obs := observed(base(), StatusRunning, 1, 2)
		obs[0].Instance = built("db-1", base(), Policy{}, cfg)
		return obs
	}
	kept := `NONE`
	dropped := " (" + RetainedReason + ")"
	tests := []struct {
		name string
		// change edits the group, the record and what is observed from the state the config left.
		change  func(g *Group, s *GroupState, obs []Observed)
		planned string // db-1's planned action
		// keeps says whether db-1's record after the plan still carries the config's disk.
		keeps bool
	}{
		{"nothing else changes: nothing is planned",
			func(*Group, *GroupState, []Observed) {}, kept, true},
		{"without the retention (remove_instance_state_on_destroy = true, its apply failed) the state is removed",
			func(_ *Group, s *GroupState, _ []Observed) { s.Retained = nil },
			"REFRESH: disk extra detached, metadata node-id removed", false},
		{"a template change that reaches the member takes the state with it",
			func(g *Group, _ *GroupState, _ []Observed) { g.Template.Metadata = map[string]string{"role": "web"} },
			"REFRESH: metadata role changed, disk extra detached" + dropped + ", metadata node-id removed" + dropped, false},
		{"a restart takes it too",
			func(g *Group, _ *GroupState, _ []Observed) { g.Template.VCPU = 2 },
			"RESTART: vcpu 1 -> 2, disk extra detached" + dropped + ", metadata node-id removed" + dropped, false},
		{"a change of labels alone (NONE) takes it under the group's bounds",
			func(g *Group, _ *GroupState, _ []Observed) { g.Template.Labels = map[string]string{"team": "b"} },
			"REFRESH: labels, disk extra detached" + dropped + ", metadata node-id removed" + dropped, false},
		{"bounds that forbid the removal keep the state and let the change through",
			func(g *Group, _ *GroupState, _ []Observed) {
				g.Template.Labels = map[string]string{"team": "b"}
				g.Policy.MostDisruptiveAllowed = ActionNone
			},
			"NONE: labels", true},
		{"a new config for the member wins over what the old one left",
			func(_ *Group, s *GroupState, _ []Observed) {
				s.Configs = map[string]ConfigEntry{"db-1": {Config: InstanceConfig{Metadata: map[string]string{"node-id": "8"}}, MinimalAction: ActionNone, MostDisruptiveAllowed: ActionReplace}}
			},
			"REFRESH: disk extra detached, metadata node-id changed", false},
		{"an entry left after the member lost the state puts nothing back",
			func(_ *Group, _ *GroupState, obs []Observed) {
				obs[0].Instance = built("db-1", base(), Policy{}, InstanceConfig{})
			},
			kept, false},
		{"a power change alone keeps the state",
			func(g *Group, _ *GroupState, _ []Observed) { g.Running = false },
			"STOP", true},
		{"autoheal's replacement takes it",
			func(g *Group, _ *GroupState, obs []Observed) {
				g.AutoHealing = &AutoHealing{InitialDelay: "0s", Backoff: "60s", MaxConsecutiveFailures: 2}
				obs[0].Status, obs[0].StateReason = StatusStopped, StateReasonCrashed
			},
			"REPLACE: autoheal (shut off (crashed)), disk extra detached" + dropped + ", metadata node-id removed" + dropped + "; then START", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := group(2)
			s := state(g)
			s.Retain("db-1")
			obs := member()
			tt.change(&s.Group, &s, obs)
			p := PlanGroup(s, obs, Env{Now: now})
			if got := p.Final[0].Planned.String(); got != tt.planned {
				t.Errorf("db-1 planned %q, want %q", got, tt.planned)
			}
			after := obs[0].Instance
			for _, st := range p.Steps {
				if st.Name == "db-2" && st.Plan.Changed && tt.planned == kept {
					t.Errorf("db-2 changed: %q", st.Planned())
				}
				if st.Name == "db-1" && st.Plan.Changed {
					after = st.Plan.Applied(st.Template)
				}
			}
			_, extra := after.Current.DiskByName("extra")
			if keeps := len(after.PreservedFromConfig.Disks) > 0; keeps != tt.keeps || extra != tt.keeps {
				t.Errorf("after the plan db-1 keeps the config's state %t (disk extra attached %t), want %t", keeps, extra, tt.keeps)
			}
		})
	}
}

func TestGroupState_RetainUnretain(t *testing.T) {
	t.Parallel()
	var s GroupState
	s.Retain("db-2")
	s.Retain("db-1")
	s.Retain("db-2")
	if diff := cmp.Diff([]string{"db-1", "db-2"}, s.Retained); diff != "" {
		t.Fatalf("retained (-want +got):\n%s", diff)
	}
	before := s
	s.Unretain("db-1")
	s.Unretain("db-3")
	if diff := cmp.Diff([]string{"db-2"}, s.Retained); diff != "" {
		t.Fatalf("retained (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"db-1", "db-2"}, before.Retained); diff != "" {
		t.Fatalf("a copy of the state changed with it (-want +got):\n%s", diff)
	}
	s.Unretain("db-2")
	if s.Retained != nil {
		t.Fatalf("retained %v, want nil", s.Retained)
	}
}

// TestPlanGroup_retainedTemplateDiskInAReplacement: a template disk that a destroyed config
// preserved stays preserved until the member's next update. A replacement for another reason is
// that update: it makes the disk stateless, yet keeps its bytes, since the member's record still
// preserves it (protection reads the record); only a later replacement recreates it.
func TestPlanGroup_retainedTemplateDiskInAReplacement(t *testing.T) {
	t.Parallel()
	cfg := InstanceConfig{Disks: []ConfigDisk{{DeviceName: "data", Source: "db-1-data.qcow2"}}}
	tests := []struct {
		name   string
		change func(s *GroupState)
		want   string
	}{
		{"with its config, the disk is kept",
			func(s *GroupState) {
				s.Configs = map[string]ConfigEntry{"db-1": {Config: cfg, MinimalAction: ActionNone, MostDisruptiveAllowed: ActionReplace}}
			},
			"db-1-boot.qcow2:recreate db-1-data.qcow2:keep"},
		{"retained, the replacement takes the state and still keeps the bytes", func(s *GroupState) { s.Retain("db-1") },
			"db-1-boot.qcow2:recreate db-1-data.qcow2:keep"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := state(group(1))
			s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
			tt.change(&s)
			mi := built("db-1", base(), Policy{}, cfg)
			p := PlanGroup(s, []Observed{{Name: "db-1", Index: 1, Status: StatusRunning, Instance: mi, Attached: mi.Current.Disks}}, Env{})
			if got := fates(p); got != tt.want {
				t.Errorf("fates\n got %s\nwant %s", got, tt.want)
			}
			if len(p.Steps) != 1 {
				t.Fatalf("%d steps, want the replacement", len(p.Steps))
			}
			d, _ := p.Steps[0].Plan.Applied(s.Group.Template).Current.DiskByName("data")
			if retained := len(s.Retained) > 0; d.Preserved == retained {
				t.Errorf("after the replacement the data disk is preserved %t, want %t", d.Preserved, !retained)
			}
		})
	}
}

// TestPlanGroup_keepRetained: a member whose config was destroyed in the apply that carries out
// a plan made while the config existed (KeepRetained names it) changes as that plan showed,
// keeping the config's state through the change; any other member that retains a state loses it
// with its change, as before.
func TestPlanGroup_keepRetained(t *testing.T) {
	t.Parallel()
	cfg := InstanceConfig{
		Disks:    []ConfigDisk{{DeviceName: "extra", Source: "db-1-extra-user.qcow2"}},
		Metadata: map[string]string{"node-id": "7"},
	}
	dropped := " (" + RetainedReason + ")"
	tests := []struct {
		name    string
		keep    map[string]bool
		change  func(g *Group)
		planned string // db-1's planned action
		keeps   bool   // db-1's record after the plan still carries the config's state
	}{
		{"kept through a restart", map[string]bool{"db-1": true},
			func(g *Group) { g.Template.VCPU = 2 }, "RESTART: vcpu 1 -> 2", true},
		{"kept through a live change", map[string]bool{"db-1": true},
			func(g *Group) { g.Template.Metadata = map[string]string{"role": "web"} }, "REFRESH: metadata role changed", true},
		{"kept with no change: nothing planned", map[string]bool{"db-1": true},
			func(*Group) {}, "NONE", true},
		{"not named: dropped with the change", map[string]bool{"db-2": true},
			func(g *Group) { g.Template.VCPU = 2 },
			"RESTART: vcpu 1 -> 2, disk extra detached" + dropped + ", metadata node-id removed" + dropped, false},
		{"no plan seen: dropped with the change", nil,
			func(g *Group) { g.Template.VCPU = 2 },
			"RESTART: vcpu 1 -> 2, disk extra detached" + dropped + ", metadata node-id removed" + dropped, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := state(group(2))
			s.Retain("db-1")
			s.KeepRetained = tt.keep
			tt.change(&s.Group)
			obs := observed(base(), StatusRunning, 1, 2)
			obs[0].Instance = built("db-1", base(), Policy{}, cfg)
			p := PlanGroup(s, obs, Env{})
			if got := p.Final[0].Planned.String(); got != tt.planned {
				t.Errorf("db-1 planned %q, want %q", got, tt.planned)
			}
			after := obs[0].Instance
			for _, st := range p.Steps {
				if st.Name == "db-1" && st.Plan.Changed {
					after = st.Plan.Applied(st.Template)
				}
			}
			_, extra := after.Current.DiskByName("extra")
			if keeps := len(after.PreservedFromConfig.Disks) > 0 && after.Current.Metadata["node-id"] == "7"; keeps != tt.keeps || extra != tt.keeps {
				t.Errorf("after the plan db-1 keeps the config's state %t (disk extra attached %t), want %t", keeps, extra, tt.keeps)
			}
			if _, ok := s.RetainedConfig("db-1", after); ok != tt.keeps {
				t.Errorf("after the plan db-1 retains the state %t, want %t (its next change removes it)", ok, tt.keeps)
			}
		})
	}
}
