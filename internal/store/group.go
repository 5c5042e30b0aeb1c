package store

import "time"

// GroupRecord is the body of a group record: the group's state, then who owns the group, who is
// changing it, and who wrote its last generations (engine.GroupRecord).
type GroupRecord struct {
	Group              Group                  `json:"group"`
	Pool               string                 `json:"pool"`
	Policy             *Policy                `json:"stateful_policy,omitempty"`
	Configs            map[string]ConfigEntry `json:"per_instance_configs,omitempty"`
	Resource           string                 `json:"resource,omitempty"`
	Released           *Released              `json:"released,omitempty"`
	UnfinishedReleases []Released             `json:"unfinished_releases,omitempty"`
	Placement          map[string]string      `json:"placement,omitempty"`
	Placed             bool                   `json:"placed,omitempty"`
	Creating           []string               `json:"creating,omitempty"`
	TemplateRevisions  []string               `json:"template_revisions,omitempty"`
	Retained           []string               `json:"retained_config_state,omitempty"`
	// Images is new in version 7 (optional): the image volumes the group made from a host file,
	// by host (engine.GroupState.Images).
	Images map[string][]Image `json:"images,omitempty"`
	// Inventory is new in version 7: every object the group made. A record without it is from
	// an earlier release, which kept none; it gains one once (engine.GroupState.Inventoried).
	Inventory *Inventory `json:"inventory,omitempty"`
	Owner     *Owner     `json:"owner,omitempty"`
	Lease     *Lease     `json:"lease,omitempty"`
	Writes    []Write    `json:"writes,omitempty"`
}

// Group is engine.Group as stored.
type Group struct {
	Name               string              `json:"name"`
	Base               string              `json:"base_instance_name"`
	TargetSize         int                 `json:"target_size"`
	Running            bool                `json:"running"`
	Template           Template            `json:"template"`
	Policy             UpdatePolicy        `json:"update_policy"`
	ShutdownTimeout    string              `json:"shutdown_timeout,omitempty"`
	ScaleInOrder       string              `json:"scale_in_order,omitempty"`
	AutoHealing        *AutoHealing        `json:"auto_healing,omitempty"`
	FailedPreservation *FailedPreservation `json:"failed_instance_preservation,omitempty"`
	// HealthCheck is new in version 2; a version 1 record has none.
	HealthCheck *HealthCheck `json:"health_check,omitempty"`
	Hosts       []string     `json:"hosts,omitempty"`
	// AdoptExisting and Abandon are new in version 3; a record without them adopts nothing by
	// name and abandons nothing.
	AdoptExisting bool     `json:"adopt_existing,omitempty"`
	Abandon       []string `json:"abandon,omitempty"`
	// Drain, Rebalance and ColdMoves are new in version 6; a record without them drains no host,
	// does not rebalance, and moves live where the hosts allow.
	Drain     []string `json:"drain,omitempty"`
	Rebalance bool     `json:"rebalance,omitempty"`
	ColdMoves bool     `json:"cold_moves,omitempty"`
}

// HealthCheck is engine.HealthCheck as stored (version 2). Durations are Go duration texts
// ("10s", "1m30s"), as time.Duration's String writes them and time.ParseDuration reads them.
type HealthCheck struct {
	Probe              Probe  `json:"probe"`
	Interval           string `json:"interval"`
	Timeout            string `json:"timeout"`
	HealthyThreshold   int    `json:"healthy_threshold"`
	UnhealthyThreshold int    `json:"unhealthy_threshold"`
}

// Probe is engine.Probe as stored (version 2): Kind is the probe block's name.
type Probe struct {
	Kind         string   `json:"kind"`
	Command      []string `json:"command,omitempty"`
	Port         int      `json:"port,omitempty"`
	Path         string   `json:"path,omitempty"`
	ExpectStatus int      `json:"expect_status,omitempty"`
}

// Action is an engine.Action as stored: its name as users write it (NONE, REFRESH, RESTART,
// REPLACE).
type Action string

// UpdatePolicy is engine.UpdatePolicy as stored.
type UpdatePolicy struct {
	Type                  string `json:"type"`
	MinimalAction         Action `json:"minimal_action"`
	MostDisruptiveAllowed Action `json:"most_disruptive_allowed_action"`
	MaxUnavailable        int    `json:"max_unavailable"`
	MaxUnavailablePercent int    `json:"max_unavailable_percent,omitempty"`
	// New in version 2, each left out at its zero value (the engine's default), so that a
	// version 1 record reads as it meant and writes back to the same bytes. Durations as in
	// HealthCheck.
	MinReady     string `json:"min_ready,omitempty"`
	ReadyTimeout string `json:"ready_timeout,omitempty"`
	OnFailure    string `json:"on_failure,omitempty"`
	// Snapshot is engine.UpdatePolicy's Snapshot (optional: absent is none; format version 8).
	Snapshot *SnapshotPolicy `json:"snapshot,omitempty"`
	// Canary is engine.UpdatePolicy's Canary, left out when the group has no hold (format version 8).
	Canary *Canary `json:"canary,omitempty"`
}

// SnapshotPolicy is engine.SnapshotPolicy as stored; Retention as the durations of HealthCheck.
type SnapshotPolicy struct {
	Disks     []string `json:"disks,omitempty"`
	Retention string   `json:"retention,omitempty"`
}

// Canary is engine.Canary as stored: {} is a hold at 0 members.
type Canary struct {
	Fixed   int `json:"fixed,omitempty"`
	Percent int `json:"percent,omitempty"`
}

// AutoHealing is engine.AutoHealing as stored.
type AutoHealing struct {
	InitialDelay           string `json:"initial_delay"`
	Backoff                string `json:"backoff"`
	MaxConsecutiveFailures int    `json:"max_consecutive_failures"`
}

// FailedPreservation is engine.FailedPreservation as stored.
type FailedPreservation struct {
	AutoPreserveFailedMax int    `json:"auto_preserve_failed_max"`
	PreserveTimeout       string `json:"preserve_timeout"`
}

// Policy is engine.Policy as stored.
type Policy struct {
	Disks []PolicyDisk `json:"disks,omitempty"`
}

// PolicyDisk is engine.PolicyDisk as stored.
type PolicyDisk struct {
	DeviceName string `json:"device_name"`
	DeleteRule string `json:"delete_rule"`
}

// ConfigEntry is engine.ConfigEntry as stored.
type ConfigEntry struct {
	Config                  InstanceConfig `json:"preserved_state"`
	MinimalAction           Action         `json:"minimal_action"`
	MostDisruptiveAllowed   Action         `json:"most_disruptive_allowed_action"`
	RemoveInstanceOnDestroy bool           `json:"remove_instance_on_destroy,omitempty"`
	RemoveStateOnDestroy    bool           `json:"remove_instance_state_on_destroy,omitempty"`
	Preserve                string         `json:"preserve,omitempty"`
}

// InstanceConfig is engine.InstanceConfig as stored.
type InstanceConfig struct {
	Disks      []ConfigDisk      `json:"disks,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	NetworkIPs []NetworkIP       `json:"network_ips,omitempty"`
}

// NetworkIP is engine.NetworkIP as stored.
type NetworkIP struct {
	Interface string `json:"interface"`
	Address   string `json:"address"`
}

// ConfigDisk is engine.ConfigDisk as stored.
type ConfigDisk struct {
	DeviceName string `json:"device_name"`
	Source     string `json:"source"`
	Mode       string `json:"mode"`
	DeleteRule string `json:"delete_rule"`
}

// Released is engine.Released as stored.
type Released struct {
	Run        string                 `json:"run"`
	Policy     Policy                 `json:"stateful_policy"`
	Configs    map[string]ConfigEntry `json:"per_instance_configs,omitempty"`
	Unfinished bool                   `json:"unfinished,omitempty"`
}

// Owner is engine.Owner as stored.
type Owner struct {
	ID       string    `json:"id"`
	Since    time.Time `json:"since"`
	Creating bool      `json:"creating,omitempty"`
}

// Lease is engine.Lease as stored.
type Lease struct {
	Holder  string    `json:"holder"`
	Host    string    `json:"host,omitempty"`
	PID     int       `json:"pid,omitempty"`
	Since   time.Time `json:"since"`
	Expires time.Time `json:"expires"`
}

// Write is engine.Write as stored.
type Write struct {
	Generation int64  `json:"generation"`
	Run        string `json:"run"`
}

// Image is engine.HostImage as stored: an image volume the group made from a host file.
type Image struct {
	Source       string `json:"source"`
	Volume       string `json:"volume"`
	Format       string `json:"format"`
	SHA256       string `json:"sha256"`
	Bytes        uint64 `json:"bytes"`
	VirtualBytes uint64 `json:"virtual_bytes"`
}

// Inventory is engine.Inventory as stored (version 7): present, even empty, once the record
// keeps one.
type Inventory struct {
	Objects []Made `json:"objects,omitempty"`
}

// Made is engine.Made as stored. Kind is one of madeKinds' names; Intent marks an object the
// group was about to make and has not yet seen made (engine.Made's Confirmed false).
type Made struct {
	Kind   string `json:"kind"`
	Host   string `json:"host"`
	Name   string `json:"name"`
	UUID   string `json:"uuid,omitempty"`
	Intent bool   `json:"intent,omitempty"`
	// Reclaimed is engine.Made's Reclaimed (optional: absent is false; format version 7).
	Reclaimed bool `json:"reclaimed,omitempty"`
	// Tag, Revision, TakenAt and ReadyAt are a snapshot's (kind "snapshot"): engine.Made's
	// (optional, absent for every other kind; format version 7). Times in Unix milliseconds.
	Tag      string `json:"tag,omitempty"`
	Revision string `json:"revision,omitempty"`
	TakenAt  int64  `json:"taken_at,omitempty"`
	ReadyAt  int64  `json:"ready_at,omitempty"`
}
