package engine

// The values whose hashes were computed by the engine before it had its own canonical encoder
// (when its types were JSON-encoded through struct tags). Their hashes are kept in
// canon_golden_test.go: the hashes are written on hosts and compared, so they must never change.

// awkward is text that JSON escapes: HTML characters, quotes, control characters, the two line
// separators JavaScript cannot hold, invalid UTF-8 and non-ASCII letters.
const awkward = "<a href=\"x\">&amp;</a>\t\n\r\x00\x1f\u2028\u2029 \\ / é 日本 🙂 \xff\xfe"

func canonTemplates() []struct {
	name string
	t    Template
} {
	full := Template{
		Shape: Shape{
			DomainType: "kvm", VCPU: 4, MemoryMiB: 4096,
			Labels:        map[string]string{"team": "a"},
			Description:   "the db",
			CloudInit:     &CloudInit{UserData: "#cloud-config\nruncmd: [ls]\n", NetworkConfig: "version: 2\n"},
			ConsoleLogDir: "/var/log/virt",
		},
		BootDisk: BootDisk{SourceImage: "/var/lib/libvirt/images/base.qcow2", SizeMiB: 10240},
		Disks:    []Disk{{DeviceName: "logs", SizeMiB: 64}, {DeviceName: "data", SizeMiB: 256}},
		NICs:     []NIC{{Network: "default", Type: "network"}, {Type: "user"}},
		Metadata: map[string]string{"role": "db", "b": "2", "a": "1", "<k>": "&v"},
	}
	return []struct {
		name string
		t    Template
	}{
		{"zero", Template{}},
		{"minimal", Template{Shape: Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 128}, BootDisk: BootDisk{SizeMiB: 1024}}},
		{"full", full},
		{"empty maps and slices", Template{Shape: Shape{DomainType: "qemu", Labels: map[string]string{}}, Disks: []Disk{}, NICs: []NIC{}, Metadata: map[string]string{}}},
		{"empty cloud init", Template{Shape: Shape{DomainType: "qemu", CloudInit: &CloudInit{}}}},
		{"cloud init user data only", Template{Shape: Shape{DomainType: "qemu", CloudInit: &CloudInit{UserData: "x"}}}},
		{"cloud init network config only", Template{Shape: Shape{DomainType: "qemu", CloudInit: &CloudInit{NetworkConfig: "y"}}}},
		{"adopted", AdoptedTemplate(DesiredInstance{Shape: Shape{DomainType: "kvm", VCPU: 2, MemoryMiB: 512, Description: "legacy"}})},
		{"awkward text", Template{
			Shape:    Shape{DomainType: awkward, Labels: map[string]string{"é": "日本"}, Description: awkward, CloudInit: &CloudInit{UserData: awkward, NetworkConfig: awkward}, ConsoleLogDir: awkward},
			BootDisk: BootDisk{SourceImage: awkward},
			Disks:    []Disk{{DeviceName: awkward, SizeMiB: 1}}, NICs: []NIC{{Network: awkward, Type: awkward}},
			Metadata: map[string]string{awkward: awkward, "": ""},
		}},
		{"extreme numbers", Template{Shape: Shape{VCPU: -1, MemoryMiB: 1<<63 - 1}, BootDisk: BootDisk{SizeMiB: -1 << 63}, Disks: []Disk{{DeviceName: "z", SizeMiB: 0}}}},
		{"nic without network", Template{NICs: []NIC{{}}}},
		{"disks out of order", Template{Disks: []Disk{{DeviceName: "b", SizeMiB: 2}, {DeviceName: "a", SizeMiB: 1}, {DeviceName: "A", SizeMiB: 3}}}},
		{"base", base()},
	}
}

func canonDesired() []struct {
	name string
	d    DesiredInstance
} {
	full := canonTemplates()[2].t
	fromPolicy, fromConfig := Preserve("db-1", full, Policy{Disks: []PolicyDisk{{DeviceName: "data", DeleteRule: DeleteOnPermanentDeletion}}},
		InstanceConfig{Disks: []ConfigDisk{{DeviceName: "extra", Source: "/srv/extra.img", Mode: ModeReadOnly}}, Metadata: map[string]string{"node-id": "xyz"}})
	return []struct {
		name string
		d    DesiredInstance
	}{
		{"zero", DesiredInstance{}},
		{"empty disks", DesiredInstance{Disks: []DesiredDisk{}}},
		{"empty maps and slices", DesiredInstance{Name: "a", NICs: []NIC{}, Disks: []DesiredDisk{}, Metadata: map[string]string{}, Shape: Shape{Labels: map[string]string{}}}},
		{"empty cloud init", DesiredInstance{Name: "a", Shape: Shape{CloudInit: &CloudInit{}}}},
		{"desired from full template", Desire("db-0", full, PreservedState{}, PreservedState{})},
		{"desired with preserved state", Desire("db-1", full, fromPolicy, fromConfig)},
		{"desired adopted", Desire("legacy", canonTemplates()[7].t, PreservedState{}, fromConfig)},
		{"desired minimal", Desire("web-3", canonTemplates()[1].t, PreservedState{}, PreservedState{})},
		{"every disk field", DesiredInstance{Name: "x", Disks: []DesiredDisk{
			{DeviceName: "boot", Source: "x-boot.qcow2", SizeMiB: 1024},
			{DeviceName: "ro", Source: "/abs/path", ReadOnly: true, Preserved: true, DeleteRule: DeleteNever},
			{DeviceName: "p", Source: "x-p.qcow2", SizeMiB: 5, Preserved: true, DeleteRule: DeleteOnPermanentDeletion},
			{},
		}}},
		{"awkward text", DesiredInstance{
			Name: awkward, Shape: Shape{DomainType: awkward, VCPU: -3, MemoryMiB: 1 << 40, Labels: map[string]string{"x": awkward}, Description: awkward, CloudInit: &CloudInit{UserData: awkward}, ConsoleLogDir: awkward}, NICs: []NIC{{Network: awkward, Type: awkward}},
			BootImage: awkward, Disks: []DesiredDisk{{DeviceName: awkward, Source: awkward, DeleteRule: awkward}},
			Metadata: map[string]string{awkward: awkward, "z": "", "a": "<>"},
		}},
	}
}
