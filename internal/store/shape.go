package store

import (
	"maps"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// ShapeSize is the domain type and size of engine.Shape as stored, and ShapeSettings its labels,
// description, cloud-init and console log directory; with HardwareFirmware and HardwareDevices
// (devices.go) they are the stored shape, which Template and Desired embed. They are four
// structs, not one, because both records keep fields of their own between them (the disks,
// interfaces and metadata; the NVRAM), and the JSON's order is fixed.
type ShapeSize struct {
	DomainType string `json:"domain_type"`
	VCPU       int64  `json:"vcpu"`
	MemoryMiB  int64  `json:"memory_mib"`
}

// ShapeSettings: see ShapeSize.
type ShapeSettings struct {
	Labels        map[string]string `json:"labels,omitempty"`
	Description   string            `json:"description,omitempty"`
	CloudInit     *CloudInit        `json:"cloud_init,omitempty"`
	ConsoleLogDir string            `json:"console_log_dir,omitempty"`
}

// shapeOf is s as stored: the one conversion of the shape to the store, for templates and
// desired instances alike. A field added to engine.Shape is a field of ShapeSettings (omitempty:
// a record without it is byte for byte as before) and a line here and in shapeEngine.
func shapeOf(s engine.Shape) (ShapeSize, ShapeSettings, HardwareFirmware, HardwareDevices) {
	f, d := hardwareOf(s.Hardware)
	return ShapeSize{DomainType: s.DomainType, VCPU: s.VCPU, MemoryMiB: s.MemoryMiB},
		ShapeSettings{Labels: maps.Clone(s.Labels), Description: s.Description, CloudInit: ptr(s.CloudInit, cloudInitOf), ConsoleLogDir: s.ConsoleLogDir},
		f, d
}

// shapeEngine is the stored shape as the engine's: the inverse of shapeOf.
func shapeEngine(size ShapeSize, set ShapeSettings, f HardwareFirmware, d HardwareDevices) engine.Shape {
	return engine.Shape{
		DomainType: size.DomainType, VCPU: size.VCPU, MemoryMiB: size.MemoryMiB,
		Labels: maps.Clone(set.Labels), Description: set.Description, CloudInit: ptr(set.CloudInit, CloudInit.Engine), ConsoleLogDir: set.ConsoleLogDir,
		Hardware: hardwareEngine(f, d),
	}
}
