// This file holds the domain reader's handlers of the devices element: disks, interfaces and channels.

package libvirt

func (d *domScan) devices(devs *xmlDevices) error {
	return d.children(func(local string) error {
		switch local {
		case "disk":
			var disk xmlDisk
			err := d.disk(&disk)
			devs.Disks = append(devs.Disks, disk)
			return err
		case "interface":
			var i xmlInterface
			err := d.iface(&i)
			devs.Interfaces = append(devs.Interfaces, i)
			return err
		case "channel":
			var c xmlChannel
			err := d.channel(&c)
			devs.Channels = append(devs.Channels, c)
			return err
		case "graphics":
			return d.graphics(devs)
		}
		return d.skip()
	})
}

func (d *domScan) disk(disk *xmlDisk) error {
	var err error
	if disk.Type, err = d.attr("type"); err != nil {
		return err
	}
	return d.children(func(local string) error {
		var err error
		switch local {
		case "source":
			if disk.Source == nil {
				disk.Source = &xmlDiskSource{}
			}
			err = d.setAttrs(map[string]*string{"file": &disk.Source.File, "dev": &disk.Source.Dev, "pool": &disk.Source.Pool, "volume": &disk.Source.Volume})
		case "target":
			if disk.Target == nil {
				disk.Target = &xmlTarget{}
			}
			err = d.setAttrs(map[string]*string{"dev": &disk.Target.Dev})
		case "readonly":
			disk.ReadOnly = true
		case "serial":
			disk.Serial, err = d.text()
			return err
		case "alias":
			if disk.Alias == nil {
				disk.Alias = new(string)
			}
			err = d.setAttrs(map[string]*string{"name": disk.Alias})
		}
		if err != nil {
			return err
		}
		return d.skip()
	})
}

func (d *domScan) iface(i *xmlInterface) error {
	var err error
	if i.Type, err = d.attr("type"); err != nil {
		return err
	}
	return d.children(func(local string) error {
		var err error
		switch local {
		case "mac":
			if i.MAC == nil {
				i.MAC = new(string)
			}
			err = d.setAttrs(map[string]*string{"address": i.MAC})
		case "source":
			if i.Network == nil {
				i.Network = new(string)
			}
			err = d.setAttrs(map[string]*string{"network": i.Network})
		}
		if err != nil {
			return err
		}
		return d.skip()
	})
}

func (d *domScan) channel(c *xmlChannel) error {
	return d.children(func(local string) error {
		if local == "target" {
			if c.Target == nil {
				c.Target = &xmlChannelTarget{}
			}
			if err := d.setAttrs(map[string]*string{"type": &c.Target.Type, "name": &c.Target.Name, "state": &c.Target.State}); err != nil {
				return err
			}
		}
		return d.skip()
	})
}

// setAttrs sets each named string to the value of the tag's attribute of that local name, when
// the tag has it: a second element of the same kind changes only what it gives, as encoding/xml
// does when it fills the same struct again.
func (d *domScan) setAttrs(into map[string]*string) error {
	for _, a := range d.t.attrs {
		if p, ok := into[localName(a.name)]; ok {
			v, err := unescape(a.value)
			if err != nil {
				return err
			}
			*p = v
		}
	}
	return nil
}
