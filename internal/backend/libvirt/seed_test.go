package libvirt

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccDeleteVolumeWithoutLookups deletes a volume in one call, and treats a volume or a pool
// that is not there as deleted.
func TestAccDeleteVolumeWithoutLookups(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, "qemu:///system")
	const pool = "virt"
	name := "tfacc-bk-del-" + testSuffix() + ".qcow2"
	if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: pool, Name: name, SizeMiB: 1}); err != nil {
		t.Fatal(err)
	}
	if err := b.DeleteVolume(ctx, pool, name); err != nil {
		t.Fatalf("delete: %v", err)
	}
	if _, err := b.LookupVolume(ctx, pool, name); !errors.Is(err, backend.ErrNotFound) {
		t.Fatalf("the volume is still there (lookup: %v)", err)
	}
	if err := b.DeleteVolume(ctx, pool, name); err != nil {
		t.Fatalf("deleting a volume that is gone: %v", err)
	}
	if err := b.DeleteVolume(ctx, "tfacc-no-such-pool", name); err != nil {
		t.Fatalf("deleting from a pool that is not there: %v", err)
	}
}

// TestAccWriteSeedReplacesTheVolumeWhole writes a seed, then a shorter one under the same name:
// the volume holds exactly the new bytes.
func TestAccWriteSeedReplacesTheVolumeWhole(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, "qemu:///system")
	const pool = "virt"
	name := "tfacc-bk-seed-" + testSuffix() + ".iso"
	t.Cleanup(func() { _ = b.DeleteVolume(ctx, pool, name) })
	long := bytes.Repeat([]byte("long seed "), 1000)
	short := []byte("short seed")
	for _, data := range [][]byte{long, short} {
		if err := b.WriteSeed(ctx, pool, name, data); err != nil {
			t.Fatalf("write seed: %v", err)
		}
		v, err := b.LookupVolume(ctx, pool, name)
		if err != nil {
			t.Fatal(err)
		}
		if v.CapacityBytes != uint64(len(data)) {
			t.Fatalf("volume of %d bytes, want %d", v.CapacityBytes, len(data))
		}
	}
	var got bytes.Buffer
	vol, err := b.Raw().StorageVolLookupByPath(mustPath(t, b, pool, name))
	if err != nil {
		t.Fatal(err)
	}
	if err := b.Raw().StorageVolDownload(vol, &got, 0, 0, 0); err != nil {
		t.Fatalf("download: %v", err)
	}
	if !bytes.Equal(got.Bytes(), short) {
		t.Fatalf("the volume holds %q, want %q", got.Bytes(), short)
	}
}

func mustPath(t *testing.T, b *Backend, pool, name string) string {
	t.Helper()
	v, err := b.LookupVolume(context.Background(), pool, name)
	if err != nil {
		t.Fatal(err)
	}
	return v.Path
}

// TestAccReplaceSeed swaps a defined domain's seed: the new volume holds the new bytes (written
// on the upload's own connection) and is the one in the drive, and the backend's connection is
// the one it had (the upload did not run on it). A running domain's swap, whose eject needs a
// guest, is the provider's TestAccStatefulGroup_guestSeesItsSeed.
func TestAccReplaceSeed(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	sfx := testSuffix()
	name, seedA, seedB := "tfacc-rseed-"+sfx, "tfacc-rseed-"+sfx+"-a.iso", "tfacc-rseed-"+sfx+"-b.iso"
	first, second := []byte("instance-id: a\n"), []byte("instance-id: b, a longer seed\n")
	if err := b.WriteSeed(ctx, movePool, seedA, first); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, b, seedA)
	deleteAtEnd(t, b, seedB)
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, Seed: &backend.Disk{Pool: movePool, Volume: seedA}}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.UndefineDomain(ctx, name); err != nil {
			t.Errorf("undefine %s: %v", name, err)
		}
	})
	old := b.Raw()
	if err := b.ReplaceSeed(ctx, name, backend.Disk{Pool: movePool, Volume: seedB}, second); err != nil {
		t.Fatal(err)
	}
	got, err := b.ReadSeed(ctx, movePool, seedB)
	if err != nil || !bytes.Equal(got, second) {
		t.Errorf("seed %s: %q, %v; want %q", seedB, got, err, second)
	}
	ds, err := b.ListDomains(ctx, name)
	if err != nil || len(ds) != 1 || ds[0].Seed != seedB {
		t.Errorf("domain after the swap: %+v, %v; want its seed drive holding %s", ds, err, seedB)
	}
	if b.Raw() != old {
		t.Error("the backend's connection changed")
	}
}
