package libvirt

import (
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// A listing reads every member's XML, and at 1,000 members decoding it into libvirtxml's full
// Domain was most of a refresh's CPU in the provider (issue 14). What a listing keeps of a domain
// is a handful of elements: domScan (xml_scan.go) reads those into the types below, and
// readDomainXML gives the same parsedDomain as parseDomain, without dom (a table test and a fuzz
// test hold the two to the same answers). parseDomain stays for the writes that edit a definition.

type xmlDomain struct {
	Type, Description string
	VCPU              *uint
	Memory            *xmlMemory
	Devices           *xmlDevices
}

type xmlMemory struct {
	Value uint
	Unit  string
}

type xmlDevices struct {
	Disks      []xmlDisk
	Interfaces []xmlInterface
	Channels   []xmlChannel
	// GraphicsPort is the first VNC or SPICE console's port; graphicsSeen is set once one was
	// read.
	GraphicsPort int
	graphicsSeen bool
}

type xmlDisk struct {
	Type     string
	Source   *xmlDiskSource
	Target   *xmlTarget
	ReadOnly bool
	Serial   string
	Alias    *string // the alias's name
}

type xmlDiskSource struct{ File, Dev, Pool, Volume string }

type xmlTarget struct{ Dev string }

type xmlInterface struct {
	Type    string
	MAC     *string // the address
	Network *string // the source's network
}

type xmlChannel struct {
	Target *xmlChannelTarget
}

type xmlChannelTarget struct{ Type, Name, State string }

func (p *parsedDomain) addInterface(i xmlInterface) {
	mac, network := "", ""
	if i.MAC != nil {
		mac = strings.ToLower(*i.MAC)
	}
	if i.Type == "network" && i.Network != nil {
		network = *i.Network
	}
	p.macs, p.networks = append(p.macs, mac), append(p.networks, network)
}

func (p *parsedDomain) addChannel(typ, name, state string) {
	if typ == "virtio" && name == agentChannel && state == "connected" {
		p.agent = true
	}
}

func (p *parsedDomain) addDisk(d xmlDisk) {
	if d.Target != nil {
		p.used[d.Target.Dev] = true
	}
	if d.Alias != nil && *d.Alias == seedAlias && d.Target != nil {
		p.seedDev = d.Target.Dev
		if d.Type == "volume" && d.Source != nil {
			p.seed = d.Source.Volume
		}
		return
	}
	name := d.Serial
	if name == "" && d.Target != nil {
		name = d.Target.Dev
	}
	disk := backend.Disk{DeviceName: name, ReadOnly: d.ReadOnly}
	if d.Source != nil {
		switch d.Type {
		case "volume":
			disk.Pool, disk.Volume = d.Source.Pool, d.Source.Volume
		case "file":
			disk.Path = d.Source.File
		case "block":
			disk.Path = d.Source.Dev
		}
	}
	p.disks = append(p.disks, disk)
	if d.Target != nil {
		p.targets[name] = d.Target.Dev
	}
}
