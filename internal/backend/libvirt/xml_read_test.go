package libvirt

import (
	"reflect"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// TestReadDomainXMLAgreesWithParseDomain holds the listing's reader to the full parser: for the
// XML this provider defines, for the XML libvirt gives back for a running member (aliases, a
// connected agent), and for domains no provider made, both give the same answers.
func TestReadDomainXMLAgreesWithParseDomain(t *testing.T) {
	defined, err := domainXML(backend.DomainSpec{
		Name: "db-1", UUID: "6f1c4a34-8d49-4b63-9d5e-1f0c2b9a7e10",
		Shape: engine.Shape{
			DomainType: "qemu", VCPU: 2, MemoryMiB: 96,
			Description: "a <db> & \"friends\"",
			Hardware:    engine.Hardware{RNG: true, Filesystems: []engine.Filesystem{{Source: "/srv/share", Target: "share"}}},
		},
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
		Graphics:   &backend.Graphics{Type: "vnc", Listen: "127.0.0.1", Password: "secret"},
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
    <graphics type='sdl' display=':0'/>
    <graphics type='spice' port='5901' autoport='yes' listen='127.0.0.1'>
      <listen type='address' address='127.0.0.1'/>
    </graphics>
    <graphics type='vnc' port='5902' autoport='yes'/>
  </devices>
</domain>`
	seeded := `<domain type='qemu'><name>db-3</name><memory>65536</memory>
  <devices><disk type='volume' device='cdrom'><source pool='virt' volume='db-3-cidata.iso'/><target dev='sdb' bus='scsi'/><readonly/><alias name='ua-NOCLOUD'/></disk></devices></domain>`
	bare := `<domain type='qemu'><name>x</name><memory unit='b'>134217728</memory></domain>`
	// What XML allows and libvirt rarely writes: a declaration and comments, CDATA, character
	// references, double quotes, CRLF, an element inside a text field, a record in the default
	// namespace after another that declares its prefix outside <metadata> (which the inner-XML
	// reading of parseRecord does not see), numbers with spaces around them.
	odd := "<?xml version=\"1.0\"?>\r\n<!-- made by hand -->\r\n<domain type=\"kvm\" xmlns:virt=\"" + Namespace + "\">" +
		"<description><![CDATA[a <b> & c]]> and &#233;&#x41;&apos;\r\nline<x>ignored</x></description>" +
		"<vcpu> 3 </vcpu><memory unit=\"MiB\">\n512\n</memory>" +
		"<metadata><virt:instance><virt:group>wrong</virt:group></virt:instance>" +
		"<other xmlns=\"https://example.com\"><instance><group>also wrong</group></instance></other>" +
		"<instance xmlns=\"" + Namespace + "\"><group>db</group><index> 4 </index><revision>r&amp;d</revision>" +
		"<created>1700000000000</created><heals>2</heals><unknown>x</unknown></instance>" +
		"<instance xmlns=\"" + Namespace + "\"><group>second</group></instance></metadata>" +
		"<devices><!-- c --><disk type=\"file\" device=\"disk\"><source file=\"/srv/a&apos;b.img\"/><target dev=\"vda\"/><serial>s&lt;1</serial></disk>" +
		"<interface type=\"user\"><mac address=\"52:54:00:AB:CD:EF\"/></interface>" +
		"<interface type=\"network\"><source network=\"n1\"/></interface>" +
		"<channel type=\"unix\"><target type=\"virtio\" name=\"org.qemu.guest_agent.0\" state=\"disconnected\"/></channel>" +
		"<graphics type=\"vnc\" port=\" 5903 \" autoport=\"yes\"><listen type=\"address\" address=\"::1\"/></graphics></devices></domain>"
	for name, doc := range map[string]string{"defined": defined, "live": live, "seeded": seeded, "bare": bare, "odd": odd} {
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
			if wantPort := map[string]int{"live": 5901, "odd": 5903}[name]; got.graphicsPort != wantPort {
				t.Errorf("graphics port %d, want %d", got.graphicsPort, wantPort)
			}
			if name == "odd" && (got.record == nil || got.record.Group != "db" || got.record.Index != 4 || got.record.Instance.Heals != 2 ||
				got.description != "a <b> & c and \u00e9A'\nline" || got.vcpu != 3 || got.memoryMiB != 512 || got.disks[0].Path != "/srv/a'b.img" || got.disks[0].DeviceName != "s<1") {
				t.Errorf("odd document read as %+v, record %+v", got, got.record)
			}
		})
	}
}

// FuzzReadDomainXML: whatever the full parser reads, the listing's reader reads the same.
func FuzzReadDomainXML(f *testing.F) {
	for _, doc := range []string{
		`<domain type='qemu'><description>d</description><vcpu>1</vcpu><memory unit='KiB'>65536</memory><devices><disk type='volume'><source pool='p' volume='v'/><target dev='sda'/><serial>boot</serial></disk><interface type='network'><mac address='02:00:00:00:00:01'/><source network='default'/></interface></devices></domain>`,
		`<domain type='kvm'><metadata><virt:instance xmlns:virt='` + Namespace + `'><virt:group>g</virt:group><virt:index>2</virt:index></virt:instance></metadata></domain>`,
		`<domain type='qemu'><devices><graphics type='vnc' port='-1' autoport='yes'/><graphics type='spice' port='5901'/></devices></domain>`,
		`<domain type='qemu'><metadata><vd:adopted xmlns:vd='` + store.DomainNamespace + `'><vd:owner>o</vd:owner></vd:adopted></metadata></domain>`,
		`<domain type='qemu'><metadata><x xmlns:vd='` + store.DomainNamespace + `'><vd:adopted/></x></metadata></domain>`,
	} {
		f.Add(doc)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		want, err := parseDomain(doc)
		if err != nil {
			return
		}
		got, err := readDomainXML(doc)
		if err != nil {
			t.Fatalf("parseDomain reads %q, readDomainXML fails: %v", doc, err)
		}
		want.dom = got.dom
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("%q:\nreadDomainXML %+v\nparseDomain   %+v", doc, got, want)
		}
	})
}

// TestReadDomainXML_adopted: a domain whose metadata holds a virt_domain adoption record among
// its top-level elements is read as adopted, by the listing's scanner and by the full parser
// alike; one nested in another application's element, or in another namespace, is not.
func TestReadDomainXML_adopted(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		doc  string
		want bool
	}{
		"adopted":         {`<domain type='qemu'><metadata><vd:adopted xmlns:vd='` + store.DomainNamespace + `'><vd:owner>o</vd:owner></vd:adopted></metadata></domain>`, true},
		"default ns":      {`<domain type='qemu'><metadata><adopted xmlns='` + store.DomainNamespace + `'/></metadata></domain>`, true},
		"nested":          {`<domain type='qemu'><metadata><x xmlns:vd='` + store.DomainNamespace + `'><vd:adopted/></x></metadata></domain>`, false},
		"other namespace": {`<domain type='qemu'><metadata><adopted xmlns='https://example.com/other'/></metadata></domain>`, false},
		"no metadata":     {`<domain type='qemu'/>`, false},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := readDomainXML(c.doc)
			if err != nil {
				t.Fatal(err)
			}
			full, err := parseDomain(c.doc)
			if err != nil {
				t.Fatal(err)
			}
			if got.adopted != c.want || full.adopted != c.want {
				t.Errorf("adopted: scanner %v, full parser %v, want %v", got.adopted, full.adopted, c.want)
			}
		})
	}
}
