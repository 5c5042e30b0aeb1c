package engine

import (
	"maps"
	"slices"
	"sort"
)

// Disk is a template disk: a blank volume per instance, named after its device.
type Disk struct {
	DeviceName string
	SizeMiB    int64
}

// BootDisk is the boot volume of every instance: a copy-on-write overlay of SourceImage, or a
// blank volume when SourceImage is empty.
type BootDisk struct {
	SourceImage string
	SizeMiB     int64
}

// NIC is a network interface: attached to a libvirt network by name, or user-mode networking
// when Type is "user".
type NIC struct {
	Network string
	Type    string
	// Address is "" for a dynamic address; in a template AddressReserved reserves each member's
	// address in the network's DHCP, and in a DesiredInstance it may also be the address a
	// per-instance config pins (see address.go).
	Address string
}

// CloudInit is the user's part of every member's NoCloud seed: the member's name and metadata
// are added to it per member.
type CloudInit struct {
	UserData      string
	NetworkConfig string
	// UserDataWOVersion is user_data_wo_version: the version of the write-only user data, which
	// only the group's own apply has (reconcile.Secrets) and the member's seed volume keeps. The
	// engine never sees the value; 0 means the user data is UserData.
	UserDataWOVersion int64
}

// Firmware values: BIOS (SeaBIOS, the default when none is given) or UEFI (OVMF).
const (
	FirmwareBIOS = "bios"
	FirmwareEFI  = "efi"
)

// Firmwares lists the firmware values, as users write them.
var Firmwares = []string{FirmwareBIOS, FirmwareEFI}

// CPU modes, as libvirt names them.
const (
	CPUHostPassthrough = "host-passthrough"
	CPUHostModel       = "host-model"
	CPUCustom          = "custom"
)

// CPUModes lists the CPU modes a template may ask for.
var CPUModes = []string{CPUHostPassthrough, CPUHostModel, CPUCustom}

// CPU is the template's CPU: a mode, and a model for the custom mode only.
type CPU struct {
	Mode  string
	Model string
}

// Shape is what every member of a group is built as, the same in each: the template's fields
// that its desired instances keep as they are. Template, DesiredInstance and backend.DomainSpec
// embed it, so Desire and the domain spec copy it as one value, and a VM option is one field here
// (or in Hardware) that reaches all three; the store converts it in one place (store.shapeOf).
// The template's fields that each member resolves its own way are not part of it: the boot disk
// and disks (a member's volumes, or a config's sources), the interfaces (with the addresses a
// config pins) and the metadata (with the config's laid over).
type Shape struct {
	DomainType  string
	VCPU        int64
	MemoryMiB   int64
	Labels      map[string]string
	Description string
	// CloudInit gives every member a NoCloud seed; nil gives none.
	CloudInit *CloudInit
	// ConsoleLogDir is the directory on the member's host its serial console is appended to, as
	// <member>.console.log; "" logs nothing.
	ConsoleLogDir string
	// Hardware is the members' firmware, machine, cpu and devices (devices.go).
	Hardware
}

// Template is what every instance of a group is built from: its Shape, and the disks,
// interfaces and metadata each member resolves in Desire.
type Template struct {
	Shape
	BootDisk BootDisk
	Disks    []Disk
	NICs     []NIC
	Metadata map[string]string
	// Adopted marks the shape of a domain no provider created, adopted into the group: it has
	// neither a provider boot volume nor template disks, and only its config applies to it.
	Adopted bool
}

// AdoptedTemplate is the template an adopted domain is kept at: its own type, size and
// description, nothing else.
func AdoptedTemplate(current DesiredInstance) Template {
	return Template{Shape: Shape{DomainType: current.DomainType, VCPU: current.VCPU, MemoryMiB: current.MemoryMiB, Description: current.Description}, Adopted: true}
}

// Canonical returns a copy of t in canonical form: disks sorted by device name and empty maps as
// nil, so that equal templates compare and hash equal.
func (t Template) Canonical() Template {
	c := t
	c.Disks = slices.Clone(t.Disks)
	sort.Slice(c.Disks, func(i, j int) bool { return c.Disks[i].DeviceName < c.Disks[j].DeviceName })
	if len(c.Disks) == 0 {
		c.Disks = nil
	}
	c.NICs = slices.Clone(t.NICs)
	if len(c.NICs) == 0 {
		c.NICs = nil
	}
	c.Metadata = cloneMap(t.Metadata)
	c.Shape = t.Shape.canonical()
	return c
}

// canonical returns a copy of s in canonical form, sharing no map or pointer with s.
func (s Shape) canonical() Shape {
	c := s
	c.Labels = cloneMap(s.Labels)
	if s.CloudInit != nil {
		ci := *s.CloudInit
		c.CloudInit = &ci
	}
	c.Hardware = s.Hardware.canonical()
	return c
}

func cloneMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	return maps.Clone(m)
}

// EFI reports whether the template boots with UEFI firmware.
func (t Template) EFI() bool { return t.Firmware == FirmwareEFI }

// Revision is a short, stable hash of the template's canonical form.
func (t Template) Revision() string { return shortHash(templateJSON(t.Canonical())) }

// DiskByName returns the template disk with the given device name.
func (t Template) DiskByName(name string) (Disk, bool) {
	for _, d := range t.Disks {
		if d.DeviceName == name {
			return d, true
		}
	}
	return Disk{}, false
}

// Reason is one itemised cause of an action: what changed and what it costs.
type Reason struct {
	Action Action
	What   string
}

func (r Reason) String() string { return r.What }

// Diff returns the least action that turns an instance built from current into one built from
// desired, with a reason for every difference: the instance-level diff of the two templates
// with no preserved state.
func Diff(current, desired Template) (Action, []Reason) {
	const name = "instance"
	return InstanceDiff(Desire(name, current, PreservedState{}, PreservedState{}), Desire(name, desired, PreservedState{}, PreservedState{}))
}

func sortedKeys(ms ...map[string]string) []string {
	seen := map[string]bool{}
	var keys []string
	for _, m := range ms {
		for k := range m {
			if !seen[k] {
				seen[k] = true
				keys = append(keys, k)
			}
		}
	}
	sort.Strings(keys)
	return keys
}

// Shrink is a disk whose desired size is below its current one.
type Shrink struct {
	DeviceName string
	From, To   int64
}

// Shrinks lists the disks, the boot disk included, that desired makes smaller than current.
func Shrinks(current, desired Template) []Shrink {
	var out []Shrink
	if desired.BootDisk.SizeMiB < current.BootDisk.SizeMiB {
		out = append(out, Shrink{BootDeviceName, current.BootDisk.SizeMiB, desired.BootDisk.SizeMiB})
	}
	for _, d := range desired.Canonical().Disks {
		if c, ok := current.DiskByName(d.DeviceName); ok && d.SizeMiB < c.SizeMiB {
			out = append(out, Shrink{d.DeviceName, c.SizeMiB, d.SizeMiB})
		}
	}
	return out
}
