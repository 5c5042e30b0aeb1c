package store

import "github.com/virtfleet/terraform-provider-virt/internal/engine"

// HardwareFirmware is the firmware, machine and cpu of engine.Hardware as stored (new in version
// 4), and HardwareDevices its devices. Template and Desired embed both, so the two stored shapes
// of the hardware are one; they stay two structs because records hold a desired instance's NVRAM
// between them. A new VM option is a field of HardwareDevices (omitempty: a record without it is
// byte for byte as before) and two lines of hardwareOf and hardwareEngine.
type HardwareFirmware struct {
	Firmware   string `json:"firmware,omitempty"`
	SecureBoot bool   `json:"secure_boot,omitempty"`
	Machine    string `json:"machine,omitempty"`
	CPU        *CPU   `json:"cpu,omitempty"`
}

// HardwareDevices: see HardwareFirmware.
type HardwareDevices struct {
	Graphics    *Graphics    `json:"graphics,omitempty"`
	RNG         bool         `json:"rng,omitempty"`
	Filesystems []Filesystem `json:"filesystems,omitempty"`
	// TPM is new in version 7, left out when there is none: records without it read and write
	// byte for byte as before.
	TPM *TPM `json:"tpm,omitempty"`
}

// TPM is engine.TPM as stored (version 7).
type TPM struct {
	Model   string `json:"model"`
	Version string `json:"version"`
}

// ResourceTPM is the template's tpm block as configured (version 7): nil pointers for the
// attributes left out.
type ResourceTPM struct {
	Model   *string `json:"model,omitempty"`
	Version *string `json:"version,omitempty"`
}

// ResourceDevices are the template's devices as configured (version 4), in ResourceTemplate.
type ResourceDevices struct {
	Graphics    *ResourceGraphics    `json:"graphics,omitempty"`
	RNG         bool                 `json:"rng,omitempty"`
	Filesystems []ResourceFilesystem `json:"filesystems,omitempty"`
	TPM         *ResourceTPM         `json:"tpm,omitempty"`
}

// hardwareOf is h as stored: the one conversion of the hardware to the store, for templates and
// desired instances alike.
func hardwareOf(h engine.Hardware) (HardwareFirmware, HardwareDevices) {
	return HardwareFirmware{Firmware: h.Firmware, SecureBoot: h.SecureBoot, Machine: h.Machine, CPU: ptr(h.CPU, cpuOf)},
		HardwareDevices{Graphics: ptr(h.Graphics, graphicsOf), RNG: h.RNG, Filesystems: each(h.Filesystems, filesystemOf),
			TPM: ptr(h.TPM, func(t engine.TPM) TPM { return TPM{Model: t.Model, Version: t.Version} })}
}

// hardwareEngine is the stored hardware as the engine's: the inverse of hardwareOf.
func hardwareEngine(f HardwareFirmware, d HardwareDevices) engine.Hardware {
	return engine.Hardware{
		Firmware: f.Firmware, SecureBoot: f.SecureBoot, Machine: f.Machine, CPU: ptr(f.CPU, CPU.Engine),
		Graphics: ptr(d.Graphics, Graphics.Engine), RNG: d.RNG, Filesystems: each(d.Filesystems, Filesystem.Engine),
		TPM: ptr(d.TPM, func(t TPM) engine.TPM { return engine.TPM{Model: t.Model, Version: t.Version} }),
	}
}

// Graphics is engine.Graphics as stored: the password's version, never the password.
type Graphics struct {
	Type            string `json:"type"`
	Listen          string `json:"listen"`
	PasswordVersion int64  `json:"password_version,omitempty"`
}

// Filesystem is engine.Filesystem as stored.
type Filesystem struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly bool   `json:"read_only,omitempty"`
}

// ResourceGraphics is the template's graphics block as configured (version 4): the password's
// version, never the write-only password.
type ResourceGraphics struct {
	Type            string  `json:"type"`
	Listen          *string `json:"listen,omitempty"`
	PasswordVersion *int64  `json:"password_wo_version,omitempty"`
}

// ResourceFilesystem is one filesystem block as configured (version 4).
type ResourceFilesystem struct {
	Source   string `json:"source"`
	Target   string `json:"target"`
	ReadOnly *bool  `json:"read_only,omitempty"`
}

func graphicsOf(g engine.Graphics) Graphics {
	return Graphics{Type: g.Type, Listen: g.Listen, PasswordVersion: g.PasswordVersion}
}

// Engine is the stored graphics as the engine's.
func (g Graphics) Engine() engine.Graphics {
	return engine.Graphics{Type: g.Type, Listen: g.Listen, PasswordVersion: g.PasswordVersion}
}

func filesystemOf(f engine.Filesystem) Filesystem {
	return Filesystem{Source: f.Source, Target: f.Target, ReadOnly: f.ReadOnly}
}

// Engine is the stored share as the engine's.
func (f Filesystem) Engine() engine.Filesystem {
	return engine.Filesystem{Source: f.Source, Target: f.Target, ReadOnly: f.ReadOnly}
}
