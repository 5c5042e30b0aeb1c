package libvirt

import (
	"context"
	"fmt"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestAccDiskFormat defines a domain with disks whose names do not say their format: QEMU must
// open each with the format libvirt records for the volume (a raw volume as raw, a qcow2 one as
// qcow2), whether the disk names the volume or its path, and the provider's own .qcow2 volumes as
// qcow2.
func TestAccDiskFormat(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, "qemu:///system")
	const pool = "virt"
	sfx := testSuffix()
	name := "tfacc-bk-fmt-" + sfx
	vols := map[string]string{ // volume name -> format it is made with
		name + "-raw.img":   "raw",
		name + "-qcow.img":  "qcow2",
		name + "-own.qcow2": "qcow2",
	}
	p, err := b.Raw().StoragePoolLookupByName(pool)
	if err != nil {
		t.Fatal(err)
	}
	for v, f := range vols {
		doc, err := (&libvirtxml.StorageVolume{Name: v, Capacity: &libvirtxml.StorageVolumeSize{Value: 1, Unit: "MiB"},
			Target: &libvirtxml.StorageVolumeTarget{Format: &libvirtxml.StorageVolumeTargetFormat{Type: f}}}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		if _, err := b.Raw().StorageVolCreateXML(p, doc, 0); err != nil {
			t.Fatalf("create %s volume %s: %v", f, v, err)
		}
		t.Cleanup(func() {
			if err := b.DeleteVolume(ctx, pool, v); err != nil {
				t.Errorf("clean up %s: %v", v, err)
			}
		})
	}
	rawPath, err := b.Raw().StorageVolGetPath(mustVol(t, b, pool, name+"-raw.img"))
	if err != nil {
		t.Fatal(err)
	}
	disks := []backend.Disk{
		{DeviceName: "raw", Pool: pool, Volume: name + "-raw.img"},
		{DeviceName: "qcow", Pool: pool, Volume: name + "-qcow.img"},
		{DeviceName: "own", Pool: pool, Volume: name + "-own.qcow2"},
		{DeviceName: "rawpath", Path: rawPath},
	}
	want := map[string]string{"raw": "raw", "qcow": "qcow2", "own": "qcow2", "rawpath": "raw"}
	if err := b.DefineDomain(ctx, backend.DomainSpec{Name: name, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}, Disks: disks}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.UndefineDomain(ctx, name); err != nil {
			t.Errorf("clean up %s: %v", name, err)
		}
	})
	d, err := b.Raw().DomainLookupByName(name)
	if err != nil {
		t.Fatal(err)
	}
	doc, err := b.Raw().DomainGetXMLDesc(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, x := range dom.Devices.Disks {
		if x.Driver != nil {
			got[x.Serial] = x.Driver.Type
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("driver types %v, want %v", got, want)
	}
}

func mustVol(t *testing.T, b *Backend, pool, name string) golibvirt.StorageVol {
	t.Helper()
	p, err := b.Raw().StoragePoolLookupByName(pool)
	if err != nil {
		t.Fatal(err)
	}
	v, err := b.Raw().StorageVolLookupByName(p, name)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
