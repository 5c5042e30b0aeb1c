package libvirt

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestAccDeleteVolumeSnapshot_liveThroughAMemberWithOtherDisks: a snapshot of a running member's
// data disk is deleted through the member's QEMU when the member has other disks, a boot disk and
// a read-only cloud-init seed, as every member has. The live deletion used to redefine the
// snapshot's metadata with the other disks named snapshot "no", which libvirt 9.0 refuses for an
// internal snapshot ("disk 'sda' must use snapshot mode 'internal'"): every deletion of a snapshot
// past its retention failed while the member ran (found by make chaos's snapshot scenario).
func TestAccDeleteVolumeSnapshot_liveThroughAMemberWithOtherDisks(t *testing.T) {
	requireAcc(t)
	b := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	const pool = "virt"
	name := "tfacc-snaplive-" + testSuffix()
	boot, data, seed := name+"-boot.qcow2", name+"-data.qcow2", name+"-cidata.iso"
	c := rawConn(b)
	t.Cleanup(func() {
		if d, err := c.l.DomainLookupByName(name); err == nil {
			_ = c.l.DomainDestroy(d)
			if err := c.l.DomainUndefineFlags(d, undefineFlags); err != nil {
				t.Errorf("undefine %s: %v", name, err)
			}
		}
		for _, v := range []string{boot, data, seed} {
			if err := b.DeleteVolume(ctx, pool, v); err != nil && !errors.Is(err, backend.ErrNotFound) {
				t.Errorf("delete volume %s: %v", v, err)
			}
		}
	})
	for _, v := range []string{boot, data} {
		if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: pool, Name: v, SizeMiB: 16}); err != nil {
			t.Fatalf("create volume %s: %v", v, err)
		}
	}
	p, err := c.pool(pool)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.l.StorageVolCreateXML(p, fmt.Sprintf(`<volume><name>%s</name><capacity unit="MiB">1</capacity><target><format type="raw"/></target></volume>`, seed), 0); err != nil {
		t.Fatalf("create volume %s: %v", seed, err)
	}
	dom := fmt.Sprintf(`<domain type='qemu'><name>%s</name><memory unit='MiB'>64</memory><os><type arch='x86_64'>hvm</type></os><devices>
<disk type='volume' device='disk'><driver name='qemu' type='qcow2'/><source pool='%s' volume='%s'/><target dev='vda' bus='virtio'/></disk>
<disk type='volume' device='disk'><driver name='qemu' type='qcow2'/><source pool='%s' volume='%s'/><target dev='vdb' bus='virtio'/></disk>
<disk type='volume' device='cdrom'><driver name='qemu' type='raw'/><source pool='%s' volume='%s'/><target dev='sda' bus='sata'/><readonly/></disk>
</devices></domain>`, name, pool, boot, pool, data, pool, seed)
	d, err := c.l.DomainDefineXMLFlags(dom, 0)
	if err != nil {
		t.Fatalf("define %s: %v", name, err)
	}
	const tag = "virt-test-1-data"
	if err := b.SnapshotVolume(ctx, pool, data, tag); err != nil {
		t.Fatalf("snapshot %s: %v", data, err)
	}
	if err := c.l.DomainCreate(d); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}

	if err := b.DeleteVolumeSnapshot(ctx, pool, data, tag, name); err != nil {
		t.Fatalf("delete snapshot %s of %s live through %s: %v", tag, data, name, err)
	}
	tags, err := b.volumeTags(ctx, pool, data)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(tags, tag) {
		t.Errorf("volume %s still holds snapshot %s after its deletion: %v", data, tag, tags)
	}
	names, err := c.l.DomainSnapshotListNames(d, 16, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(names) > 0 {
		t.Errorf("domain %s keeps snapshot metadata %v after the deletion", name, names)
	}
	state, _, err := c.l.DomainGetState(d, 0)
	if err != nil {
		t.Fatal(err)
	}
	if golibvirt.DomainState(state) != golibvirt.DomainRunning {
		t.Errorf("domain %s is in state %d after the live deletion, want running", name, state)
	}
}
