package store

// Template and Desired stay apart from each other and from the engine's types: they are formats
// on hosts, whose JSON (field order included) records of earlier releases fix (TestFingerprint,
// the golden files). They share the stored engine.Shape (shape.go), embedded in four parts
// because each keeps other fields between them; encoding/json writes an embedded struct's fields
// in place, as when they were declared here.
//
// Template is engine.Template as stored: in a member's record (what it was built from) and in
// the group record (the group's template).
type Template struct {
	ShapeSize
	BootDisk BootDisk          `json:"boot_disk"`
	Disks    []Disk            `json:"disks,omitempty"`
	NICs     []NIC             `json:"nics,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"`
	ShapeSettings
	HardwareFirmware
	HardwareDevices
	Adopted bool `json:"adopted,omitempty"`
}

// CPU is engine.CPU as stored (version 4).
type CPU struct {
	Mode  string `json:"mode"`
	Model string `json:"model,omitempty"`
}

// BootDisk is engine.BootDisk as stored.
type BootDisk struct {
	SourceImage string `json:"source_image,omitempty"`
	SizeMiB     int64  `json:"size_mib"`
}

// Disk is engine.Disk as stored.
type Disk struct {
	DeviceName string `json:"device_name"`
	SizeMiB    int64  `json:"size_mib"`
}

// NIC is engine.NIC as stored.
type NIC struct {
	Network string `json:"network,omitempty"`
	Type    string `json:"type"`
	Address string `json:"address,omitempty"`
}

// CloudInit is engine.CloudInit as stored.
type CloudInit struct {
	UserData      string `json:"user_data,omitempty"`
	NetworkConfig string `json:"network_config,omitempty"`
	// UserDataWOVersion is the version of the write-only user data, never the data (version 5).
	UserDataWOVersion int64 `json:"user_data_wo_version,omitempty"`
}

// Desired is engine.DesiredInstance as stored: what a member's domain was last made to be, and
// the target of a change in flight.
type Desired struct {
	Name string `json:"name"`
	ShapeSize
	NICs      []NIC             `json:"nics,omitempty"`
	BootImage string            `json:"boot_image,omitempty"`
	Disks     []DesiredDisk     `json:"disks"`
	Metadata  map[string]string `json:"metadata,omitempty"`
	ShapeSettings
	// NVRAM (new in version 4) sits between the hardware's two parts, where records have it.
	HardwareFirmware
	NVRAM string `json:"nvram,omitempty"`
	HardwareDevices
}

// DesiredDisk is engine.DesiredDisk as stored.
type DesiredDisk struct {
	DeviceName string `json:"device_name"`
	Source     string `json:"source"`
	ReadOnly   bool   `json:"read_only,omitempty"`
	SizeMiB    int64  `json:"size_mib,omitempty"`
	Preserved  bool   `json:"preserved,omitempty"`
	DeleteRule string `json:"delete_rule,omitempty"`
}

// Preserved is engine.PreservedState as stored.
type Preserved struct {
	Disks      map[string]PreservedDisk `json:"disks,omitempty"`
	Metadata   map[string]string        `json:"metadata,omitempty"`
	NetworkIPs map[string]string        `json:"network_ips,omitempty"`
}

// PreservedDisk is engine.PreservedDisk as stored.
type PreservedDisk struct {
	DeviceName string `json:"device_name"`
	Source     string `json:"source"`
	Mode       string `json:"mode"`
	DeleteRule string `json:"delete_rule"`
}
