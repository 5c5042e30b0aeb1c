package store

import "encoding/json"

// ResourceSpec is the group resource's configuration as the user wrote it, stored as JSON text in
// the group record (GroupRecord.Resource), so that import can rebuild the resource from the host.
// It is a stored format like the record itself (TestFingerprint covers it); the provider converts
// its model to and from it. Pointers and nil maps keep "not set" apart from "empty".
type ResourceSpec struct {
	Base         string                `json:"base_instance_name"`
	Pool         string                `json:"pool"`
	TargetSize   int64                 `json:"target_size"`
	Running      bool                  `json:"running"`
	Shutdown     *string               `json:"shutdown_timeout,omitempty"`
	Template     ResourceTemplate      `json:"template"`
	UpdatePolicy *ResourceUpdatePolicy `json:"update_policy,omitempty"`
	ScaleIn      *string               `json:"scale_in_order,omitempty"`
	Hosts        []string              `json:"hosts,omitempty"`
	AutoHealing  *AutoHealing          `json:"auto_healing,omitempty"`
	Preservation *FailedPreservation   `json:"failed_instance_preservation,omitempty"`
	BootDisk     *ResourceBootDisk     `json:"boot_disk,omitempty"`
	// AdoptExisting and Abandon are new in version 3.
	AdoptExisting bool     `json:"adopt_existing,omitempty"`
	Abandon       []string `json:"abandon,omitempty"`
	// Drain, Rebalance and ColdMoves (distribution_policy's drain, rebalance and live = false)
	// are new in version 6; left out, they are the defaults: no host drained, no rebalance, live
	// moves where the hosts allow.
	Drain     []string `json:"drain,omitempty"`
	Rebalance bool     `json:"rebalance,omitempty"`
	ColdMoves bool     `json:"cold_moves,omitempty"`
}

// ResourceTemplate is the template block as written. It stays apart from Template (the engine's
// values) because import rebuilds the configuration from it: an attribute left out must come back
// null, not as its default, or the plan after an import would not be empty.
type ResourceTemplate struct {
	DomainType  string            `json:"domain_type"`
	VCPU        int64             `json:"vcpu"`
	MemoryMiB   int64             `json:"memory_mib"`
	Disks       []Disk            `json:"disks"`
	NICs        []NIC             `json:"nics"`
	Metadata    map[string]string `json:"metadata"`
	Labels      map[string]string `json:"labels"`
	Description *string           `json:"description"`
	// CloudInit keeps the block's attributes as written: nil pointers for unset ones.
	CloudInit     *ResourceCloudInit `json:"cloud_init,omitempty"`
	ConsoleLogDir *string            `json:"console_log_dir,omitempty"`
	// HealthCheck is new in version 2.
	HealthCheck *ResourceHealthCheck `json:"health_check,omitempty"`
	// Firmware, SecureBoot, Machine and CPU are new in version 4, nil when not set.
	Firmware   *string `json:"firmware,omitempty"`
	SecureBoot *bool   `json:"secure_boot,omitempty"`
	Machine    *string `json:"machine,omitempty"`
	CPU        *CPU    `json:"cpu,omitempty"`
	// The devices as written (devices.go), embedded: encoding/json writes their fields in place.
	ResourceDevices
}

// ResourceHealthCheck is the template's health_check block as planned (version 2): its
// attributes with their defaults filled, and the one probe block it has.
type ResourceHealthCheck struct {
	GuestAgent         *ResourceGuestAgent `json:"guest_agent,omitempty"`
	Exec               *ResourceExecProbe  `json:"exec,omitempty"`
	TCP                *ResourceTCPProbe   `json:"tcp,omitempty"`
	HTTP               *ResourceHTTPProbe  `json:"http,omitempty"`
	Interval           string              `json:"interval"`
	Timeout            string              `json:"timeout"`
	HealthyThreshold   int64               `json:"healthy_threshold"`
	UnhealthyThreshold int64               `json:"unhealthy_threshold"`
}

// ResourceGuestAgent is `guest_agent {}`: present or not.
type ResourceGuestAgent struct{}

// ResourceExecProbe is the exec block.
type ResourceExecProbe struct {
	Command []string `json:"command"`
}

// ResourceTCPProbe is the tcp block.
type ResourceTCPProbe struct {
	Port int64 `json:"port"`
}

// ResourceHTTPProbe is the http block.
type ResourceHTTPProbe struct {
	Port         int64  `json:"port"`
	Path         string `json:"path"`
	ExpectStatus int64  `json:"expect_status"`
}

// ResourceCloudInit is the cloud_init block as written.
type ResourceCloudInit struct {
	UserData      *string `json:"user_data,omitempty"`
	NetworkConfig *string `json:"network_config,omitempty"`
	// UserDataWOVersion is user_data_wo_version; user_data_wo is write-only and never stored.
	UserDataWOVersion *int64 `json:"user_data_wo_version,omitempty"`
}

// ResourceBootDisk is the boot_disk block as written.
type ResourceBootDisk struct {
	SourceImage *string `json:"source_image"`
	SizeMiB     int64   `json:"size_mib"`
}

// ResourceUpdatePolicy is the update_policy block as written.
type ResourceUpdatePolicy struct {
	Type           string     `json:"type"`
	MinimalAction  string     `json:"minimal_action"`
	MostDisruptive string     `json:"most_disruptive_allowed_action"`
	MaxUnavailable FlexString `json:"max_unavailable"`
	// New in version 2: nil in a version 1 record (and in state written before them), which
	// means their defaults.
	MinReady     *string `json:"min_ready,omitempty"`
	ReadyTimeout *string `json:"ready_timeout,omitempty"`
	OnFailure    *string `json:"on_failure,omitempty"`
	// Snapshot is the snapshot block as written (new in version 8: nil is no block).
	Snapshot *ResourceSnapshot `json:"snapshot,omitempty"`
	// Canary is canary as written (new in version 8); nil when not set.
	Canary *string `json:"canary,omitempty"`
}

// ResourceSnapshot is update_policy's snapshot block as written: nil Disks and Retention are
// unset.
type ResourceSnapshot struct {
	Disks     []string `json:"disks,omitempty"`
	Retention *string  `json:"retention,omitempty"`
}

// FlexString reads a JSON string, or a number as records written before max_unavailable took
// percentages stored it.
type FlexString string

// UnmarshalJSON reads either form.
func (f *FlexString) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*f = FlexString(s)
		return nil
	}
	var n json.Number
	if err := json.Unmarshal(b, &n); err != nil {
		return err
	}
	*f = FlexString(n.String())
	return nil
}
