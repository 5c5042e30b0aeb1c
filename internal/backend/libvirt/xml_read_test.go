package libvirt

import (
	"reflect"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestReadDomainXMLAgreesWithParseDomain holds the listing's reader to the full parser: for the
// XML this provider defines, for the XML libvirt gives back for a running member (aliases, a
// connected agent), and for domains no provider made, both give the same answers.
func TestReadDomainXMLAgreesWithParseDomain(t *testing.T) {
	defined, err := domainXML(backend.DomainSpec{
		Name: "db-1", UUID: "6f1c4a34-8d49-4b63-9d5e-1f0c2b9a7e10", Type: "qemu", VCPU: 2, MemoryMiB: 96,
		Description: "a <db> & \"friends\"",
		Disks: []backend.Disk{
			{DeviceName: "boot", Pool: "virt", Volume: "db-1-boot.qcow2", Format: "qcow2"},
			{DeviceName: "data", Pool: "virt", Volume: "db-1-data.qcow2", Format: "qcow2"},
			{DeviceName: "logs", Path: "/srv/logs.img", HostFile: true, Format: "raw", ReadOnly: true},
		},
		NICs:       []engine.NIC{{Type: "network", Network: "default"}, {Type: "user"}},
		MACs:       []string{"02:AB:cd:00:00:01", "02:ab:cd:00:00:02"},
		Record:     backend.Record{Group: "db", Index: 1, Instance: engine.ManagedInstance{TemplateRevision: "r1"}},
		Seed:       &backend.Disk{DeviceName: "cidata", Pool: "virt", Volume: "db-1-cidata.iso", ReadOnly: true},
		ConsoleLog: "/var/log/virt/db-1.console.log",
	})
	if err != nil {
		t.Fatal(err)
	}
	live := `<domain type='kvm' id='7'>
  <name>db-2</name>
  <description>web</description>
  <metadata>
    <other:thing xmlns:other="https://example.com/other">x</other:thing>
  </metadata>
  <memory unit='GiB'>2</memory>
  <vcpu placement='static'>4</vcpu>
  <devices>
    <disk type='volume' device='disk'>
      <driver name='qemu' type='qcow2'/>
      <source pool='virt' volume='db-2-boot.qcow2' index='2'/>
      <target dev='vda' bus='virtio'/>
      <serial>boot</serial>
      <alias name='virtio-disk0'/>
    </disk>
    <disk type='volume' device='cdrom'>
      <target dev='sdz' bus='scsi'/>
      <readonly/>
      <alias name='ua-NOCLOUD'/>
    </disk>
    <disk type='block' device='disk'>
      <source dev='/dev/vg/data'/>
      <target dev='vdb' bus='virtio'/>
    </disk>
    <disk type='file' device='cdrom'>
      <target dev='hdc' bus='ide'/>
      <readonly/>
    </disk>
    <interface type='bridge'>
      <mac address='52:54:00:AA:BB:CC'/>
      <source bridge='br0'/>
    </interface>
    <interface type='network'>
      <mac address='52:54:00:00:00:01'/>
      <source network='default' portid='x' bridge='virbr0'/>
    </interface>
    <channel type='unix'>
      <target type='virtio' name='org.qemu.guest_agent.0' state='connected'/>
    </channel>
    <channel type='spicevmc'>
      <target type='virtio' name='com.redhat.spice.0' state='disconnected'/>
    </channel>
  </devices>
</domain>`
	seeded := `<domain type='qemu'><name>db-3</name><memory>65536</memory>
  <devices><disk type='volume' device='cdrom'><source pool='virt' volume='db-3-cidata.iso'/><target dev='sdb' bus='scsi'/><readonly/><alias name='ua-NOCLOUD'/></disk></devices></domain>`
	bare := `<domain type='qemu'><name>x</name><memory unit='b'>134217728</memory></domain>`
	for name, doc := range map[string]string{"defined": defined, "live": live, "seeded": seeded, "bare": bare} {
		t.Run(name, func(t *testing.T) {
			want, err := parseDomain(doc)
			if err != nil {
				t.Fatal(err)
			}
			got, err := readDomainXML(doc)
			if err != nil {
				t.Fatal(err)
			}
			want.dom = got.dom
			if !reflect.DeepEqual(got, want) {
				t.Errorf("readDomainXML:\n%+v\nparseDomain:\n%+v", got, want)
			}
			if got.typ == "" || got.memoryMiB == 0 {
				t.Errorf("type %q, memory %d MiB: not read", got.typ, got.memoryMiB)
			}
		})
	}
}
