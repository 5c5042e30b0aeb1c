package libvirt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The snapshot tests work on qcow2 volumes of the system daemon's pool virt, named tfacc-snap-*,
// and read the files with qemu-img and qemu-io as root, as the checks of a member's data do.

const snapPool = "virt"

// snapVolume makes a qcow2 volume of sizeMiB in snapPool, deleted (with its helper, if a failed
// call left one) when the test ends, and returns its path.
func snapVolume(t *testing.T, b *Backend, name string, sizeMiB int64) string {
	t.Helper()
	ctx := context.Background()
	if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: snapPool, Name: name, SizeMiB: sizeMiB, Fresh: true}); err != nil {
		t.Fatalf("create volume %s: %v", name, err)
	}
	t.Cleanup(func() {
		c := rawConn(b)
		if d, err := c.l.DomainLookupByName(helperName(name)); err == nil {
			t.Errorf("the snapshot helper %s was left defined", d.Name)
			_ = c.undefineHelper(d)
		}
		if err := b.DeleteVolume(ctx, snapPool, name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
	})
	v, err := b.LookupVolume(ctx, snapPool, name)
	if err != nil {
		t.Fatal(err)
	}
	return v.Path
}

func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// writeAt writes data into the qcow2 image at offset, as a guest would have.
func writeAt(t *testing.T, path string, offset int64, data []byte) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(src, data, 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, "qemu-io", "-f", "qcow2", "-c", fmt.Sprintf("write -s %s %d %d", src, offset, len(data)), path)
}

// region is a range of a volume's guest-visible bytes.
type region struct{ offset, length int64 }

// regionSums returns the sha256 of each region's bytes as the guest sees them (qemu-img's raw
// conversion of that range): hashing a whole 10 GiB disk takes a minute here.
func regionSums(t *testing.T, path string, regions []region) []string {
	t.Helper()
	var out []string
	for _, r := range regions {
		dst := filepath.Join(t.TempDir(), "region.raw")
		run(t, "qemu-img", "convert", "-U", "--image-opts",
			fmt.Sprintf("driver=raw,offset=%d,size=%d,file.driver=qcow2,file.file.filename=%s", r.offset, r.length, path), "-O", "raw", dst)
		data, err := os.ReadFile(dst)
		if err != nil {
			t.Fatal(err)
		}
		if int64(len(data)) != r.length {
			t.Fatalf("region %+v: read %d bytes", r, len(data))
		}
		h := sha256.Sum256(data)
		out = append(out, hex.EncodeToString(h[:]))
	}
	return out
}

// fileTags returns the tags of the image's qcow2 snapshots as qemu-img lists them.
func fileTags(t *testing.T, path string) []string {
	t.Helper()
	var info struct {
		Snapshots []struct {
			Name string `json:"name"`
		} `json:"snapshots"`
	}
	if err := json.Unmarshal([]byte(run(t, "qemu-img", "info", "-U", "--output=json", path)), &info); err != nil {
		t.Fatal(err)
	}
	var tags []string
	for _, s := range info.Snapshots {
		tags = append(tags, s.Name)
	}
	return tags
}

// noHelper fails the test when the volume's helper domain is defined.
func noHelper(t *testing.T, b *Backend, volume string) {
	t.Helper()
	if _, err := rawConn(b).l.DomainLookupByName(helperName(volume)); err == nil {
		t.Errorf("the snapshot helper of %s is still defined", volume)
	}
}

// TestAccSnapVolume_bytes: a snapshot of a 10 GiB volume, written over after, is reverted to
// exactly its bytes (sha256 of the written regions and of one written only after); the snapshot
// stays after the revert; taken twice it is there once; deleted, qemu-img lists none, and a
// second deletion, a revert to it and a deletion on a missing volume say what they should. No
// helper domain is left after any call.
func TestAccSnapVolume_bytes(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	name := "tfacc-snap-bytes-" + testSuffix() + ".qcow2"
	path := snapVolume(t, b, name, 10<<10)
	const mib = 1 << 20
	regions := []region{{0, 2 * mib}, {3 << 30, 2 * mib}, {6 << 30, 2 * mib}, {10<<30 - 2*mib, 2 * mib}}
	for _, r := range []region{regions[0], regions[1], regions[3]} {
		writeAt(t, path, r.offset, randomBytes(t, int(r.length)))
	}
	before := regionSums(t, path, regions)

	if err := b.SnapshotVolume(ctx, snapPool, name, "s1"); err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	noHelper(t, b, name)
	if diff := cmp.Diff([]string{"s1"}, fileTags(t, path)); diff != "" {
		t.Errorf("tags after the snapshot (-want +got):\n%s", diff)
	}
	for _, r := range regions[:3] {
		writeAt(t, path, r.offset, randomBytes(t, int(r.length)))
	}
	written := regionSums(t, path, regions)
	for i := range 3 {
		if written[i] == before[i] {
			t.Fatalf("region %d did not change when written over", i)
		}
	}

	if err := b.RevertVolume(ctx, snapPool, name, "s1"); err != nil {
		t.Fatalf("revert: %v", err)
	}
	noHelper(t, b, name)
	if diff := cmp.Diff(before, regionSums(t, path, regions)); diff != "" {
		t.Errorf("sha256 of the regions after the revert (-at the snapshot +after):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"s1"}, fileTags(t, path)); diff != "" {
		t.Errorf("tags after the revert (-want +got):\n%s", diff)
	}

	// Taken again (a run cut off after the snapshot and before its record), twice: one s1.
	for range 2 {
		if err := b.SnapshotVolume(ctx, snapPool, name, "s1"); err != nil {
			t.Fatalf("snapshot again: %v", err)
		}
	}
	if err := b.SnapshotVolume(ctx, snapPool, name, "s2"); err != nil {
		t.Fatalf("snapshot s2: %v", err)
	}
	if diff := cmp.Diff([]string{"s1", "s2"}, fileTags(t, path)); diff != "" {
		t.Errorf("tags after snapshot s1 twice, then s2 (-want +got):\n%s", diff)
	}
	// VolumeSnapshots reads the same table through libvirt (what a plan reads of a volume with
	// an unsettled snapshot).
	if got, err := b.VolumeSnapshots(ctx, snapPool, name); err != nil || !cmp.Equal([]string{"s1", "s2"}, got) {
		t.Errorf("VolumeSnapshots = %v, %v; want [s1 s2]", got, err)
	}
	if _, err := b.VolumeSnapshots(ctx, snapPool, "tfacc-snap-none.qcow2"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("VolumeSnapshots of a missing volume: %v, want ErrNotFound", err)
	}

	if err := b.DeleteVolumeSnapshot(ctx, snapPool, name, "s1", ""); err != nil {
		t.Fatalf("delete: %v", err)
	}
	noHelper(t, b, name)
	if diff := cmp.Diff([]string{"s2"}, fileTags(t, path)); diff != "" {
		t.Errorf("tags after deleting s1 (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, regionSums(t, path, regions)); diff != "" {
		t.Errorf("the deletion changed the volume's bytes (-before +after):\n%s", diff)
	}
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, name, "s1", ""); err != nil {
		t.Errorf("delete a deleted snapshot: %v", err)
	}
	if err := b.RevertVolume(ctx, snapPool, name, "s1"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("revert to a deleted snapshot: %v, want ErrNotFound", err)
	}
	if err := b.RevertVolume(ctx, snapPool, "tfacc-snap-none.qcow2", "s1"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("revert a missing volume: %v, want ErrNotFound", err)
	}
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, "tfacc-snap-none.qcow2", "s1", ""); err != nil {
		t.Errorf("delete a snapshot of a missing volume: %v", err)
	}
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, name, "s2", ""); err != nil {
		t.Fatalf("delete s2: %v", err)
	}
	if tags := fileTags(t, path); len(tags) != 0 {
		t.Errorf("tags after deleting both: %v", tags)
	}
}

// TestAccSnapVolume_helperLeftovers: a helper a cut-off run left (with its marker for the
// volume, and the metadata of the snapshot it took) is undefined and its snapshot replaced; a
// domain of the helper's name without the marker, or with one for another volume, is left as it
// is and the call fails naming it.
func TestAccSnapVolume_helperLeftovers(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	c := rawConn(b)
	name := "tfacc-snap-left-" + testSuffix() + ".qcow2"
	path := snapVolume(t, b, name, 64)

	// A run killed after libvirt took k1 and before it removed the snapshot's metadata.
	doc, err := helperXML(snapPool, name, randomUUID())
	if err != nil {
		t.Fatal(err)
	}
	d, err := c.l.DomainDefineXMLFlags(doc, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.l.DomainSnapshotCreateXML(d, `<domainsnapshot><name>k1</name></domainsnapshot>`, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.SnapshotVolume(ctx, snapPool, name, "k1"); err != nil {
		t.Fatalf("snapshot with a leftover helper: %v", err)
	}
	noHelper(t, b, name)
	// A leftover helper of a volume about to be deleted goes with DropSnapshotHelper; none is
	// not an error.
	if _, err = c.l.DomainDefineXMLFlags(doc, 0); err != nil {
		t.Fatal(err)
	}
	if err := b.DropSnapshotHelper(ctx, snapPool, name); err != nil {
		t.Fatalf("drop a leftover helper: %v", err)
	}
	noHelper(t, b, name)
	if err := b.DropSnapshotHelper(ctx, snapPool, name); err != nil {
		t.Fatalf("drop a helper that is not there: %v", err)
	}
	if diff := cmp.Diff([]string{"k1"}, fileTags(t, path)); diff != "" {
		t.Errorf("tags (-want +got):\n%s", diff)
	}

	for _, tc := range []struct{ name, metadata string }{
		{name: "no marker"},
		{name: "marker of another volume", metadata: `<metadata><virt:snapshot-helper xmlns:virt="https://virtfleet.dev/xmlns/virt/1"><virt:pool>virt</virt:pool><virt:volume>other.qcow2</virt:volume></virt:snapshot-helper></metadata>`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			foreign := fmt.Sprintf(`<domain type='qemu'><name>%s</name>%s<memory unit='MiB'>16</memory><os><type arch='x86_64'>hvm</type></os></domain>`, helperName(name), tc.metadata)
			fd, err := c.l.DomainDefineXMLFlags(foreign, 0)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := c.l.DomainUndefineFlags(fd, 0); err != nil {
					t.Errorf("undefine %s: %v", fd.Name, err)
				}
			})
			for op, call := range map[string]func() error{
				"snapshot": func() error { return b.SnapshotVolume(ctx, snapPool, name, "k2") },
				"revert":   func() error { return b.RevertVolume(ctx, snapPool, name, "k1") },
				"delete":   func() error { return b.DeleteVolumeSnapshot(ctx, snapPool, name, "k1", "") },
			} {
				err := call()
				if err == nil || !strings.Contains(err.Error(), helperName(name)) || !strings.Contains(err.Error(), "left untouched") {
					t.Errorf("%s with a foreign domain of the helper's name: %v; want an error naming it", op, err)
				}
			}
			if err := b.DropSnapshotHelper(ctx, snapPool, name); err != nil {
				t.Errorf("drop the helper with a foreign domain of its name: %v; want it left, and no error", err)
			}
			still, err := c.l.DomainLookupByName(helperName(name))
			if err != nil || still.UUID != fd.UUID {
				t.Errorf("the foreign domain is gone or replaced: %v %v", still, err)
			}
			if diff := cmp.Diff([]string{"k1"}, fileTags(t, path)); diff != "" {
				t.Errorf("tags (-want +got):\n%s", diff)
			}
		})
	}
}

// TestAccSnapVolume_raw: a raw volume holds no snapshot, and the calls say so.
func TestAccSnapVolume_raw(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	name := "tfacc-snap-raw-" + testSuffix() + ".img"
	sourceVolumeFile(t, b, name, randomBytes(t, 1<<20))
	for op, err := range map[string]error{
		"snapshot": b.SnapshotVolume(ctx, snapPool, name, "s1"),
		"revert":   b.RevertVolume(ctx, snapPool, name, "s1"),
	} {
		if err == nil || !strings.Contains(err.Error(), "only qcow2 volumes hold snapshots") || !strings.Contains(err.Error(), "raw") {
			t.Errorf("%s of a raw volume: %v", op, err)
		}
	}
	noHelper(t, b, name)
}

// TestAccSnapVolume_liveDelete: a snapshot of a disk of a running domain (one with no OS:
// SeaBIOS runs on), shaped as a member is (a boot disk, the data disk, a raw seed drive), is
// deleted through its QEMU; the domain runs on with the same ID, the boot disk's snapshot of
// another tag stays (QEMU's delvm would take one of the same tag too: the interface says so),
// and no snapshot metadata is left on the domain.
func TestAccSnapVolume_liveDelete(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	c := rawConn(b)
	sfx := testSuffix()
	boot, data := "tfacc-snap-live-boot-"+sfx+".qcow2", "tfacc-snap-live-data-"+sfx+".qcow2"
	bootPath, dataPath := snapVolume(t, b, boot, 64), snapVolume(t, b, data, 64)
	writeAt(t, dataPath, 0, randomBytes(t, 1<<20))
	if err := b.SnapshotVolume(ctx, snapPool, data, "rollout-1"); err != nil {
		t.Fatal(err)
	}
	if err := b.SnapshotVolume(ctx, snapPool, boot, "boot-keep"); err != nil {
		t.Fatal(err)
	}
	seed := "tfacc-snap-live-seed-" + sfx + ".img"
	sourceVolumeFile(t, b, seed, randomBytes(t, 1<<20))
	dom := "tfacc-snap-live-" + sfx
	spec := backend.DomainSpec{Name: dom, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64},
		Disks: []backend.Disk{{DeviceName: "boot", Pool: snapPool, Volume: boot}, {DeviceName: "data", Pool: snapPool, Volume: data}},
		Seed:  &backend.Disk{DeviceName: "seed", Pool: snapPool, Volume: seed}}
	if err := b.DefineDomain(ctx, spec); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.UndefineDomain(ctx, dom); err != nil {
			t.Errorf("undefine %s: %v", dom, err)
		}
	})
	if err := b.StartDomain(ctx, dom); err != nil {
		t.Fatal(err)
	}
	d, err := c.l.DomainLookupByName(dom)
	if err != nil {
		t.Fatal(err)
	}

	// A running domain's QEMU holds the file: a snapshot or a revert is refused, and the bytes
	// and snapshots stay.
	if err := b.SnapshotVolume(ctx, snapPool, data, "while-running"); err == nil {
		t.Error("a snapshot of a running domain's volume succeeded")
	} else {
		t.Logf("snapshot of a running domain's volume: %v", err)
	}
	if err := b.RevertVolume(ctx, snapPool, data, "rollout-1"); err == nil {
		t.Error("a revert of a running domain's volume succeeded")
	} else {
		t.Logf("revert of a running domain's volume: %v", err)
	}
	if diff := cmp.Diff([]string{"rollout-1"}, fileTags(t, dataPath)); diff != "" {
		t.Errorf("the data disk's tags after the refused calls (-want +got):\n%s", diff)
	}
	noHelper(t, b, data)

	start := time.Now()
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, data, "rollout-1", dom); err != nil {
		t.Fatalf("delete live: %v", err)
	}
	t.Logf("live deletion took %s", time.Since(start))
	after, err := c.l.DomainLookupByName(dom)
	if err != nil {
		t.Fatal(err)
	}
	state, _, err := c.l.DomainGetState(after, 0)
	if err != nil {
		t.Fatal(err)
	}
	if after.ID != d.ID || state != int32(1) {
		t.Errorf("the domain is not running on as it was: id %d (was %d), state %d", after.ID, d.ID, state)
	}
	if tags := fileTags(t, dataPath); len(tags) != 0 {
		t.Errorf("the data disk still holds %v", tags)
	}
	if diff := cmp.Diff([]string{"boot-keep"}, fileTags(t, bootPath)); diff != "" {
		t.Errorf("the boot disk's tags (-want +got):\n%s", diff)
	}
	if n, err := c.l.DomainSnapshotNum(after, 0); err != nil || n != 0 {
		t.Errorf("the domain has %d snapshots' metadata left (%v)", n, err)
	}
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, data, "rollout-1", dom); err != nil {
		t.Errorf("delete live again: %v", err)
	}

	// Not named, the running domain keeps qemu-img out, and the call says so.
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, boot, "boot-keep", ""); err == nil || !strings.Contains(err.Error(), "still holds 1 snapshots") {
		t.Errorf("deletion without naming the running domain: %v", err)
	}
	// Named but stopped since: deleted as of a stopped domain's volume.
	if err := b.StopDomain(ctx, dom); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteVolumeSnapshot(ctx, snapPool, boot, "boot-keep", dom); err != nil {
		t.Errorf("deletion naming a stopped domain: %v", err)
	}
	if tags := fileTags(t, bootPath); len(tags) != 0 {
		t.Errorf("the boot disk still holds %v", tags)
	}
}

// TestAccSnapVolume_time records how long a snapshot takes of a 64 MiB volume and of a 10 GiB
// volume with 1 GiB written, for the record of issue 46 (no threshold: timings are not tests).
func TestAccSnapVolume_time(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	sfx := testSuffix()
	small, large := "tfacc-snap-t64m-"+sfx+".qcow2", "tfacc-snap-t10g-"+sfx+".qcow2"
	snapVolume(t, b, small, 64)
	largePath := snapVolume(t, b, large, 10<<10)
	run(t, "qemu-io", "-f", "qcow2", "-c", "write -P 0x5a 0 1G", largePath)
	for _, v := range []string{small, large} {
		space, err := b.VolumeSpace(ctx, snapPool, v)
		if err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		if err := b.SnapshotVolume(ctx, snapPool, v, "t1"); err != nil {
			t.Fatal(err)
		}
		took := time.Since(start)
		start = time.Now()
		if err := b.DeleteVolumeSnapshot(ctx, snapPool, v, "t1", ""); err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: capacity %d, allocation %d bytes (pool has %d free): SnapshotVolume %s, DeleteVolumeSnapshot %s",
			v, space.CapacityBytes, space.AllocationBytes, space.PoolAvailableBytes, took, time.Since(start))
		if space.AllocationBytes == 0 || space.CapacityBytes == 0 || space.PoolAvailableBytes == 0 {
			t.Errorf("VolumeSpace of %s: %+v", v, space)
		}
	}
}
