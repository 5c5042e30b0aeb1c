package store

import (
	"maps"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The conversions keep nil apart from empty (a slice or map), so that a value read back and
// written again is the same value: the engine's hashes of a DesiredInstance tell a nil disk list
// ("disks":null) from an empty one ("disks":[]).

func each[A, B any](in []A, f func(A) B) []B {
	if in == nil {
		return nil
	}
	out := make([]B, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}

func eachValue[A, B any](in map[string]A, f func(A) B) map[string]B {
	if in == nil {
		return nil
	}
	out := make(map[string]B, len(in))
	for k, v := range in {
		out[k] = f(v)
	}
	return out
}

func ptr[A, B any](in *A, f func(A) B) *B {
	if in == nil {
		return nil
	}
	out := f(*in)
	return &out
}

// TemplateOf is t as stored.
func TemplateOf(t engine.Template) Template {
	s := Template{
		BootDisk: BootDisk{SourceImage: t.BootDisk.SourceImage, SizeMiB: t.BootDisk.SizeMiB},
		Disks:    each(t.Disks, func(d engine.Disk) Disk { return Disk{DeviceName: d.DeviceName, SizeMiB: d.SizeMiB} }),
		NICs:     each(t.NICs, nicOf), Metadata: maps.Clone(t.Metadata), Adopted: t.Adopted,
	}
	s.ShapeSize, s.ShapeSettings, s.HardwareFirmware, s.HardwareDevices = shapeOf(t.Shape)
	return s
}

// Engine is the stored template as the engine's.
func (t Template) Engine() engine.Template {
	return engine.Template{
		Shape:    shapeEngine(t.ShapeSize, t.ShapeSettings, t.HardwareFirmware, t.HardwareDevices),
		BootDisk: engine.BootDisk{SourceImage: t.BootDisk.SourceImage, SizeMiB: t.BootDisk.SizeMiB},
		Disks:    each(t.Disks, func(d Disk) engine.Disk { return engine.Disk{DeviceName: d.DeviceName, SizeMiB: d.SizeMiB} }),
		NICs:     each(t.NICs, NIC.Engine), Metadata: maps.Clone(t.Metadata), Adopted: t.Adopted,
	}
}

func cpuOf(c engine.CPU) CPU { return CPU{Mode: c.Mode, Model: c.Model} }

// Engine is the stored CPU as the engine's.
func (c CPU) Engine() engine.CPU { return engine.CPU{Mode: c.Mode, Model: c.Model} }

func nicOf(n engine.NIC) NIC { return NIC{Network: n.Network, Type: n.Type, Address: n.Address} }

// Engine is the stored interface as the engine's.
func (n NIC) Engine() engine.NIC {
	return engine.NIC{Network: n.Network, Type: n.Type, Address: n.Address}
}

func cloudInitOf(c engine.CloudInit) CloudInit {
	return CloudInit{UserData: c.UserData, NetworkConfig: c.NetworkConfig, UserDataWOVersion: c.UserDataWOVersion}
}

// Engine is the stored cloud-init as the engine's.
func (c CloudInit) Engine() engine.CloudInit {
	return engine.CloudInit{UserData: c.UserData, NetworkConfig: c.NetworkConfig, UserDataWOVersion: c.UserDataWOVersion}
}

// DesiredOf is d as stored.
func DesiredOf(d engine.DesiredInstance) Desired {
	s := Desired{
		Name: d.Name, NICs: each(d.NICs, nicOf),
		BootImage: d.BootImage, Disks: each(d.Disks, func(x engine.DesiredDisk) DesiredDisk {
			return DesiredDisk{DeviceName: x.DeviceName, Source: x.Source, ReadOnly: x.ReadOnly, SizeMiB: x.SizeMiB, Preserved: x.Preserved, DeleteRule: x.DeleteRule}
		}),
		Metadata: maps.Clone(d.Metadata), NVRAM: d.NVRAM,
	}
	s.ShapeSize, s.ShapeSettings, s.HardwareFirmware, s.HardwareDevices = shapeOf(d.Shape)
	return s
}

// Engine is the stored desired instance as the engine's.
func (d Desired) Engine() engine.DesiredInstance {
	return engine.DesiredInstance{
		Name: d.Name, Shape: shapeEngine(d.ShapeSize, d.ShapeSettings, d.HardwareFirmware, d.HardwareDevices), NICs: each(d.NICs, NIC.Engine),
		BootImage: d.BootImage, Disks: each(d.Disks, func(x DesiredDisk) engine.DesiredDisk {
			return engine.DesiredDisk{DeviceName: x.DeviceName, Source: x.Source, ReadOnly: x.ReadOnly, SizeMiB: x.SizeMiB, Preserved: x.Preserved, DeleteRule: x.DeleteRule}
		}),
		Metadata: maps.Clone(d.Metadata), NVRAM: d.NVRAM,
	}
}

// PreservedOf is s as stored.
func PreservedOf(s engine.PreservedState) Preserved {
	return Preserved{
		Disks: eachValue(s.Disks, func(d engine.PreservedDisk) PreservedDisk {
			return PreservedDisk{DeviceName: d.DeviceName, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule}
		}),
		Metadata:   maps.Clone(s.Metadata),
		NetworkIPs: maps.Clone(s.NetworkIPs),
	}
}

// Engine is the stored preserved state as the engine's.
func (s Preserved) Engine() engine.PreservedState {
	return engine.PreservedState{
		Disks: eachValue(s.Disks, func(d PreservedDisk) engine.PreservedDisk {
			return engine.PreservedDisk{DeviceName: d.DeviceName, Source: d.Source, Mode: d.Mode, DeleteRule: d.DeleteRule}
		}),
		Metadata:   maps.Clone(s.Metadata),
		NetworkIPs: maps.Clone(s.NetworkIPs),
	}
}

// ActionOf is a as stored.
func ActionOf(a engine.Action) Action { return Action(a.String()) }

// Engine is the stored action as the engine's. An action the record does not name is NONE, as
// a field missing from a record is.
func (a Action) Engine() (engine.Action, error) {
	if a == "" {
		return engine.ActionNone, nil
	}
	return engine.ParseAction(string(a))
}
