package reconcile

import (
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func efiSpec(size int) engine.GroupState {
	s := spec(size)
	s.Group.Template.Firmware = engine.FirmwareEFI
	return s
}

// nvramData is what the fake holds in the member's NVRAM volume; "" when there is none.
func nvramData(b *fake.Backend, member string) string {
	if v := b.Volumes["p/"+engine.NVRAMVolumeName(member)]; v != nil {
		return v.Data
	}
	return ""
}

// TestNVRAM_lifecycle runs an EFI group on the fake host, which makes a missing NVRAM from the
// template at a start as libvirt does: the definition names the member's NVRAM volume; what the
// firmware wrote into it survives a restart, a replacement gives a fresh one, and scale-in deletes
// it. A BIOS member's volume of that name is never touched.
func TestNVRAM_lifecycle(t *testing.T) {
	t.Parallel()
	b := fake.New()
	s := efiSpec(2)
	apply(t, b, s)
	for _, m := range []string{"db-1", "db-2"} {
		d := b.Domains[m]
		if nv := d.Spec.NVRAM; nv == nil || nv.Pool != "p" || nv.Volume != m+"-nvram.fd" || d.Spec.Firmware != engine.FirmwareEFI {
			t.Fatalf("%s's definition: firmware %q, NVRAM %+v", m, d.Spec.Firmware, d.Spec.NVRAM)
		}
		if got := nvramData(b, m); got != fake.NVRAMTemplate {
			t.Fatalf("%s's NVRAM holds %q after its first start", m, got)
		}
		b.Volumes["p/"+m+"-nvram.fd"].Data = "boot entries of " + m
	}

	uuid := b.Domains["db-1"].UUID
	s.Group.Template.CPU = &engine.CPU{Mode: engine.CPUHostModel}
	apply(t, b, s)
	if b.Domains["db-1"].UUID != uuid || b.Domains["db-1"].Spec.CPU == nil {
		t.Fatal("a cpu change did not restart db-1 in place")
	}
	if got := nvramData(b, "db-1"); got != "boot entries of db-1" {
		t.Fatalf("a restart lost the NVRAM: %q", got)
	}

	s.Group.Template.BootDisk.SourceImage = "/images/new.qcow2"
	apply(t, b, s)
	if b.Domains["db-1"].UUID == uuid {
		t.Fatal("a boot image change did not replace db-1")
	}
	if got := nvramData(b, "db-1"); got != fake.NVRAMTemplate {
		t.Fatalf("a replacement kept the old NVRAM: %q", got)
	}

	s.Group.TargetSize = 1
	apply(t, b, s)
	if got := nvramData(b, "db-2"); got != "" {
		t.Fatalf("scale-in left db-2's NVRAM: %q", got)
	}

	// A BIOS group's member and a file under the NVRAM's name that is not its own.
	b2 := fake.New()
	bios := spec(1)
	apply(t, b2, bios)
	b2.Volumes["p/db-1-nvram.fd"] = &fake.Volume{Data: "someone else's"}
	bios.Group.TargetSize = 0
	apply(t, b2, bios)
	if got := nvramData(b2, "db-1"); got != "someone else's" {
		t.Fatalf("the scale-in of a BIOS member touched the file under its NVRAM's name: %q", got)
	}
}
