package store

// Template and Desired stay apart from each other and from the engine's types: they are formats
// on hosts, whose JSON (field order included) records of earlier releases fix (TestFingerprint,
// the golden files), so they share only the hardware, whose fields sit together in both.
//
// Template is engine.Template as stored: in a member's record (what it was built from) and in
// the group record (the group's template).
type Template struct {
	DomainType    string            `json:"domain_type"`
	VCPU          int64             `json:"vcpu"`
	MemoryMiB     int64             `json:"memory_mib"`
	BootDisk      BootDisk          `json:"boot_disk"`
	Disks         []Disk            `json:"disks,omitempty"`
	NICs          []NIC             `json:"nics,omitempty"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Description   string            `json:"description,omitempty"`
	CloudInit     *CloudInit        `json:"cloud_init,omitempty"`
	ConsoleLogDir string            `json:"console_log_dir,omitempty"`
	// The stored hardware (devices.go): embedded, so encoding/json writes its fields in place,
	// as when they were declared here.
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
	Name          string            `json:"name"`
	DomainType    string            `json:"domain_type"`
	VCPU          int64             `json:"vcpu"`
	MemoryMiB     int64             `json:"memory_mib"`
	NICs          []NIC             `json:"nics,omitempty"`
	BootImage     string            `json:"boot_image,omitempty"`
	Disks         []DesiredDisk     `json:"disks"`
	Metadata      map[string]string `json:"metadata,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Description   string            `json:"description,omitempty"`
	CloudInit     *CloudInit        `json:"cloud_init,omitempty"`
	ConsoleLogDir string            `json:"console_log_dir,omitempty"`
	// The stored hardware, embedded as in Template, with NVRAM (new in version 4) between its two
	// parts, where records have it.
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
