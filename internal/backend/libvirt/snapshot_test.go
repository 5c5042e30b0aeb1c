package libvirt

import (
	"context"
	"encoding/binary"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHelperXML: the helper domain is the volume alone, of type qemu with 16 MiB, by pool and
// volume, with the marker naming them, escaped where XML needs it; its name drops ".qcow2".
func TestHelperXML(t *testing.T) {
	t.Parallel()
	got, err := helperXML("virt", "db-0-data.qcow2", "8d3c3b4e-5b1f-4d8e-9a55-0d6d5f0b7a01")
	if err != nil {
		t.Fatal(err)
	}
	want := `<domain type="qemu">
  <name>snapshot.db-0-data</name>
  <uuid>8d3c3b4e-5b1f-4d8e-9a55-0d6d5f0b7a01</uuid>
  <description>terraform-provider-virt: takes, reverts or deletes a snapshot of volume virt/db-0-data.qcow2; never started, undefined when done</description>
  <metadata><virt:snapshot-helper xmlns:virt="https://virtfleet.dev/xmlns/virt/1"><virt:pool>virt</virt:pool><virt:volume>db-0-data.qcow2</virt:volume></virt:snapshot-helper></metadata>
  <memory unit="MiB">16</memory>
  <os>
    <type arch="x86_64">hvm</type>
  </os>
  <devices>
    <disk type="volume" device="disk">
      <driver name="qemu" type="qcow2"></driver>
      <source pool="virt" volume="db-0-data.qcow2"></source>
      <target dev="vda" bus="virtio"></target>
    </disk>
    <memballoon model="none"></memballoon>
  </devices>
</domain>`
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helper XML (-want +got):\n%s", diff)
	}
}

// TestHelperMarker: the marker is read back for its own pool and volume (escaping included), a
// domain without one reads as none, and the member record's namespace sharing does not confuse
// the two: a member record is not a marker.
func TestHelperMarker(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		doc  string
		want *helperMarker
	}{
		{name: "helper", doc: mustHelperXML(t, "p&q", "a<b>.qcow2"), want: &helperMarker{Pool: "p&q", Volume: "a<b>.qcow2"}},
		{name: "no metadata", doc: `<domain type="qemu"><name>snapshot.x</name></domain>`},
		{name: "member record only", doc: `<domain type="qemu"><name>snapshot.x</name><metadata><virt:instance xmlns:virt="https://virtfleet.dev/xmlns/virt/1"><virt:group>g</virt:group></virt:instance></metadata></domain>`},
		{name: "other namespace", doc: `<domain type="qemu"><name>snapshot.x</name><metadata><o:snapshot-helper xmlns:o="urn:other"><o:pool>virt</o:pool></o:snapshot-helper></metadata></domain>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := markerOf(tc.doc)
			if err != nil {
				t.Fatal(err)
			}
			if got != nil {
				got.XMLName.Space, got.XMLName.Local = "", ""
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("marker (-want +got):\n%s", diff)
			}
		})
	}
}

func mustHelperXML(t *testing.T, pool, volume string) string {
	t.Helper()
	doc, err := helperXML(pool, volume, "8d3c3b4e-5b1f-4d8e-9a55-0d6d5f0b7a01")
	if err != nil {
		t.Fatal(err)
	}
	return doc
}

// TestHelperName: a '.' keeps helpers out of every group's member prefix.
func TestHelperName(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"db-0-data.qcow2": "snapshot.db-0-data", "raw.img": "snapshot.raw.img", "x": "snapshot.x"} {
		if got := helperName(in); got != want {
			t.Errorf("helperName(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSnapshotXML: the snapshot to take names the one disk, internal, without memory; the one
// to redefine adds the state, the creation time and the domain's definition verbatim, after the
// disks, as libvirt's REDEFINE reads it; names are escaped.
func TestSnapshotXML(t *testing.T) {
	t.Parallel()
	dom := `<domain type='qemu'><name>snapshot.v</name><uuid>8d3c3b4e-5b1f-4d8e-9a55-0d6d5f0b7a01</uuid></domain>`
	for _, tc := range []struct {
		name    string
		tag     string
		disk    string
		others  []string
		created int64
		domain  string
		want    string
	}{
		{
			name: "take", tag: "r3", disk: "vda",
			want: `<domainsnapshot><name>r3</name><memory snapshot="no"></memory><disks><disk name="vda" snapshot="internal"></disk></disks></domainsnapshot>`,
		},
		{
			name: "redefine on the helper", tag: "r3", disk: "vda", created: 1795975904, domain: dom,
			want: `<domainsnapshot><name>r3</name><state>shutoff</state><creationTime>1795975904</creationTime><memory snapshot="no"></memory><disks><disk name="vda" snapshot="internal"></disk></disks>` + dom + `</domainsnapshot>`,
		},
		{
			name: "redefine on a running member", tag: "a&b", disk: "sdb", created: 7, domain: dom,
			want: `<domainsnapshot><name>a&amp;b</name><state>shutoff</state><creationTime>7</creationTime><memory snapshot="no"></memory><disks><disk name="sdb" snapshot="internal"></disk></disks>` + dom + `</domainsnapshot>`,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := snapshotXML(tc.tag, tc.disk, tc.created, tc.domain)
			if err != nil {
				t.Fatal(err)
			}
			got = strings.Join(strings.Fields(strings.ReplaceAll(got, "\n", "")), "")
			want := strings.Join(strings.Fields(tc.want), "")
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("snapshot XML (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDiskOfVolume: the volume's disk is found by pool and volume, or by its file's path; a
// domain without it is an error.
func TestDiskOfVolume(t *testing.T) {
	t.Parallel()
	doc := `<domain type='qemu'><name>m</name><devices>
<disk type='file' device='disk'><source file='/p/boot.qcow2'/><target dev='sda' bus='scsi'/></disk>
<disk type='volume' device='disk'><source pool='virt' volume='data.qcow2'/><target dev='sdb' bus='scsi'/></disk>
<disk type='file' device='disk'><source file='/p/other.qcow2'/><target dev='sdc' bus='scsi'/></disk>
</devices></domain>`
	type result struct {
		Disk string
		Err  bool
	}
	for _, tc := range []struct {
		name, pool, volume, path string
		want                     result
	}{
		{name: "by volume", pool: "virt", volume: "data.qcow2", want: result{Disk: "sdb"}},
		{name: "by path", pool: "virt", volume: "other.qcow2", path: "/p/other.qcow2", want: result{Disk: "sdc"}},
		{name: "absent", pool: "virt", volume: "nope.qcow2", path: "/p/nope.qcow2", want: result{Err: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			disk, err := diskOfVolume(doc, tc.pool, tc.volume, tc.path)
			if diff := cmp.Diff(tc.want, result{Disk: disk, Err: err != nil}); diff != "" {
				t.Errorf("diskOfVolume (-want +got):\n%s (err %v)", diff, err)
			}
		})
	}
}

// snapshotEntry is one entry of a qcow2 snapshot table as QEMU writes it.
func snapshotEntry(id, name string, extra int) []byte {
	head := make([]byte, 40+extra)
	binary.BigEndian.PutUint16(head[12:], uint16(len(id)))
	binary.BigEndian.PutUint16(head[14:], uint16(len(name)))
	binary.BigEndian.PutUint32(head[36:], uint32(extra))
	e := slices.Concat(head, []byte(id), []byte(name))
	return append(e, make([]byte, (8-len(e)%8)%8)...)
}

// TestParseSnapshotTable: names are read entry by entry past extra data, IDs and padding; two
// snapshots of one tag are two; a table cut short says so rather than guessing.
func TestParseSnapshotTable(t *testing.T) {
	t.Parallel()
	var table []byte
	table = append(table, snapshotEntry("1", "r1", 24)...)
	table = append(table, snapshotEntry("2", "rollout-7", 16)...)
	table = append(table, snapshotEntry("13", "r1", 24)...)
	type result struct {
		Tags     []string
		Complete bool
	}
	for _, tc := range []struct {
		name  string
		table []byte
		nb    uint32
		want  result
	}{
		{name: "whole", table: table, nb: 3, want: result{Tags: []string{"r1", "rollout-7", "r1"}, Complete: true}},
		{name: "fewer than the table", table: table, nb: 1, want: result{Tags: []string{"r1"}, Complete: true}},
		{name: "cut in an entry", table: table[:len(table)-6], nb: 3, want: result{}},
		{name: "cut in a header", table: table[:20], nb: 1, want: result{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tags, complete, err := parseSnapshotTable(tc.table, tc.nb)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, result{Tags: tags, Complete: complete}); diff != "" {
				t.Errorf("parse (-want +got):\n%s", diff)
			}
		})
	}
}

// TestMissingSnapshot: qemu-img's answer to a revert to a tag the file lacks, as libvirt 9.0
// reports it, is a missing snapshot; other failures are not.
func TestMissingSnapshot(t *testing.T) {
	t.Parallel()
	for msg, want := range map[string]bool{
		"internal error: Child process (/usr/bin/qemu-img snapshot -a nope /var/lib/libvirt/virt-pool/v.qcow2) unexpected exit status 1: qemu-img: Could not apply snapshot 'nope': Failed to load snapshot: No such file or directory": true,
		"internal error: Child process (/usr/bin/qemu-img snapshot -a r1 /p/v.qcow2) unexpected exit status 1: qemu-img: Could not open '/p/v.qcow2': Failed to get \"write\" lock":                                                     false,
	} {
		if got := missingSnapshot(errString(msg)); got != want {
			t.Errorf("missingSnapshot(%q) = %v, want %v", msg, got, want)
		}
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestVolumeLocks: a second call on a volume waits for the first to unlock, and gives up with an
// error naming the volume when its context ends first; another volume does not wait.
func TestVolumeLocks(t *testing.T) {
	t.Parallel()
	var l volumeLocks
	ctx := context.Background()
	unlock, err := l.lock(ctx, "snapshot volume", "virt/a")
	if err != nil {
		t.Fatal(err)
	}
	other, err := l.lock(ctx, "snapshot volume", "virt/b")
	if err != nil {
		t.Fatalf("another volume waited: %v", err)
	}
	other()
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := l.lock(ended, "revert volume", "virt/a"); err == nil || !strings.Contains(err.Error(), "revert volume virt/a") {
		t.Errorf("lock of a held volume with an ended context: %v", err)
	}
	got := make(chan error, 1)
	go func() {
		u, err := l.lock(ctx, "delete snapshot", "virt/a")
		if err == nil {
			u()
		}
		got <- err
	}()
	unlock()
	if err := <-got; err != nil {
		t.Errorf("lock after the unlock: %v", err)
	}
}

// TestRetryStuck: a download cut off by its own bound is run again, on and on up to the
// attempts; one that fails otherwise, or whose caller's context ended, is not.
func TestRetryStuck(t *testing.T) {
	errOther := errors.New("no such volume")
	errBound := errors.New("bound")
	cases := map[string]struct {
		stuck     int   // the first runs that hang until their context ends
		fail      error // what the runs after them return
		cancelled bool  // the caller's context has ended
		wantRuns  int
		wantErr   error
	}{
		"first run succeeds":               {wantRuns: 1},
		"one stuck run, then success":      {stuck: 1, wantRuns: 2},
		"two stuck runs, then success":     {stuck: 2, wantRuns: 3},
		"stuck every time":                 {stuck: 3, wantRuns: 3, wantErr: context.DeadlineExceeded},
		"another error is not retried":     {fail: errOther, wantRuns: 1, wantErr: errOther},
		"caller's context ended: no rerun": {stuck: 1, cancelled: true, wantRuns: 1, wantErr: context.Canceled},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.cancelled {
				cancel()
			}
			runs := 0
			err := retryStuck(ctx, 3, time.Millisecond, errBound, func(ctx context.Context) error {
				runs++
				if runs <= c.stuck {
					<-ctx.Done()
					return ctx.Err()
				}
				return c.fail
			})
			if diff := cmp.Diff(c.wantRuns, runs); diff != "" {
				t.Errorf("runs (-want +got):\n%s", diff)
			}
			if !errors.Is(err, c.wantErr) && (err != nil || c.wantErr != nil) {
				t.Errorf("error %v, want %v", err, c.wantErr)
			}
		})
	}
}
