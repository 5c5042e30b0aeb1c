package libvirt

import (
	"strings"

	"libvirt.org/go/libvirtxml"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/store"
)

// Namespace is the XML namespace of the provider's element in a domain's <metadata>, the member
// record, whose format is the store's.
const Namespace = store.MemberNamespace

// metadataKey is the namespace prefix libvirt writes the element with.
const metadataKey = store.MemberPrefix

// marshalRecord renders the record as the provider's metadata element (see store.EncodeMember).
func marshalRecord(r backend.Record, declared bool) (string, error) {
	return store.EncodeMember(store.Member{Group: r.Group, Index: r.Index, Instance: r.Instance}, declared)
}

// parseRecord finds the provider's element in the inner XML of a domain's <metadata>. It returns
// nil when the domain carries none, which is how a domain no provider created looks.
func parseRecord(inner string) (*backend.Record, error) {
	m, err := store.ParseMember(inner)
	if m == nil || err != nil {
		return nil, err
	}
	return &backend.Record{Group: m.Group, Index: m.Index, Instance: m.Instance}, nil
}

// recordOf turns the provider's metadata element into the record it holds.
func recordOf(e store.MemberElement) (*backend.Record, error) {
	m, err := store.DecodeMember(e)
	if err != nil {
		return nil, err
	}
	return &backend.Record{Group: m.Group, Index: m.Index, Instance: m.Instance}, nil
}

// target returns the SCSI target name of the i-th disk: sda, sdb, ..., sdz, sdaa, ...
func target(i int) string {
	name := ""
	for i++; i > 0; i = (i - 1) / 26 {
		name = string(rune('a'+(i-1)%26)) + name
	}
	return "sd" + name
}

func diskXML(d backend.Disk, dev string) libvirtxml.DomainDisk {
	disk := libvirtxml.DomainDisk{
		Device: "disk",
		Driver: &libvirtxml.DomainDiskDriver{Name: "qemu", Type: engine.VolumeFormat},
		Target: &libvirtxml.DomainDiskTarget{Dev: dev, Bus: "scsi"},
		Serial: d.DeviceName,
		Alias:  &libvirtxml.DomainAlias{Name: "ua-" + d.DeviceName},
	}
	if d.Volume != "" {
		disk.Source = &libvirtxml.DomainDiskSource{Volume: &libvirtxml.DomainDiskSourceVolume{Pool: d.Pool, Volume: d.Volume}}
	} else {
		disk.Source = &libvirtxml.DomainDiskSource{File: &libvirtxml.DomainDiskSourceFile{File: d.Path}}
		if d.HostFile {
			// A host file the provider did not create, outside every pool: libvirt must not
			// re-own it to the QEMU user (and may not give it back); its owner grants access.
			disk.Source.File.SecLabel = []libvirtxml.DomainDeviceSecLabel{{Model: "dac", Relabel: "no"}}
		}
		// A disk given by path may be of any format; raw is what qemu reads safely without probing.
		if !strings.HasSuffix(d.Path, "."+engine.VolumeFormat) {
			disk.Driver.Type = "raw"
		}
	}
	if d.Format != "" {
		disk.Driver.Type = d.Format
	}
	if d.ReadOnly {
		disk.ReadOnly = &libvirtxml.DomainDiskReadOnly{}
	}
	return disk
}

// domainXML builds the definition of a member domain. Every disk sits on one virtio-scsi
// controller, because SCSI disks attach and detach live without the guest's help. ACPI is on
// because without it libvirt starts QEMU with -no-acpi, and ShutdownDomain's power button
// would then never reach the guest.
func domainXML(s backend.DomainSpec) (string, error) {
	rec, err := marshalRecord(s.Record, true)
	if err != nil {
		return "", err
	}
	zero := uint(0)
	dom := libvirtxml.Domain{
		Type:        s.DomainType,
		Name:        s.Name,
		UUID:        s.UUID,
		Description: s.Description,
		Metadata:    &libvirtxml.DomainMetadata{XML: rec},
		Memory:      &libvirtxml.DomainMemory{Value: uint(s.MemoryMiB), Unit: "MiB"},
		VCPU:        &libvirtxml.DomainVCPU{Value: uint(s.VCPU)},
		OS: &libvirtxml.DomainOS{
			Type:        &libvirtxml.DomainOSType{Arch: "x86_64", Type: "hvm"},
			BootDevices: []libvirtxml.DomainBootDevice{{Dev: "hd"}},
		},
		Features:   &libvirtxml.DomainFeatureList{ACPI: &libvirtxml.DomainFeature{}},
		OnPoweroff: "destroy",
		OnReboot:   "restart",
		// A guest that panics (reported through the pvpanic device) is restarted by libvirt
		// itself, so that it is up again between applies.
		OnCrash: "restart",
		Devices: &libvirtxml.DomainDeviceList{
			Controllers: []libvirtxml.DomainController{{Type: "scsi", Index: &zero, Model: "virtio-scsi"}},
			MemBalloon:  &libvirtxml.DomainMemBalloon{Model: "none"},
			Panics:      []libvirtxml.DomainPanic{{Model: "isa"}},
		},
	}
	firmwareXML(&dom, s)
	for i, d := range s.Disks {
		dom.Devices.Disks = append(dom.Devices.Disks, diskXML(d, target(i)))
	}
	if s.Seed != nil {
		dom.Devices.Disks = append(dom.Devices.Disks, seedXML(*s.Seed, target(len(s.Disks))))
	}
	// A serial console on a pty, so that `virsh console` reaches the guest, appended to a log
	// file when asked (append, or each start would truncate what the previous boots wrote).
	serial := libvirtxml.DomainSerial{Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}, Target: &libvirtxml.DomainSerialTarget{Port: &zero}}
	if s.ConsoleLog != "" {
		serial.Log = &libvirtxml.DomainChardevLog{File: s.ConsoleLog, Append: "on"}
	}
	dom.Devices.Serials = []libvirtxml.DomainSerial{serial}
	dom.Devices.Consoles = []libvirtxml.DomainConsole{{Source: &libvirtxml.DomainChardevSource{Pty: &libvirtxml.DomainChardevSourcePty{}}, Target: &libvirtxml.DomainConsoleTarget{Type: "serial", Port: &zero}}}
	// The guest agent's channel, for a guest that runs one: it tells the guest's addresses.
	dom.Devices.Channels = []libvirtxml.DomainChannel{{
		Source: &libvirtxml.DomainChardevSource{UNIX: &libvirtxml.DomainChardevSourceUNIX{Mode: "bind"}},
		Target: &libvirtxml.DomainChannelTarget{VirtIO: &libvirtxml.DomainChannelTargetVirtIO{Name: agentChannel}},
	}}
	for i, n := range s.NICs {
		iface := libvirtxml.DomainInterface{Model: &libvirtxml.DomainInterfaceModel{Type: "virtio"}}
		if i < len(s.MACs) && s.MACs[i] != "" {
			iface.MAC = &libvirtxml.DomainInterfaceMAC{Address: s.MACs[i]}
		}
		if n.Type == "user" {
			iface.Source = &libvirtxml.DomainInterfaceSource{User: &libvirtxml.DomainInterfaceSourceUser{}}
		} else {
			iface.Source = &libvirtxml.DomainInterfaceSource{Network: &libvirtxml.DomainInterfaceSourceNetwork{Network: n.Network}}
		}
		dom.Devices.Interfaces = append(dom.Devices.Interfaces, iface)
	}
	addDevices(&dom, s)
	return dom.Marshal()
}

// firmwareXML sets the domain's machine, CPU and firmware. EFI is asked for by firmware
// autoselection (<os firmware='efi'>): libvirt picks the OVMF build from the host's firmware
// descriptors, with Secure Boot as asked (and key enrollment with it), so the template never
// names a file of one distribution. The NVRAM is given by path, the member's volume in its
// pool's directory: libvirt copies the chosen firmware's variable store template there when the
// domain starts without it.
func firmwareXML(dom *libvirtxml.Domain, s backend.DomainSpec) {
	dom.OS.Type.Machine = s.Machine
	if c := s.CPU; c != nil {
		dom.CPU = &libvirtxml.DomainCPU{Mode: c.Mode}
		if c.Mode == engine.CPUCustom {
			// match='exact' and no fallback: the guest gets this model or does not start, as
			// plan checked the host can run it.
			dom.CPU.Match = "exact"
			dom.CPU.Model = &libvirtxml.DomainCPUModel{Value: c.Model, Fallback: "forbid"}
		}
	}
	if s.Firmware != engine.FirmwareEFI {
		return
	}
	dom.OS.Firmware = engine.FirmwareEFI
	yesNo := map[bool]string{true: "yes", false: "no"}
	features := []libvirtxml.DomainOSFirmwareFeature{{Name: "secure-boot", Enabled: yesNo[s.SecureBoot]}}
	if s.SecureBoot {
		// Secure Boot needs the Microsoft keys enrolled in the variable store, and SMM so that
		// the guest cannot write the firmware's flash behind it.
		features = append(features, libvirtxml.DomainOSFirmwareFeature{Name: "enrolled-keys", Enabled: "yes"})
		dom.Features.SMM = &libvirtxml.DomainFeatureSMM{State: "on"}
	}
	dom.OS.FirmwareInfo = &libvirtxml.DomainOSFirmwareInfo{Features: features}
	if s.NVRAM != nil {
		dom.OS.NVRam = &libvirtxml.DomainNVRam{NVRam: s.NVRAM.Path}
	}
}

// parsedDomain is what the provider reads from a domain's XML.
type parsedDomain struct {
	dom     libvirtxml.Domain
	disks   []backend.Disk
	targets map[string]string // device name -> target dev
	record  *backend.Record
	adopted bool            // the metadata holds a virt_domain adoption record
	used    map[string]bool // target devs in use
	// seedDev is the target of the NoCloud seed drive ("" when there is none) and seed the
	// volume in it ("" when empty).
	seedDev, seed  string
	macs, networks []string
	agent          bool // a guest agent is connected
	// typ, description, vcpu and memoryMiB are the domain's type, description, vCPUs and memory.
	typ, description string
	vcpu, memoryMiB  int64
	// graphicsPort is the console's port (see graphicsPortOf).
	graphicsPort int
}

func parseDomain(doc string) (*parsedDomain, error) {
	var dom libvirtxml.Domain
	if err := dom.Unmarshal(doc); err != nil {
		return nil, err
	}
	p := &parsedDomain{dom: dom, targets: map[string]string{}, used: map[string]bool{}, typ: dom.Type, description: dom.Description}
	if dom.VCPU != nil {
		p.vcpu = int64(dom.VCPU.Value)
	}
	if m := dom.Memory; m != nil {
		p.memoryMiB = int64(memoryMiB(m.Value, m.Unit))
	}
	if dom.Metadata != nil {
		rec, err := parseRecord(dom.Metadata.XML)
		if err != nil {
			return nil, err
		}
		p.record = rec
		p.adopted = store.HasAdoption(dom.Metadata.XML)
	}
	if dom.Devices == nil {
		return p, nil
	}
	for _, i := range dom.Devices.Interfaces {
		mac, network := "", ""
		if i.MAC != nil {
			mac = strings.ToLower(i.MAC.Address)
		}
		if i.Source != nil && i.Source.Network != nil {
			network = i.Source.Network.Network
		}
		p.macs, p.networks = append(p.macs, mac), append(p.networks, network)
	}
	p.graphicsPort = graphicsPortOf(dom.Devices.Graphics)
	for _, c := range dom.Devices.Channels {
		if t := c.Target; t != nil && t.VirtIO != nil && t.VirtIO.Name == agentChannel && t.VirtIO.State == "connected" {
			p.agent = true
		}
	}
	for _, d := range dom.Devices.Disks {
		if d.Target != nil {
			p.used[d.Target.Dev] = true
		}
		if d.Alias != nil && d.Alias.Name == seedAlias && d.Target != nil {
			// The seed drive is the provider's, not a disk of the member's.
			p.seedDev = d.Target.Dev
			if d.Source != nil && d.Source.Volume != nil {
				p.seed = d.Source.Volume.Volume
			}
			continue
		}
		name := d.Serial
		if name == "" && d.Target != nil {
			name = d.Target.Dev
		}
		disk := backend.Disk{DeviceName: name, ReadOnly: d.ReadOnly != nil}
		if d.Source != nil {
			switch {
			case d.Source.Volume != nil:
				disk.Pool, disk.Volume = d.Source.Volume.Pool, d.Source.Volume.Volume
			case d.Source.File != nil:
				disk.Path = d.Source.File.File
			case d.Source.Block != nil:
				disk.Path = d.Source.Block.Dev
			}
		}
		p.disks = append(p.disks, disk)
		if d.Target != nil {
			p.targets[name] = d.Target.Dev
		}
	}
	return p, nil
}

// diskDeviceXML renders one disk as the device XML that attach and detach take.
func diskDeviceXML(d backend.Disk, dev string) (string, error) {
	x := diskXML(d, dev)
	return x.Marshal()
}
