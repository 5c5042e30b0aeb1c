package libvirt

import (
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestDomainXMLACPI checks that members get ACPI: without it libvirt starts QEMU with -no-acpi
// and ShutdownDomain's power button never reaches the guest.
func TestDomainXMLACPI(t *testing.T) {
	doc, err := domainXML(backend.DomainSpec{Name: "db-1", Type: "qemu", VCPU: 1, MemoryMiB: 64})
	if err != nil {
		t.Fatal(err)
	}
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		t.Fatal(err)
	}
	if dom.Features == nil || dom.Features.ACPI == nil {
		t.Errorf("no <acpi/> in\n%s", doc)
	}
}
