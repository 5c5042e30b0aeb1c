package libvirt

import (
	"encoding/xml"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// A listing reads every member's XML, and at 1,000 members decoding it into libvirtxml's full
// Domain was most of a refresh's CPU in the provider (issue 14). What a listing keeps of a domain
// is a handful of elements, so it decodes only those: readDomainXML gives the same parsedDomain
// as parseDomain, without dom (a table test holds the two to the same answers). parseDomain stays
// for the writes that edit a definition.

type xmlDomain struct {
	Type        string      `xml:"type,attr"`
	Description string      `xml:"description"`
	VCPU        *xmlVCPU    `xml:"vcpu"`
	Memory      *xmlMemory  `xml:"memory"`
	Metadata    *xmlInner   `xml:"metadata"`
	Devices     *xmlDevices `xml:"devices"`
}

type xmlVCPU struct {
	Value uint `xml:",chardata"`
}

type xmlMemory struct {
	Value uint   `xml:",chardata"`
	Unit  string `xml:"unit,attr"`
}

type xmlInner struct {
	XML string `xml:",innerxml"`
}

type xmlDevices struct {
	Disks      []xmlDisk      `xml:"disk"`
	Interfaces []xmlInterface `xml:"interface"`
	Channels   []xmlChannel   `xml:"channel"`
}

type xmlDisk struct {
	Type   string `xml:"type,attr"`
	Source *struct {
		File   string `xml:"file,attr"`
		Dev    string `xml:"dev,attr"`
		Pool   string `xml:"pool,attr"`
		Volume string `xml:"volume,attr"`
	} `xml:"source"`
	Target *struct {
		Dev string `xml:"dev,attr"`
	} `xml:"target"`
	ReadOnly *struct{} `xml:"readonly"`
	Serial   string    `xml:"serial"`
	Alias    *struct {
		Name string `xml:"name,attr"`
	} `xml:"alias"`
}

type xmlInterface struct {
	Type string `xml:"type,attr"`
	MAC  *struct {
		Address string `xml:"address,attr"`
	} `xml:"mac"`
	Source *struct {
		Network string `xml:"network,attr"`
	} `xml:"source"`
}

type xmlChannel struct {
	Target *struct {
		Type  string `xml:"type,attr"`
		Name  string `xml:"name,attr"`
		State string `xml:"state,attr"`
	} `xml:"target"`
}

// readDomainXMLDecoded is readDomainXML by encoding/xml into the structs above: the reference
// the scanner-based reader is held to by tests.
func readDomainXMLDecoded(doc string) (*parsedDomain, error) {
	var dom xmlDomain
	if err := xml.Unmarshal([]byte(doc), &dom); err != nil {
		return nil, err
	}
	p := &parsedDomain{targets: map[string]string{}, used: map[string]bool{}, typ: dom.Type, description: dom.Description}
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
	}
	if dom.Devices == nil {
		return p, nil
	}
	for _, i := range dom.Devices.Interfaces {
		p.addInterface(i)
	}
	for _, c := range dom.Devices.Channels {
		if t := c.Target; t != nil {
			p.addChannel(t.Type, t.Name, t.State)
		}
	}
	for _, d := range dom.Devices.Disks {
		p.addDisk(d)
	}
	return p, nil
}

func (p *parsedDomain) addInterface(i xmlInterface) {
	mac, network := "", ""
	if i.MAC != nil {
		mac = strings.ToLower(i.MAC.Address)
	}
	if i.Type == "network" && i.Source != nil {
		network = i.Source.Network
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
	if d.Alias != nil && d.Alias.Name == seedAlias && d.Target != nil {
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
	disk := backend.Disk{DeviceName: name, ReadOnly: d.ReadOnly != nil}
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
