package reconcile

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func spec(size int) engine.GroupState {
	return engine.GroupState{
		Group: engine.Group{
			Name: "db", Base: "db", TargetSize: size, Running: true, Policy: engine.DefaultUpdatePolicy(),
			Template: engine.Template{
				Shape:    engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64},
				BootDisk: engine.BootDisk{SizeMiB: 64},
				Disks:    []engine.Disk{{DeviceName: "data", SizeMiB: 8}}, Metadata: map[string]string{"role": "db"},
			},
		},
		Pool: "p",
	}
}

func apply(t *testing.T, b *fake.Backend, s engine.GroupState) {
	t.Helper()
	if err := New(b).Apply(context.Background(), recorded(t, b, s)); err != nil {
		t.Fatalf("apply: %v", err)
	}
}

// recorded is s as its group record on b keeps it, the record made from s when there is none and
// given s's configuration otherwise: as the group resource keeps it before an apply, so that what
// an apply writes (its placement, its inventory) is there for the next one.
func recorded(t *testing.T, b *fake.Backend, s engine.GroupState) engine.GroupState {
	t.Helper()
	st, err := New(b).Load(context.Background(), s.Group.Name)
	if errors.Is(err, ErrGroupNotFound) {
		st, err = New(b).Change(context.Background(), s.Group.Name, s.Pool, func(st *engine.GroupState, exists bool) error {
			*st = s
			return nil
		})
	}
	if err != nil {
		t.Fatalf("group record: %v", err)
	}
	// The configuration is the apply's; what the record keeps of its own (the placement, the
	// inventory) is the record's.
	st.SetGroup(s.Group)
	st.Pool, st.Policy, st.Configs, st.Released, st.Retained = s.Pool, s.Policy, s.Configs, s.Released, s.Retained
	return st
}

func ids(b *fake.Backend) map[string]int32 {
	out := map[string]int32{}
	for n, d := range b.Domains {
		out[n] = d.ID
	}
	return out
}

func TestApply_createsRunningMembersWithTheirVolumes(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	want := []string{"db-1-boot.qcow2", "db-1-data.qcow2", "db-2-boot.qcow2", "db-2-data.qcow2"}
	if got := b.VolumeNames("p"); !slices.Equal(got, want) {
		t.Fatalf("volumes %v, want %v", got, want)
	}
	for _, n := range []string{"db-1", "db-2"} {
		d := b.Domains[n]
		if d == nil || d.ID <= 0 || d.Spec.Record.Group != "db" || d.Spec.Record.Instance.TemplateRevision != spec(2).Group.Template.Revision() {
			t.Fatalf("domain %s: %+v", n, d)
		}
	}
}

func TestApply_twiceIsANoop(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(3))
	calls := map[string]int{}
	for k, v := range b.Calls {
		calls[k] = v
	}
	apply(t, b, spec(3))
	// Reading is allowed (the listings, of the domains and of those that run without a
	// definition, and the look for a record to keep the placement in: these tests apply groups
	// that have none); nothing may be written.
	reads := map[string]bool{"list": true, "names": true, "read-group": true}
	for k, v := range b.Calls {
		if !reads[k] && calls[k] != v {
			t.Fatalf("second apply called %s (%d -> %d)", k, calls[k], v)
		}
	}
}

func TestApply_scaleInRemovesHighestWithVolumes(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(3))
	apply(t, b, spec(1))
	if _, ok := b.Domains["db-1"]; !ok || len(b.Domains) != 1 {
		t.Fatalf("domains %v", ids(b))
	}
	if got := b.VolumeNames("p"); !slices.Equal(got, []string{"db-1-boot.qcow2", "db-1-data.qcow2"}) {
		t.Fatalf("volumes %v", got)
	}
}

func TestApply_metadataChangeIsLive(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	before := ids(b)
	s := spec(2)
	s.Group.Template.Metadata = map[string]string{"role": "web"}
	apply(t, b, s)
	if !equalIDs(before, ids(b)) || b.Calls["stop"] != 0 {
		t.Fatalf("ids %v -> %v, stops %d", before, ids(b), b.Calls["stop"])
	}
	if b.Domains["db-1"].Spec.Record.Instance.Template.Metadata["role"] != "web" {
		t.Fatal("record not updated")
	}
}

func TestApply_vcpuChangeRestartsOneAtATime(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	before := ids(b)
	s := spec(2)
	s.Group.Template.VCPU = 2
	apply(t, b, s)
	for n, id := range ids(b) {
		if id == before[n] || id <= 0 {
			t.Fatalf("%s not restarted: %d -> %d", n, before[n], id)
		}
		if b.Domains[n].Spec.VCPU != 2 || b.Domains[n].Spec.Record.Instance.Template.VCPU != 2 {
			t.Fatalf("%s not redefined", n)
		}
	}
}

func TestApply_interruptedRestartIsRedoneByTheNextApply(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	s := spec(1)
	s.Group.Template.VCPU = 2
	// The first record write is the in-flight marker; the second, the final record, fails.
	writes := 0
	b.Hook = func(op, obj string) error {
		if op == "set-record" && obj == "db-1" {
			if writes++; writes == 2 {
				return errors.New("injected")
			}
		}
		return nil
	}
	if err := New(b).Apply(context.Background(), s); err == nil || !strings.Contains(err.Error(), "injected") {
		t.Fatalf("apply error = %v", err)
	}
	if rec := b.Domains["db-1"].Spec.Record; rec.Instance.Template.VCPU != 1 {
		t.Fatal("an interrupted restart already recorded the new template")
	}
	if rec := b.Domains["db-1"].Spec.Record; rec.Instance.InFlight == nil || rec.Instance.InFlight.VCPU != 2 {
		t.Fatalf("no in-flight marker: %+v", rec.Instance)
	}
	b.Hook = nil
	apply(t, b, s)
	if d := b.Domains["db-1"]; d.Spec.Record.Instance.Template.VCPU != 2 || d.ID <= 0 {
		t.Fatalf("not finished: %+v", d)
	}
}

func TestApply_bootImageChangeReplacesAndRecreatesVolumes(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	b.Volumes["p/db-1-data.qcow2"].Data = "written"
	oldUUID := b.Domains["db-1"].UUID
	s := spec(1)
	s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	apply(t, b, s)
	d := b.Domains["db-1"]
	if d.UUID == oldUUID || b.Volumes["p/db-1-boot.qcow2"].Backing != "/images/new.qcow2" {
		t.Fatalf("not replaced: %+v", d)
	}
	if b.Volumes["p/db-1-data.qcow2"].Data != "" {
		t.Fatal("a stateless volume survived a replacement")
	}
}

func TestApply_reusesAVolumeThatExistsUnderTheInstanceName(t *testing.T) {
	t.Parallel()
	b := fake.New()
	b.Volumes["p/db-1-data.qcow2"] = &fake.Volume{SizeMiB: 8, Data: "kept"}
	apply(t, b, spec(1))
	if b.Volumes["p/db-1-data.qcow2"].Data != "kept" {
		t.Fatal("an existing volume was overwritten")
	}
}

func TestApply_diskAddedAndRemovedLive(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	before := ids(b)
	s := spec(1)
	s.Group.Template.Disks = []engine.Disk{{DeviceName: "logs", SizeMiB: 4}}
	apply(t, b, s)
	if !equalIDs(before, ids(b)) {
		t.Fatal("a disk change restarted the domain")
	}
	if got := b.VolumeNames("p"); !slices.Equal(got, []string{"db-1-boot.qcow2", "db-1-logs.qcow2"}) {
		t.Fatalf("volumes %v", got)
	}
	var devs []string
	for _, d := range b.Domains["db-1"].Spec.Disks {
		devs = append(devs, d.DeviceName)
	}
	if !slices.Equal(devs, []string{"boot", "logs"}) {
		t.Fatalf("attached %v", devs)
	}
}

func TestApply_blockedChangeTouchesNothing(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	s := spec(1)
	s.Group.Template.VCPU = 4
	s.Group.Policy.MostDisruptiveAllowed = engine.ActionRefresh
	err := New(b).Apply(context.Background(), s)
	if err == nil || !strings.Contains(err.Error(), "db-1 needs RESTART") {
		t.Fatalf("error %v", err)
	}
	if b.Domains["db-1"].Spec.VCPU != 1 || b.Calls["stop"] != 0 {
		t.Fatal("a blocked change was applied")
	}
}

func TestApply_stopsAndStartsForRunning(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	s := spec(2)
	s.Group.Running = false
	apply(t, b, s)
	for n, id := range ids(b) {
		if id != -1 {
			t.Fatalf("%s still running", n)
		}
	}
	apply(t, b, spec(2))
	for n, id := range ids(b) {
		if id <= 0 {
			t.Fatalf("%s not started", n)
		}
	}
}

func TestDestroy_removesMembersAndOrphanVolumesOnly(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(2))
	// A volume left by a create interrupted before its domain was defined (its intent is in the
	// group's inventory), volumes that merely share a prefix with the group but belong to
	// another naming scheme, and volumes of the group's scheme made by hand.
	s, err := New(b).Change(context.Background(), "db", "p", func(st *engine.GroupState, _ bool) error {
		st.Inventory.Items = append(st.Inventory.Items, engine.Made{Kind: engine.MadeVolume, Host: engine.DefaultHost, Name: "db-7-data.qcow2"})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b.Volumes["p/db-7-data.qcow2"] = &fake.Volume{}
	b.Volumes["p/db-1-2-boot.qcow2"] = &fake.Volume{}
	b.Volumes["p/dbx-1-boot.qcow2"] = &fake.Volume{}
	b.Volumes["p/db-3-boot.qcow2"] = &fake.Volume{Data: "mine"}
	b.Volumes["p/db-5-nvram.fd"] = &fake.Volume{Data: "mine"}
	b.Volumes["p/db-2-cidata.iso"] = &fake.Volume{Data: "mine"}
	if err := New(b).Destroy(context.Background(), s); err != nil {
		t.Fatal(err)
	}
	if len(b.Domains) != 0 {
		t.Fatalf("domains left: %v", ids(b))
	}
	if got := b.VolumeNames("p"); !slices.Equal(got, []string{"db-1-2-boot.qcow2", "db-2-cidata.iso", "db-3-boot.qcow2", "db-5-nvram.fd", "dbx-1-boot.qcow2"}) {
		t.Fatalf("volumes %v", got)
	}
	for _, v := range []string{"db-3-boot.qcow2", "db-5-nvram.fd", "db-2-cidata.iso"} {
		if b.Volumes["p/"+v].Data != "mine" {
			t.Errorf("the hand-made %s was written over", v)
		}
	}
}

func TestObserve_ignoresDomainsOfOtherGroups(t *testing.T) {
	t.Parallel()
	b := fake.New()
	apply(t, b, spec(1))
	other := spec(1)
	other.Group.Name, other.Group.Base = "db-x", "db-x"
	apply(t, b, other)
	for _, s := range []engine.GroupState{spec(1), other} {
		o, err := New(b).Observe(context.Background(), s)
		want := engine.InstanceName(s.Group.Base, 1)
		if err != nil || len(o.Observed) != 1 || o.Observed[0].Name != want {
			t.Fatalf("members of %s: %+v, %v", s.Group.Name, o.Observed, err)
		}
	}
}

func equalIDs(a, b map[string]int32) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestApply_createMakesNewVolumesWithoutDeletingFirst: a new member's volumes that the plan's
// pool listing did not have are made without deleting anything first (a call per volume at
// scale), yet a boot volume that appeared after the plan is neither reused nor deleted: the group
// did not make it, and the creation stops before it touches it.
func TestApply_createMakesNewVolumesWithoutDeletingFirst(t *testing.T) {
	t.Parallel()
	for _, appeared := range []bool{false, true} {
		t.Run(fmt.Sprintf("appeared after the plan: %v", appeared), func(t *testing.T) {
			ctx := context.Background()
			b := fake.New()
			s := spec(1)
			r := New(b)
			p, _, err := r.Preview(ctx, s)
			if err != nil {
				t.Fatal(err)
			}
			if appeared {
				b.Volumes["p/db-1-boot.qcow2"] = &fake.Volume{SizeMiB: 64, Data: "stale"}
			}
			err = r.Execute(ctx, s, p)
			if appeared {
				if err == nil || !strings.Contains(err.Error(), "the group did not make it") {
					t.Fatalf("execute: %v, want the creation refused", err)
				}
				if v := b.Volumes["p/db-1-boot.qcow2"]; v == nil || v.Data != "stale" {
					t.Fatalf("the volume that appeared was touched: %+v", v)
				}
			} else if err != nil {
				t.Fatal(err)
			} else if v := b.Volumes["p/db-1-boot.qcow2"]; v == nil || v.Data != "" {
				t.Fatalf("boot volume %+v, want a new one", v)
			}
			if got := b.Calls["delete-volume"]; got != 0 {
				t.Errorf("%d volume deletions, want none", got)
			}
		})
	}
}

// TestDestroy_memberStartedWhileBeingDeletedIsStopped: a member the plan saw stopped is undefined
// without a power-off; one started behind Terraform's back in between is left running without a
// definition, and the check after the wave finds it and powers it off, so nothing of the group is
// left on the host.
func TestDestroy_memberStartedWhileBeingDeletedIsStopped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	s := spec(2)
	s.Group.Running = false
	apply(t, b, s)
	b.StartedSince = map[string]bool{"db-2": true}
	if err := New(b).Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	if len(b.Domains) != 0 {
		t.Fatalf("left on the host: %v", b.Domains)
	}
	if b.Calls["names"] != 1 || b.Calls["stop"] != 1 {
		t.Errorf("names listed %d times, stops %d; want 1 and 1", b.Calls["names"], b.Calls["stop"])
	}
}

// TestDestroy_nameDefinedAgainIsLeftAlone: a domain someone defines under a deleted member's name
// while the wave runs is not the member: the check after the wave leaves it running and defined.
func TestDestroy_nameDefinedAgainIsLeftAlone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	b := fake.New()
	s := spec(2)
	s.Group.Running = false
	apply(t, b, s)
	b.Hook = func(op, _ string) error {
		if op == "names" {
			b.Domains["db-1"] = &fake.Domain{Spec: backend.DomainSpec{Name: "db-1"}, ID: 99, Unmanaged: true}
		}
		return nil
	}
	if err := New(b).Destroy(ctx, s); err != nil {
		t.Fatal(err)
	}
	if d, ok := b.Domains["db-1"]; !ok || d.ID != 99 || len(b.Domains) != 1 {
		t.Fatalf("domains after the destroy %v, want only the new db-1, running", b.Domains)
	}
	if b.Calls["names"] != 1 || b.Calls["stop"] != 0 {
		t.Errorf("names listed %d times, stops %d; want 1 and 0", b.Calls["names"], b.Calls["stop"])
	}
}

// A hot change costs the member the writes it needs: a metadata or label change one record
// write; a description change alone one description write, the record keeping the template from
// before it, which the plan reads as the new one (engine.Described); a description with other
// changes the description and then the record (the record, which says what is applied, last). A
// description edited on the host is put back, and an interrupted change is finished by the next
// apply. After each, the member is on the group's template revision and the next apply writes
// nothing.
func TestApply_hotChangesWriteWhatChanged(t *testing.T) {
	t.Parallel()
	withMetadata := func(s *engine.GroupState) { s.Group.Template.Metadata = map[string]string{"role": "web"} }
	withLabels := func(s *engine.GroupState) { s.Group.Template.Labels = map[string]string{"team": "b"} }
	withDescription := func(s *engine.GroupState) { s.Group.Template.Description = "new" }
	tests := []struct {
		name   string
		change func(s *engine.GroupState)
		behind func(t *testing.T, b *fake.Backend) // done after the first apply
		failOn string                              // the first try of the change fails at this call
		want   []string                            // the change's writes, in order, for db-1
		// wantDesc is the domain's description after the change, wantRecorded the record's.
		wantDesc, wantRecorded string
	}{
		{name: "metadata", change: withMetadata, want: []string{"set-record db-1"}},
		{name: "labels", change: withLabels, want: []string{"set-record db-1"}},
		{name: "description", change: withDescription, want: []string{"set-description db-1"}, wantDesc: "new"},
		{name: "metadata and description", change: func(s *engine.GroupState) { withMetadata(s); withDescription(s) },
			want: []string{"set-description db-1", "set-record db-1"}, wantDesc: "new", wantRecorded: "new"},
		{name: "description edited on the host", behind: func(_ *testing.T, b *fake.Backend) { b.Domains["db-1"].Spec.Description = "edited" },
			want: []string{"set-description db-1"}},
		{name: "description changed and changed back", behind: func(t *testing.T, b *fake.Backend) {
			s := spec(1)
			withDescription(&s)
			apply(t, b, s)
		}, want: []string{"set-description db-1"}},
		{name: "description changed, then metadata", behind: func(t *testing.T, b *fake.Backend) {
			s := spec(1)
			withDescription(&s)
			apply(t, b, s)
		}, change: func(s *engine.GroupState) { withMetadata(s); withDescription(s) },
			want: []string{"set-record db-1"}, wantDesc: "new", wantRecorded: "new"},
		{name: "metadata and description interrupted before the record", change: func(s *engine.GroupState) { withMetadata(s); withDescription(s) },
			failOn: "set-record db-1", want: []string{"set-record db-1"}, wantDesc: "new", wantRecorded: "new"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := fake.New()
			apply(t, b, spec(1))
			if tt.behind != nil {
				tt.behind(t, b)
			}
			s := spec(1)
			if tt.change != nil {
				tt.change(&s)
			}
			if tt.failOn != "" {
				b.FailOn[tt.failOn] = errors.New("injected")
				if err := New(b).Apply(context.Background(), s); err == nil {
					t.Fatal("the apply with the injected failure succeeded")
				}
				delete(b.FailOn, tt.failOn)
			}
			before := ids(b)
			b.Log = nil
			apply(t, b, s)
			var writes []string
			for _, l := range b.Log {
				if strings.HasPrefix(l, "set-") {
					writes = append(writes, l)
				}
			}
			if !slices.Equal(writes, tt.want) {
				t.Errorf("writes %q, want %q", writes, tt.want)
			}
			d := b.Domains["db-1"]
			if d.Spec.Description != tt.wantDesc || d.Spec.Record.Instance.Current.Description != tt.wantRecorded {
				t.Errorf("description %q, recorded %q, want %q and %q", d.Spec.Description, d.Spec.Record.Instance.Current.Description, tt.wantDesc, tt.wantRecorded)
			}
			p, _, err := New(b).Preview(context.Background(), s)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := p.Final[0].Revision, s.Group.Template.Revision(); got != want || len(p.Steps) != 0 {
				t.Errorf("after the change: revision %s, steps %d; want %s and none", got, len(p.Steps), want)
			}
			if !equalIDs(before, ids(b)) {
				t.Errorf("ids %v -> %v: the member was restarted", before, ids(b))
			}
			b.Log = nil
			apply(t, b, s)
			if slices.ContainsFunc(b.Log, func(l string) bool { return strings.HasPrefix(l, "set-") }) {
				t.Errorf("the apply after it wrote again: %q", b.Log)
			}
		})
	}
}
