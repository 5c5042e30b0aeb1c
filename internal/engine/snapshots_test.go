package engine

import (
	"errors"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var snapshotNow = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

// taskLine is a task as the snapshot tests read it: its kind, and the snapshot's volume when it
// has one.
func taskLine(t Task) string {
	switch t.Kind {
	case TaskSnapshot, TaskRevertSnapshot, TaskDeleteSnapshot:
		return t.Kind.String() + " " + t.Snapshot.Volume + "@" + t.Snapshot.Tag
	case TaskSnapshotRoom:
		var vols []string
		for _, sn := range t.Snapshots {
			vols = append(vols, sn.Volume)
		}
		return t.Kind.String() + " " + strings.Join(vols, ",")
	default:
		return t.Kind.String()
	}
}

// snapshotLines are the op's snapshot tasks and the stop, undefine, define and start around them,
// in order.
func snapshotLines(op Operation) []string {
	var out []string
	for _, t := range op.Tasks {
		switch t.Kind {
		case TaskSnapshotRoom, TaskSnapshot, TaskRevertSnapshot, TaskDeleteSnapshot, TaskMark, TaskStopWait, TaskPowerOff, TaskUndefine, TaskDefine, TaskStart, TaskRefuse:
			out = append(out, taskLine(t))
		default:
		}
	}
	return out
}

func TestSnapshots_rollout(t *testing.T) {
	t.Parallel()
	image := func(g *Group) { g.Template.BootDisk.SourceImage = "/images/b.qcow2" }
	old := rollbackGroup(1)
	oldRev := old.Group.Template.Revision()
	tag := snapshotTag(oldRev, "data", snapshotNow)
	data := VolumeName("db-1", "data")
	cases := []struct {
		name   string
		change func(g *Group)
		// listed, when set, settles the inventory against a pool listing that holds every
		// volume, with the inventory given.
		listed    bool
		inventory []Made
		want      []string
	}{
		{
			name: "a replacement snapshots the preserved disk after the stop, before the undefinition",
			change: func(g *Group) {
				image(g)
				g.Policy.Snapshot = &SnapshotPolicy{Retention: time.Hour}
			},
			want: []string{"snapshot-room " + data, "mark", "stop-wait", "snapshot " + data + "@" + tag, "undefine", "define", "start"},
		},
		{
			name: "a restart snapshots after the stop, before the start",
			change: func(g *Group) {
				g.Template.VCPU = 2
				g.Policy.Snapshot = &SnapshotPolicy{}
			},
			want: []string{"snapshot-room " + data, "mark", "stop-wait", "snapshot " + data + "@" + tag, "start"},
		},
		{
			name:   "no snapshot block: none",
			change: image,
			want:   []string{"mark", "stop-wait", "undefine", "define", "start"},
		},
		{
			name: "a disk the block does not choose: none",
			change: func(g *Group) {
				image(g)
				g.Policy.Snapshot = &SnapshotPolicy{Disks: []string{"logs"}}
			},
			want: []string{"mark", "stop-wait", "undefine", "define", "start"},
		},
		{
			name: "a preserved volume the group did not make: none",
			change: func(g *Group) {
				image(g)
				g.Policy.Snapshot = &SnapshotPolicy{}
			},
			listed:    true,
			inventory: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true}, {Kind: MadeVolume, Name: VolumeName("db-1", BootDeviceName), Confirmed: true}},
			want:      []string{"mark", "stop-wait", "undefine", "define", "start"},
		},
		{
			name: "the older settled snapshot of the volume goes once the new one is taken",
			change: func(g *Group) {
				image(g)
				g.Policy.Snapshot = &SnapshotPolicy{}
			},
			listed: true,
			inventory: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true}, {Kind: MadeVolume, Name: data, Confirmed: true},
				{Kind: MadeVolume, Name: VolumeName("db-1", BootDeviceName), Confirmed: true},
				{Kind: MadeSnapshot, Name: data, Tag: "virt-old-1", Revision: "old", TakenAt: 1, ReadyAt: 1, Confirmed: true}},
			want: []string{"snapshot-room " + data, "mark", "stop-wait", "snapshot " + data + "@" + tag, "delete-snapshot " + data + "@virt-old-1", "undefine", "define", "start"},
		},
		{
			// A rollout that failed (or a rollback cut off) left it: it may hold the only copy
			// of the data from before that rollout.
			name: "an older snapshot no apply settled is kept",
			change: func(g *Group) {
				image(g)
				g.Policy.Snapshot = &SnapshotPolicy{}
			},
			listed: true,
			inventory: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true}, {Kind: MadeVolume, Name: data, Confirmed: true},
				{Kind: MadeVolume, Name: VolumeName("db-1", BootDeviceName), Confirmed: true},
				{Kind: MadeSnapshot, Name: data, Tag: "virt-old-1", Revision: "old", TakenAt: 1, Confirmed: true}},
			want: []string{"snapshot-room " + data, "mark", "stop-wait", "snapshot " + data + "@" + tag, "undefine", "define", "start"},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			before := runningMembers(old, 1)
			s := old
			c.change(&s.Group)
			s.SetGroup(s.Group)
			env := Env{Now: snapshotNow}
			if c.listed {
				s.Inventory = Inventory{Kept: true, Items: c.inventory}
				env.HostVolumes = map[string][]string{DefaultHost: {data, VolumeName("db-1", BootDeviceName)}}
			}
			p := PlanGroup(s, before, env)
			if len(p.Waves) != 1 || len(p.Waves[0].Ops) != 1 {
				t.Fatalf("plan has %d waves, want one operation", len(p.Waves))
			}
			if diff := cmp.Diff(c.want, snapshotLines(p.Waves[0].Ops[0])); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSnapshots_rollback checks that a rollback puts the disks back to the rollout's snapshots,
// after its stop and before the old template starts, and takes none of its own.
func TestSnapshots_rollback(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	for _, c := range []struct {
		name   string
		change func(g *Group)
		gone   bool
		want   []string
	}{
		{name: "replacement", change: func(g *Group) { g.Template.BootDisk.SourceImage = "/images/b.qcow2" },
			want: []string{"mark", "stop-wait", "revert-snapshot " + data + "@TAG", "undefine", "define", "start"}},
		{name: "restart", change: func(g *Group) { g.Template.VCPU = 2 },
			want: []string{"mark", "stop-wait", "revert-snapshot " + data + "@TAG", "start"}},
		{name: "domain gone: made again", change: func(g *Group) { g.Template.BootDisk.SourceImage = "/images/b.qcow2" }, gone: true,
			want: []string{"revert-snapshot " + data + "@TAG", "define", "start"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			old := rollbackGroup(1)
			tag := snapshotTag(old.Group.Template.Revision(), "data", snapshotNow)
			before := runningMembers(old, 1)
			s := old
			c.change(&s.Group)
			s.Group.Policy.Snapshot = &SnapshotPolicy{}
			s.SetGroup(s.Group)
			env := Env{Now: snapshotNow}
			forward := PlanGroup(s, before, env)
			now := afterForward(forward, s.Group.Template, before, []string{"db-1"})
			if c.gone {
				now = nil
			}
			rp := PlanRollback(s, forward, []string{"db-1"}, now, Env{Now: snapshotNow.Add(time.Minute)})
			if len(rp.Plan.Waves) != 1 {
				t.Fatalf("rollback %+v", summarize(rp))
			}
			op := rp.Plan.Waves[0].Ops[0]
			var want []string
			for _, w := range c.want {
				want = append(want, replaceTag(w, tag))
			}
			if diff := cmp.Diff(want, snapshotLines(op)); diff != "" {
				t.Errorf("rollback tasks (-want +got):\n%s", diff)
			}
			for _, task := range op.Tasks {
				if task.Kind == TaskRevertSnapshot && !task.Optional {
					t.Errorf("the revert is not optional: a rollout that failed before its snapshot did not touch the disk")
				}
			}
		})
	}
}

func replaceTag(s, tag string) string { return strings.Replace(s, "@TAG", "@"+tag, 1) }

// TestSnapshots_inventory checks that a snapshot is an intent before the run and confirmed after
// it, that it goes with its volume, and that KeepSnapshots dates the confirmed ones only.
func TestSnapshots_inventory(t *testing.T) {
	t.Parallel()
	old := rollbackGroup(1)
	data := VolumeName("db-1", "data")
	boot := VolumeName("db-1", BootDeviceName)
	before := runningMembers(old, 1)
	s := old
	s.Group.Template.BootDisk.SourceImage = "/images/b.qcow2"
	s.Group.Policy.Snapshot = &SnapshotPolicy{}
	s.SetGroup(s.Group)
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true},
		{Kind: MadeVolume, Name: data, Confirmed: true}, {Kind: MadeVolume, Name: boot, Confirmed: true}}}
	env := Env{Now: snapshotNow, HostVolumes: map[string][]string{DefaultHost: {data, boot}}}
	p := PlanGroup(s, before, env)
	tag := snapshotTag(old.Group.Template.Revision(), "data", snapshotNow)
	snap := func(inv Inventory) []Made {
		var out []Made
		for _, m := range inv.Items {
			if m.Kind == MadeSnapshot {
				out = append(out, m)
			}
		}
		return out
	}
	want := Made{Kind: MadeSnapshot, Host: DefaultHost, Name: data, Tag: tag, Revision: old.Group.Template.Revision(), TakenAt: snapshotNow.UnixMilli()}
	if diff := cmp.Diff([]Made{want}, snap(p.Inventory)); diff != "" {
		t.Errorf("before the run (-want +got):\n%s", diff)
	}
	want.Confirmed = true
	if diff := cmp.Diff([]Made{want}, snap(p.FinalInventory)); diff != "" {
		t.Errorf("after the run (-want +got):\n%s", diff)
	}
	kept := p.FinalInventory.KeepSnapshots(snapshotNow.Add(time.Hour))
	want.ReadyAt = snapshotNow.Add(time.Hour).UnixMilli()
	if diff := cmp.Diff([]Made{want}, snap(kept)); diff != "" {
		t.Errorf("kept (-want +got):\n%s", diff)
	}
	if got := snap(p.Inventory.KeepSnapshots(snapshotNow)); len(got) != 1 || got[0].ReadyAt != 0 {
		t.Errorf("an intent was dated: %+v", got)
	}
	// The volume gone (deleted by hand), its snapshot is gone too; a listing that shows the volume
	// keeps it.
	gone := kept.recovered(nil, Listing{DefaultHost: {boot: true}}, nil)
	if got := snap(gone); len(got) != 0 {
		t.Errorf("the snapshot of a deleted volume stays: %+v", got)
	}
	if got := snap(kept.recovered(nil, Listing{DefaultHost: {boot: true, data: true}}, nil)); len(got) != 1 {
		t.Errorf("the snapshot of a volume still there was dropped")
	}
}

// TestSnapshots_retention checks that a snapshot kept past its retention is deleted by the next
// plan, live through the running member, and shown; one within it, or never confirmed, is kept
// and the plan is idle.
func TestSnapshots_retention(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	boot := VolumeName("db-1", BootDeviceName)
	for _, c := range []struct {
		name      string
		readyAt   int64
		retention *SnapshotPolicy
		confirmed bool
		status    Status
		// newer is another snapshot of the volume the inventory holds.
		newer   *Made
		want    []string
		planned string
	}{
		{name: "past its retention, running: deleted live", readyAt: snapshotNow.Add(-time.Hour - time.Second).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning,
			want: []string{"delete-snapshot " + data + "@virt-r1-1-data live"}, planned: "NONE: snapshots past their retention deleted (" + data + "@virt-r1-1-data)"},
		{name: "past its retention, stopped: deleted through the volume", readyAt: snapshotNow.Add(-time.Hour).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusStopped,
			want: []string{"delete-snapshot " + data + "@virt-r1-1-data"}, planned: "NONE: snapshots past their retention deleted (" + data + "@virt-r1-1-data)"},
		{name: "within its retention: kept", readyAt: snapshotNow.Add(-time.Hour + time.Second).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning, planned: "NONE"},
		{name: "the retention made shorter: deleted", readyAt: snapshotNow.Add(-time.Minute).UnixMilli(), retention: &SnapshotPolicy{Retention: 0}, confirmed: true, status: StatusRunning,
			want: []string{"delete-snapshot " + data + "@virt-r1-1-data live"}, planned: "NONE: snapshots past their retention deleted (" + data + "@virt-r1-1-data)"},
		{name: "no snapshot block: the default retention", readyAt: snapshotNow.Add(-DefaultSnapshotRetention + time.Minute).UnixMilli(), confirmed: true, status: StatusRunning, planned: "NONE"},
		{name: "its rollout did not succeed: kept", status: StatusRunning, planned: "NONE"},
		{name: "an unfinished rollout took a newer one: deleted", readyAt: snapshotNow.Add(-time.Minute).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning,
			newer: &Made{Kind: MadeSnapshot, Name: data, Tag: "virt-r2-2-data", Revision: "r2", TakenAt: 2},
			want:  []string{"delete-snapshot " + data + "@virt-r1-1-data live"}, planned: "NONE: snapshots an unfinished rollout replaced deleted (" + data + "@virt-r1-1-data)"},
		{name: "a newer one taken (confirmed from its volume's tags) and not settled: deleted", readyAt: snapshotNow.Add(-time.Minute).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning,
			newer: &Made{Kind: MadeSnapshot, Name: data, Tag: "virt-r2-2-data", Revision: "r2", TakenAt: 2, Confirmed: true},
			want:  []string{"delete-snapshot " + data + "@virt-r1-1-data live"}, planned: "NONE: snapshots an unfinished rollout replaced deleted (" + data + "@virt-r1-1-data)"},
		{name: "a newer one settled: both kept", readyAt: snapshotNow.Add(-time.Minute).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning,
			newer: &Made{Kind: MadeSnapshot, Name: data, Tag: "virt-r2-2-data", Revision: "r2", TakenAt: 2, ReadyAt: snapshotNow.Add(-time.Minute).UnixMilli(), Confirmed: true}, planned: "NONE"},
		{name: "not settled, a newer one not settled either: kept", status: StatusRunning,
			newer: &Made{Kind: MadeSnapshot, Name: data, Tag: "virt-r2-2-data", Revision: "r2", TakenAt: 2, Confirmed: true}, planned: "NONE"},
		{name: "an intent older than it: kept", readyAt: snapshotNow.Add(-time.Minute).UnixMilli(), retention: &SnapshotPolicy{Retention: time.Hour}, confirmed: true, status: StatusRunning,
			newer: &Made{Kind: MadeSnapshot, Name: data, Tag: "virt-r0-0-data", Revision: "r0", TakenAt: 0}, planned: "NONE"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := rollbackGroup(1)
			s.Group.Running = c.status == StatusRunning
			s.Group.Policy.Snapshot = c.retention
			s.SetGroup(s.Group)
			obs := runningMembers(s, 1)
			obs[0].Status = c.status
			s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true},
				{Kind: MadeVolume, Name: data, Confirmed: true}, {Kind: MadeVolume, Name: boot, Confirmed: true},
				{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1, ReadyAt: c.readyAt, Confirmed: c.confirmed}}}
			if c.newer != nil {
				s.Inventory.Items = append(s.Inventory.Items, *c.newer)
			}
			p := PlanGroup(s, obs, Env{Now: snapshotNow, HostVolumes: map[string][]string{DefaultHost: {data, boot}}})
			var got []string
			for _, w := range p.Waves {
				for _, op := range w.Ops {
					for _, task := range op.Tasks {
						line := taskLine(task)
						if task.Live {
							line += " live"
						}
						got = append(got, line)
					}
				}
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("tasks (-want +got):\n%s", diff)
			}
			if p.Idle() != (len(c.want) == 0) {
				t.Errorf("Idle() = %v with tasks %v", p.Idle(), got)
			}
			if g := p.Final[0].Planned.String(); g != c.planned {
				t.Errorf("planned %q, want %q", g, c.planned)
			}
			if len(c.want) > 0 {
				if snaps := p.FinalInventory.Snapshots("db-1"); slices.ContainsFunc(snaps, func(m Made) bool { return m.Tag == "virt-r1-1-data" }) {
					t.Errorf("the inventory keeps %+v after the deletion", snaps)
				}
			}
		})
	}
}

// TestSnapshots_restoreAction checks the restore action: a restart whose stopped member has each
// snapshot put back (not optional: a snapshot gone fails it) and takes none; a member without a
// snapshot is refused.
func TestSnapshots_restoreAction(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	boot := VolumeName("db-1", BootDeviceName)
	s := rollbackGroup(2)
	s.Group.Policy.Snapshot = &SnapshotPolicy{Retention: time.Hour}
	s.SetGroup(s.Group)
	obs := runningMembers(s, 2)
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Name: "db-1", UUID: "uuid-1", Confirmed: true},
		{Kind: MadeVolume, Name: data, Confirmed: true}, {Kind: MadeVolume, Name: boot, Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1, ReadyAt: snapshotNow.UnixMilli(), Confirmed: true}}}
	env := Env{Now: snapshotNow, HostVolumes: map[string][]string{DefaultHost: {data, boot, VolumeName("db-2", "data"), VolumeName("db-2", BootDeviceName)}}}
	ap, err := PlanMemberAction(s, obs, MemberRestore, []string{"db-1"}, env)
	if err != nil {
		t.Fatal(err)
	}
	if len(ap.Plan.Waves) != 1 || len(ap.Plan.Waves[0].Ops) != 1 {
		t.Fatalf("restore plans %d waves", len(ap.Plan.Waves))
	}
	op := ap.Plan.Waves[0].Ops[0]
	want := []string{"mark", "stop-wait", "revert-snapshot " + data + "@virt-r1-1-data", "start"}
	if diff := cmp.Diff(want, snapshotLines(op)); diff != "" {
		t.Errorf("restore tasks (-want +got):\n%s", diff)
	}
	for _, task := range op.Tasks {
		if task.Kind == TaskRevertSnapshot && task.Optional {
			t.Errorf("a restore's revert is optional: a snapshot deleted by hand would pass unseen")
		}
	}
	if op.Kind != OpRestart || op.Step.UUID != "uuid-1" {
		t.Errorf("restore is %s of %s, want a restart keeping its UUID", op.Kind, op.Step.UUID)
	}
	_, err = PlanMemberAction(s, obs, MemberRestore, []string{"db-2"}, env)
	var refused *ActionRefusedError
	if !errors.As(err, &refused) || !strings.Contains(err.Error(), "no snapshot") {
		t.Errorf("restore of a member without a snapshot: %v, want a refusal saying it has no snapshot", err)
	}
}

// TestSnapshots_replacedDroppedAtCreation checks that a member made again (its domain gone: a
// rollout cut off between its undefinition and its definition) deletes the older snapshots of its
// kept volume that the rollout's newer one (an intent) replaced, and keeps that one: the plan
// after the creation is idle.
func TestSnapshots_replacedDroppedAtCreation(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	boot := VolumeName("db-1", BootDeviceName)
	s := rollbackGroup(1)
	s.Group.Policy.Snapshot = &SnapshotPolicy{Retention: time.Hour}
	s.SetGroup(s.Group)
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeVolume, Name: data, Confirmed: true}, {Kind: MadeVolume, Name: boot, Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1, ReadyAt: snapshotNow.Add(-time.Minute).UnixMilli(), Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r2-2-data", Revision: "r2", TakenAt: 2}}}
	p := PlanGroup(s, nil, Env{Now: snapshotNow, HostVolumes: map[string][]string{DefaultHost: {data, boot}}})
	var got []string
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			if op.Kind != OpCreate {
				t.Fatalf("planned a %s of %s, want a creation", op.Kind, op.Name)
			}
			for _, task := range op.Tasks {
				if task.Kind == TaskDeleteSnapshot {
					got = append(got, taskLine(task))
				}
			}
		}
	}
	if diff := cmp.Diff([]string{"delete-snapshot " + data + "@virt-r1-1-data"}, got); diff != "" {
		t.Errorf("snapshot deletions (-want +got):\n%s", diff)
	}
	var left []string
	for _, m := range p.FinalInventory.Snapshots("db-1") {
		left = append(left, m.Tag)
	}
	if diff := cmp.Diff([]string{"virt-r2-2-data"}, left); diff != "" {
		t.Errorf("snapshots after the run (-want +got):\n%s", diff)
	}
}

// TestSnapshots_dropHelperOnDeletion checks that the deletion of a volume the inventory holds
// snapshots of undefines first the helper a cut-off snapshot call may have left, and only that.
func TestSnapshots_dropHelperOnDeletion(t *testing.T) {
	t.Parallel()
	data, boot := VolumeName("db-2", "data"), VolumeName("db-2", BootDeviceName)
	s := rollbackGroup(2)
	s.Policy.Disks[0].DeleteRule = DeleteOnPermanentDeletion
	obs := runningMembers(s, 2)
	s.Group.TargetSize = 1
	s.SetGroup(s.Group)
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeDomain, Name: "db-2", UUID: "uuid-2", Confirmed: true},
		{Kind: MadeVolume, Name: data, Confirmed: true}, {Kind: MadeVolume, Name: boot, Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1}}}
	p := PlanGroup(s, obs, Env{Now: snapshotNow, HostVolumes: map[string][]string{DefaultHost: {data, boot}}})
	got := map[string]bool{}
	for _, w := range p.Waves {
		for _, op := range w.Ops {
			for _, task := range allTasks(op) {
				if task.Kind == TaskDeleteVolume {
					got[task.Volume.Volume] = task.DropHelper
				}
			}
		}
	}
	want := map[string]bool{data: true, boot: false, StagingVolumeName("db-2"): false, SeedVolumeName("db-2"): false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("volume deletions and whether they drop a helper first (-want +got):\n%s", diff)
	}
}

// TestSnapshots_recoveredFromTags checks that a snapshot no apply settled is settled against its
// volume's tags where they were read: kept and confirmed when the volume holds it, dropped when
// it does not (a cut-off run never took it, or a user deleted it), kept as it is when not read;
// and that only volumes with such a snapshot are asked for.
func TestSnapshots_recoveredFromTags(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	logs := VolumeName("db-1", "logs")
	intent := Made{Kind: MadeSnapshot, Host: DefaultHost, Name: data, Tag: "virt-r1-1-data", TakenAt: 1}
	settled := Made{Kind: MadeSnapshot, Host: DefaultHost, Name: logs, Tag: "virt-r0-0-logs", TakenAt: 0, ReadyAt: 5, Confirmed: true}
	listing := Listing{DefaultHost: {data: true, logs: true}}
	for _, c := range []struct {
		name string
		tags map[string]map[string][]string
		want []Made
	}{
		{name: "not read: kept as it is", want: []Made{settled, intent}},
		{name: "in its volume: confirmed", tags: map[string]map[string][]string{DefaultHost: {data: {"virt-r1-1-data", "other"}}},
			want: []Made{settled, {Kind: MadeSnapshot, Host: DefaultHost, Name: data, Tag: "virt-r1-1-data", TakenAt: 1, Confirmed: true}}},
		{name: "not in its volume: dropped", tags: map[string]map[string][]string{DefaultHost: {data: {"other"}}}, want: []Made{settled}},
		{name: "another host's tags: kept as it is", tags: map[string]map[string][]string{"h2": {data: nil}}, want: []Made{settled, intent}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := Inventory{Kept: true, Items: []Made{intent, settled}}.recovered(nil, listing, c.tags).Snapshots("db-1")
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("snapshots (-want +got):\n%s", diff)
			}
		})
	}
	inv := Inventory{Kept: true, Items: []Made{intent, settled, {Kind: MadeSnapshot, Host: "h2", Name: data, Tag: "virt-r1-1-data"},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-2-data"}, {Kind: MadeVolume, Name: data, Confirmed: true}}}
	want := map[string][]string{DefaultHost: {data}, "h2": {data}}
	if diff := cmp.Diff(want, inv.UnsettledSnapshots()); diff != "" {
		t.Errorf("UnsettledSnapshots (-want +got):\n%s", diff)
	}
}

// TestSnapshots_restoreNewest checks that a restore puts each disk back to its newest snapshot
// when a rollout kept an older unsettled one beside it.
func TestSnapshots_restoreNewest(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	logs := VolumeName("db-1", "logs")
	s := rollbackGroup(1)
	s.Inventory = Inventory{Kept: true, Items: []Made{
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r0-1-data", TakenAt: 1, Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-3-data", TakenAt: 3, Confirmed: true},
		{Kind: MadeSnapshot, Name: logs, Tag: "virt-r0-1-logs", TakenAt: 1, Confirmed: true},
		{Kind: MadeSnapshot, Name: data, Tag: "virt-r1-2-data", TakenAt: 2, Confirmed: true},
	}}
	a := &memberAction{kind: MemberRestore, names: map[string]bool{"db-1": true}}
	var got []string
	for _, sn := range a.restore(s, Observed{Name: "db-1"}) {
		got = append(got, sn.Volume+"@"+sn.Tag)
	}
	want := []string{data + "@virt-r1-3-data", logs + "@virt-r0-1-logs"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("restore (-want +got):\n%s", diff)
	}
}

// TestSnapshots_movedWithTheCopy checks that a cold move's copy of a volume carries the
// snapshots the inventory holds of it to the target host (the copy is the file's bytes), and
// that the source's go with the source volume.
func TestSnapshots_movedWithTheCopy(t *testing.T) {
	t.Parallel()
	data := VolumeName("db-1", "data")
	s := rollbackGroup(1)
	s.Listed = Listing{DefaultHost: {data: true}, "h2": {}}
	s.Inventory = Inventory{Kept: true, Items: []Made{{Kind: MadeVolume, Host: DefaultHost, Name: data, Confirmed: true},
		{Kind: MadeSnapshot, Host: DefaultHost, Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1, ReadyAt: 7, Confirmed: true}}}
	op := Operation{Kind: OpMove, Name: "db-1", Host: DefaultHost, Tasks: []Task{
		{Kind: TaskCopyVolume, Host: "h2", Volume: VolumeOp{Volume: data}},
		{Kind: TaskDeleteVolume, Volume: VolumeOp{Volume: data}},
	}}
	_, after, _ := s.inventoryOf([]Wave{{Ops: []Operation{op}}})
	want := []Made{{Kind: MadeSnapshot, Host: "h2", Name: data, Tag: "virt-r1-1-data", Revision: "r1", TakenAt: 1, ReadyAt: 7, Confirmed: true}}
	if diff := cmp.Diff(want, after.Snapshots("db-1")); diff != "" {
		t.Errorf("snapshots after the move (-want +got):\n%s", diff)
	}
}

// TestInventoryAfterStop checks what a stopped run's record keeps: the intents of the operations
// that ran (they may have made their objects), none of those that never ran, and every entry the
// record held before, even one an operation that never ran would have made again.
func TestInventoryAfterStop(t *testing.T) {
	t.Parallel()
	d1, d2, b2 := VolumeName("db-1", "data"), VolumeName("db-2", "data"), VolumeName("db-2", "boot")
	s := rollbackGroup(2)
	s.Listed = Listing{DefaultHost: {d1: true, d2: true, b2: true}}
	old := Made{Kind: MadeSnapshot, Host: DefaultHost, Name: d2, Tag: "virt-r0-1-data", Revision: "r0", TakenAt: 1}
	s.Inventory = Inventory{Kept: true, Items: []Made{
		{Kind: MadeVolume, Host: DefaultHost, Name: d1, Confirmed: true},
		{Kind: MadeVolume, Host: DefaultHost, Name: d2, Confirmed: true},
		{Kind: MadeVolume, Host: DefaultHost, Name: b2, Confirmed: true},
		old, // an intent an earlier, cut-off run left
	}}
	snapshot := func(member, vol string) Operation {
		return Operation{Kind: OpReplace, Name: member, Host: DefaultHost, Tasks: []Task{
			{Kind: TaskSnapshot, Snapshot: SnapshotOp{Volume: vol, Tag: "virt-r1-2-data", Revision: "r1", TakenAt: 2}},
		}}
	}
	op2 := snapshot("db-2", d2)
	op2.Tasks = append(op2.Tasks, Task{Kind: TaskDeleteVolume, Volume: VolumeOp{Volume: b2}}, Task{Kind: TaskCreateVolume, Volume: VolumeOp{Volume: b2}})
	var p GroupPlan
	p.Inventory, p.FinalInventory, p.makers = s.inventoryOf([]Wave{{Ops: []Operation{snapshot("db-1", d1)}}, {Ops: []Operation{op2}}})
	tags := func(inv Inventory) []string {
		var out []string
		for _, m := range inv.Items {
			switch {
			case m.Kind == MadeSnapshot:
				out = append(out, m.Name+"@"+m.Tag)
			case m.Name == b2:
				out = append(out, m.Name+" confirmed="+strconv.FormatBool(m.Confirmed))
			}
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		ran  []string
		want []string
	}{
		{nil, []string{d2 + "@virt-r0-1-data", b2 + " confirmed=false"}},
		{[]string{"db-1"}, []string{d1 + "@virt-r1-2-data", d2 + "@virt-r0-1-data", b2 + " confirmed=false"}},
		{[]string{"db-1", "db-2"}, []string{d1 + "@virt-r1-2-data", d2 + "@virt-r0-1-data", d2 + "@virt-r1-2-data", b2 + " confirmed=false"}},
	}
	for _, c := range cases {
		want := slices.Clone(c.want)
		slices.Sort(want)
		if diff := cmp.Diff(want, tags(p.InventoryAfterStop(c.ran))); diff != "" {
			t.Errorf("ran %v: the record keeps (-want +got):\n%s", c.ran, diff)
		}
	}
	if got := tags(p.Inventory); len(got) != 4 {
		t.Errorf("the inventory before the run holds %v, want both new intents, the old one and the boot volume", got)
	}
}
