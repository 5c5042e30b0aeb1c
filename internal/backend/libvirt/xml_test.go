package libvirt

import (
	"testing"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestDomainXMLACPI checks that members get ACPI: without it libvirt starts QEMU with -no-acpi
// and ShutdownDomain's power button never reaches the guest.
func TestDomainXMLACPI(t *testing.T) {
	doc, err := domainXML(backend.DomainSpec{Name: "db-1", Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}})
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

// TestDiskXMLRelabel checks that only host files outside every pool are attached without DAC
// relabelling: pool volumes, given by name or by path, are labelled by libvirt as usual.
func TestDiskXMLRelabel(t *testing.T) {
	tests := []struct {
		name      string
		disk      backend.Disk
		noRelabel bool
	}{
		{"pool volume by name", backend.Disk{DeviceName: "data", Pool: "p", Volume: "db-1-data.qcow2"}, false},
		{"pool volume by path", backend.Disk{DeviceName: "data", Path: "/var/lib/libvirt/images/x.qcow2"}, false},
		{"host file", backend.Disk{DeviceName: "data", Path: "/srv/x.img", HostFile: true}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			x := diskXML(tt.disk, "sda")
			var labels []libvirtxml.DomainDeviceSecLabel
			if x.Source != nil && x.Source.File != nil {
				labels = x.Source.File.SecLabel
			}
			got := len(labels) == 1 && labels[0].Model == "dac" && labels[0].Relabel == "no"
			if got != tt.noRelabel || (!tt.noRelabel && len(labels) > 0) {
				t.Fatalf("seclabels %+v, want relabel=no: %t", labels, tt.noRelabel)
			}
		})
	}
}
