package engine

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Data-safe upgrades (update_policy.snapshot). A rollout that changes a member's template takes,
// after the member's graceful stop and before anything of the new template touches its disks, a
// snapshot of each chosen preserved disk; a rollback of that member (on_failure = "ROLLBACK")
// puts the disks' bytes back to it, after the rollback's own stop and before the old template
// starts. A snapshot is a qcow2 internal snapshot inside the volume (the backend's Snapshots):
// O(1) in the disk's size, and it lives and dies with the volume.
//
// Only volumes the group made (its inventory) are snapshotted: a snapshot writes into the file,
// and a volume the user named in a config is the user's. A member that keeps a snapshot of a
// disk has one per volume: the next rollout's snapshot deletes the older ones once it is taken.
// Snapshots are the group's objects (MadeSnapshot in the inventory) and are kept after a rollout
// that succeeded for the retention the group's policy gives now, from ReadyAt, which the apply
// sets when it confirms them (its end, when every member it changed was ready): a retention made
// shorter takes effect at the next plan.

// SnapshotPolicy is update_policy.snapshot: which preserved disks a rollout snapshots and how long
// the snapshots are kept after it succeeded.
type SnapshotPolicy struct {
	// Disks are the device names of the preserved disks to snapshot; none: every preserved disk.
	Disks []string
	// Retention is how long a snapshot is kept once the rollout that took it succeeded.
	Retention time.Duration
}

// DefaultSnapshotRetention is the retention of a snapshot block that sets none.
const DefaultSnapshotRetention = 24 * time.Hour

// SnapshotRetentionRule bounds update_policy.snapshot.retention.
var SnapshotRetentionRule = DurationRule{Min: 0, Max: 90 * 24 * time.Hour}

// chooses reports whether the policy snapshots the disk of that device name.
func (p *SnapshotPolicy) chooses(device string) bool {
	return p != nil && (len(p.Disks) == 0 || slices.Contains(p.Disks, device))
}

// SnapshotOp is one snapshot an operation takes, puts back or deletes.
type SnapshotOp struct {
	DeviceName string
	// Volume is the snapshotted volume's name in the group's pool.
	Volume string
	// Tag is the snapshot's name inside the volume.
	Tag string
	// Revision is the template revision the member had when the snapshot was taken; TakenAt
	// when the plan that took it was made (Unix milliseconds).
	Revision string
	TakenAt  int64
	// Superseded marks a deletion of a snapshot an unfinished rollout replaced (superseded),
	// not one past its retention.
	Superseded bool
}

// SnapshotTagPrefix starts the name of every snapshot the provider takes.
const SnapshotTagPrefix = "virt-"

// snapshotTag names the snapshot of a member's disk (device) on template revision rev taken by a
// plan made at now: unique per rollout and per disk (a live deletion through the member's QEMU
// deletes the tag from every disk that has it), and telling a human with `qemu-img snapshot -l`
// what it is.
func snapshotTag(rev, device string, now time.Time) string {
	return fmt.Sprintf("%s%s-%d-%s", SnapshotTagPrefix, rev, now.Unix(), device)
}

// snapshotOps are the snapshots a restart or a replacement of the member takes: each chosen
// preserved disk the group made, when the step changes the member's template. A heal or a member
// action keeps the template and takes none; nor does a rollback, which is never rolled back.
func snapshotOps(s GroupState, o Observed, st Step, env Env) []SnapshotOp {
	sp := s.Group.Policy.Snapshot
	if sp == nil || st.Revision == "" || st.Revision == o.Instance.TemplateRevision || o.Unmanaged {
		return nil
	}
	var out []SnapshotOp
	for _, d := range o.Instance.Current.Disks {
		if !d.Preserved || !sp.chooses(d.DeviceName) || d.Source == "" {
			continue
		}
		if len(s.Listed) > 0 && !s.Inventory.Has(o.Host, d.Source) {
			// Not the group's: its bytes are not the group's to write a snapshot into.
			continue
		}
		if !slices.ContainsFunc(o.Attached, func(a DesiredDisk) bool { return a.Source == d.Source }) {
			continue
		}
		out = append(out, SnapshotOp{DeviceName: d.DeviceName, Volume: d.Source, Tag: snapshotTag(o.Instance.TemplateRevision, d.DeviceName, env.Now),
			Revision: o.Instance.TemplateRevision, TakenAt: env.Now.UnixMilli()})
	}
	return out
}

// snapshotsOf are the snapshots the inventory holds of the volume on host, oldest first.
func (inv Inventory) snapshotsOf(host, volume string) []Made {
	var out []Made
	for _, m := range inv.Items {
		if m.Kind == MadeSnapshot && HostOf(m.Host) == HostOf(host) && m.Name == volume {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Made) int { return int(a.TakenAt - b.TakenAt) })
	return out
}

// Snapshots are the snapshots the inventory holds of the member's volumes, oldest first.
func (inv Inventory) Snapshots(member string) []Made {
	var out []Made
	for _, m := range inv.Items {
		if m.Kind == MadeSnapshot && volumeOf(member, m.Name) {
			out = append(out, m)
		}
	}
	slices.SortStableFunc(out, func(a, b Made) int {
		if a.TakenAt != b.TakenAt {
			return int(a.TakenAt - b.TakenAt)
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out
}

// KeepSnapshots is the inventory with every snapshot an apply just confirmed dated ready at now,
// the end of the apply: its members were ready then, and the retention counts from it.
func (inv Inventory) KeepSnapshots(now time.Time) Inventory {
	out := Inventory{Kept: inv.Kept, Items: slices.Clone(inv.Items)}
	for i, m := range out.Items {
		if m.Kind == MadeSnapshot && m.Confirmed && m.ReadyAt == 0 {
			out.Items[i].ReadyAt = now.UnixMilli()
		}
	}
	return out
}

// snapshotRoom checks, before anything of the member stops, that the pool has room for the
// snapshots the operation takes.
func (b *taskBuilder) snapshotRoom() {
	if len(b.op.Snapshots) > 0 {
		b.add(Task{Kind: TaskSnapshotRoom, Snapshots: b.op.Snapshots})
	}
}

// snapshots takes the operation's snapshots, the member stopped, then deletes the older settled
// snapshots of the same volumes: the new one is the restore point from now on. An older snapshot
// that is not settled (ReadyAt 0: no apply succeeded since it was taken, as after a rollout that
// failed or a rollback that was cut off) is kept: it may hold the only copy of the data from
// before its rollout, which the member's disk no longer has. The first apply that succeeds
// settles it (KeepSnapshots), and its retention then counts.
func (b *taskBuilder) snapshots() {
	for _, sn := range b.op.Snapshots {
		b.add(Task{Kind: TaskSnapshot, Snapshot: sn})
	}
	for _, sn := range b.op.Snapshots {
		for _, old := range b.s.Inventory.snapshotsOf(b.op.Host, sn.Volume) {
			if old.Tag != sn.Tag && old.ReadyAt != 0 {
				b.add(Task{Kind: TaskDeleteSnapshot, Snapshot: SnapshotOp{DeviceName: sn.DeviceName, Volume: old.Name, Tag: old.Tag, Revision: old.Revision, TakenAt: old.TakenAt}})
			}
		}
	}
}

// reverts puts the member's disks back to snapshots, the member stopped and before it starts: a
// rollback's, to those the rollout took, before the old template starts; a restore's, to those
// the user asked for. A snapshot a rollout did not reach (it failed before the member stopped) is
// not there, and the disk was not touched: a rollback's revert is Optional. A restore's is not:
// a snapshot gone since (deleted by hand) fails it, naming the snapshot.
func (b *taskBuilder) reverts() {
	for _, sn := range b.op.Reverts {
		b.add(Task{Kind: TaskRevertSnapshot, Snapshot: sn, Optional: b.op.Rollback})
	}
}

// forwardSnapshots are the snapshots the operation of a rollout took, for its rollback.
func forwardSnapshots(op Operation) []SnapshotOp {
	var out []SnapshotOp
	for _, t := range op.Tasks {
		if t.Kind == TaskSnapshot {
			out = append(out, t.Snapshot)
		}
	}
	return out
}

// expiredSnapshots are the snapshots of the member's volumes the inventory keeps past their
// retention at now (the policy's, or the default one without a snapshot block). One no apply has
// settled (ReadyAt 0: a rollout that failed, or was cut off) is kept: it may be the only copy of
// the data before a failed upgrade; the first apply that succeeds settles it. With them are the
// settled snapshots an unfinished rollout replaced (superseded).
func expiredSnapshots(s GroupState, o Observed, now time.Time) []SnapshotOp {
	if o.Unknown {
		return nil
	}
	var out []SnapshotOp
	snaps := s.Inventory.Snapshots(o.Name)
	for _, m := range snaps {
		if HostOf(m.Host) != HostOf(o.Host) {
			continue
		}
		expired := m.ReadyAt != 0 && now.UnixMilli() >= s.Group.Policy.KeepUntil(m.ReadyAt)
		replaced := superseded(snaps, m)
		if !expired && !replaced {
			continue
		}
		out = append(out, SnapshotOp{DeviceName: DeviceOf(o.Name, m.Name), Volume: m.Name, Tag: m.Tag, Revision: m.Revision, TakenAt: m.TakenAt, Superseded: replaced && !expired})
	}
	return out
}

// superseded reports whether the inventory holds an intent of a newer snapshot of m's volume: a
// rollout that did not finish (it failed, rolled back or not, or was cut off) after it wrote the
// intent. A rollout deletes the older snapshots of a volume as soon as it has taken the new one,
// and only a rollout that finishes writes its record with them gone (a failed one keeps the
// record of its start, intents and all): its record still holds m while its volume may hold m no
// more (found by make chaos's snapshot scenario: the data source showed such snapshots until
// their retention deleted them). The next plan deletes m again, which finishes what the rollout
// did (a deletion of a snapshot already gone does nothing). Had the rollout stopped before it
// took the new one, the member was not changed yet (its snapshot comes before its new template),
// and m was only an earlier restore point, which that rollout replaces when it runs again.
//
// Only a settled m is: a rollout keeps an unsettled one (snapshots). The newer one is not settled
// either, as no apply succeeded since: it may be an intent, or confirmed by recovered from the
// volume's tags.
func superseded(snaps []Made, m Made) bool {
	if m.ReadyAt == 0 {
		return false
	}
	return slices.ContainsFunc(snaps, func(n Made) bool {
		return n.ReadyAt == 0 && HostOf(n.Host) == HostOf(m.Host) && n.Name == m.Name && n.Tag != m.Tag && n.TakenAt > m.TakenAt
	})
}

// UnsettledSnapshots are the volumes, by host (HostOf), that hold a snapshot of the inventory no
// apply settled: an intent a cut-off run may or may not have taken, or a snapshot of a rollout
// that failed, which a rollout keeps and a user may delete by hand. The observation reads their
// tags (Env.SnapshotTags); a settled snapshot is only deleted, never needed, so its volume is
// not read.
func (inv Inventory) UnsettledSnapshots() map[string][]string {
	out := map[string][]string{}
	for _, m := range inv.Items {
		h := HostOf(m.Host)
		if m.Kind == MadeSnapshot && m.ReadyAt == 0 && !slices.Contains(out[h], m.Name) {
			out[h] = append(out[h], m.Name)
		}
	}
	for h := range out {
		slices.Sort(out[h])
	}
	return out
}

// inVolume is the snapshot m settled against what its volume shows (recovered): gone with a
// volume the listing shows gone; where its volume's tags were read, kept (and confirmed) only when
// they hold its tag: an intent of a snapshot a cut-off run never took, or a snapshot deleted by
// hand, is dropped. A volume not read keeps it as it is.
func (m Made) inVolume(volumeGone bool, tags map[string]map[string][]string) (Made, bool) {
	if volumeGone {
		return m, false
	}
	read, ok := tags[HostOf(m.Host)][m.Name]
	if !ok {
		return m, true
	}
	if !slices.Contains(read, m.Tag) {
		return m, false
	}
	m.Confirmed = true
	return m, true
}

// DeviceOf is the device name of the member's own volume ("db-1-data.qcow2": "data").
func DeviceOf(member, volume string) string {
	stem, _ := strings.CutSuffix(volume, "."+VolumeFormat)
	device, _ := strings.CutPrefix(stem, member+"-")
	return device
}

// droppedWhy is what the plan shows of a member whose snapshots past their retention, or
// replaced by an unfinished rollout's (superseded), it deletes.
func droppedWhy(drops []SnapshotOp) string {
	var expired, replaced []string
	for _, d := range drops {
		if d.Superseded {
			replaced = append(replaced, d.Volume+"@"+d.Tag)
		} else {
			expired = append(expired, d.Volume+"@"+d.Tag)
		}
	}
	var why []string
	if len(expired) > 0 {
		why = append(why, "snapshots past their retention deleted ("+strings.Join(expired, ", ")+")")
	}
	if len(replaced) > 0 {
		why = append(why, "snapshots an unfinished rollout replaced deleted ("+strings.Join(replaced, ", ")+")")
	}
	return strings.Join(why, "; ")
}

// dropSnapshots deletes the step's snapshots past their retention: through the member's QEMU
// when it is up (it holds the volume's file), else through the volume. A restart or a
// replacement runs it with the member stopped.
func (b *taskBuilder) dropSnapshots() {
	st := b.op.Step
	if len(st.DropSnapshots) == 0 {
		return
	}
	live := false
	switch b.op.Kind {
	case OpMark, OpPower, OpLive:
		live = b.op.Observed == StatusRunning || b.op.Observed == StatusPaused || b.op.Observed == StatusSuspended
	default:
	}
	for _, sn := range st.DropSnapshots {
		if slices.ContainsFunc(b.op.Snapshots, func(t SnapshotOp) bool { return t.Volume == sn.Volume }) {
			// The operation's own snapshot of the volume deletes it (snapshots), once taken.
			continue
		}
		b.add(Task{Kind: TaskDeleteSnapshot, Snapshot: sn, Live: live})
	}
}

// dropReplaced deletes the snapshots of the member's volumes an unfinished rollout replaced
// (superseded), through the volumes: the member is being made, not running. A member made again
// (a rollout cut off between its undefinition and its definition) has no step of its own whose
// DropSnapshots would delete them, and the plan after the creation would (found by make chaos's
// snapshot scenario).
func (b *taskBuilder) dropReplaced() {
	snaps := b.s.Inventory.Snapshots(b.op.Name)
	for _, m := range snaps {
		if HostOf(m.Host) != HostOf(b.op.Host) || !superseded(snaps, m) {
			continue
		}
		b.add(Task{Kind: TaskDeleteSnapshot, Snapshot: SnapshotOp{DeviceName: DeviceOf(b.op.Name, m.Name), Volume: m.Name, Tag: m.Tag,
			Revision: m.Revision, TakenAt: m.TakenAt, Superseded: true}})
	}
}

// KeepUntil is when a snapshot whose apply ended at readyAt (Unix milliseconds) has been kept
// for the policy's retention, in Unix milliseconds.
func (p UpdatePolicy) KeepUntil(readyAt int64) int64 {
	retention := DefaultSnapshotRetention
	if p.Snapshot != nil {
		retention = p.Snapshot.Retention
	}
	return readyAt + retention.Milliseconds()
}

// restore is what a restore action (MemberRestore) puts the member's disks back to: each disk's
// newest snapshot, the state of the disk when its last rollout stopped the member. A volume
// holds more than one only when a rollout kept an unsettled older one (snapshots); that one is
// put back by hand (the guide says how).
func (a *memberAction) restore(s GroupState, o Observed) []SnapshotOp {
	if a == nil || a.kind != MemberRestore || !a.names[o.Name] {
		return nil
	}
	var out []SnapshotOp
	newest := map[string]int{}
	for _, m := range s.Inventory.Snapshots(o.Name) {
		if HostOf(m.Host) != HostOf(o.Host) {
			continue
		}
		sn := SnapshotOp{DeviceName: DeviceOf(o.Name, m.Name), Volume: m.Name, Tag: m.Tag, Revision: m.Revision, TakenAt: m.TakenAt}
		if i, ok := newest[m.Name]; ok {
			// Snapshots lists oldest first: a later one of the volume is newer.
			out[i] = sn
			continue
		}
		newest[m.Name] = len(out)
		out = append(out, sn)
	}
	return out
}

// snapshotHelpers marks the deletions of volumes the inventory holds snapshots of: a snapshot
// call on such a volume cut off by a kill leaves its helper domain, which only a later snapshot
// call on the volume removes, and there is none once the volume is gone.
func (s GroupState) snapshotHelpers(op *Operation) {
	var mark func(tasks []Task)
	mark = func(tasks []Task) {
		for i := range tasks {
			if tasks[i].Kind == TaskDeleteVolume && len(s.Inventory.snapshotsOf(taskHost(*op, tasks[i]), tasks[i].Volume.Volume)) > 0 {
				tasks[i].DropHelper = true
			}
			mark(tasks[i].Otherwise)
		}
	}
	mark(op.Early)
	mark(op.Tasks)
}
