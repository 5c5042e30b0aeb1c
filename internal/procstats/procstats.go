// Package procstats is the record a provider process writes beside its CPU profile under
// VIRT_CPUPROFILE_DIR (proc-<pid>.json, main_profile.go) and make bench-cli -profile reads
// (cmd/bench): one format, in one place.
package procstats

import (
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
)

// Stats is one provider process: its wall time, its CPU, the Terraform calls it served and its
// libvirt calls.
type Stats struct {
	PID     int              `json:"pid"`
	Started time.Time        `json:"started"`
	Wall    time.Duration    `json:"wall_ns"`
	User    time.Duration    `json:"user_ns"`
	Sys     time.Duration    `json:"sys_ns"`
	MaxRSS  int64            `json:"max_rss_kib"`
	Calls   []ServedCall     `json:"calls"`
	Libvirt libvirt.RPCStats `json:"libvirt"`
}

// ServedCall is one Terraform call the process served: when it started (from the process's
// start) and how long it took.
type ServedCall struct {
	Method string        `json:"method"`
	At     time.Duration `json:"at_ns"`
	Took   time.Duration `json:"took_ns"`
}

// CPU is the process's user and system time.
func (s Stats) CPU() time.Duration { return s.User + s.Sys }
