package libvirt

import (
	"testing"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// TestStatusOf converts libvirt's states to the engine's once, here.
func TestStatusOf(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		state  golibvirt.DomainState
		reason int32
		want   engine.Status
	}{
		"running":                        {golibvirt.DomainRunning, 1, engine.StatusRunning},
		"blocked":                        {golibvirt.DomainBlocked, 0, engine.StatusRunning},
		"paused by the user":             {golibvirt.DomainPaused, int32(golibvirt.DomainPausedUser), engine.StatusPaused},
		"paused by an I/O error":         {golibvirt.DomainPaused, int32(golibvirt.DomainPausedIoerror), engine.StatusPaused},
		"paused while libvirt starts it": {golibvirt.DomainPaused, int32(golibvirt.DomainPausedStartingUp), engine.StatusRunning},
		"shutting down":                  {golibvirt.DomainShutdown, 1, engine.StatusStopped},
		"shut off":                       {golibvirt.DomainShutoff, 1, engine.StatusStopped},
		"crashed":                        {golibvirt.DomainCrashed, 0, engine.StatusFailed},
		"suspended":                      {golibvirt.DomainPmsuspended, 0, engine.StatusSuspended},
		"unknown state":                  {golibvirt.DomainState(99), 0, engine.StatusFailed},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, statusOf(int32(c.state), c.reason)); d != "" {
				t.Errorf("statusOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestReasonOf converts libvirt's state reasons to the engine's once, here: the engine never
// sees libvirt's words or codes.
func TestReasonOf(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		state  golibvirt.DomainState
		reason int32
		want   engine.StateReason
	}{
		"running":                   {golibvirt.DomainRunning, 1, engine.StateReasonNone},
		"shut down by the guest":    {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffShutdown), engine.StateReasonShutDown},
		"powered off from outside":  {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffDestroyed), engine.StateReasonDestroyed},
		"QEMU crashed":              {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffCrashed), engine.StateReasonCrashed},
		"failed to start":           {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffFailed), engine.StateReasonFailedToStart},
		"stopped by the daemon":     {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffDaemon), engine.StateReasonStoppedByDaemon},
		"shut off, never started":   {golibvirt.DomainShutoff, int32(golibvirt.DomainShutoffUnknown), engine.StateReasonNone},
		"paused by an I/O error":    {golibvirt.DomainPaused, int32(golibvirt.DomainPausedIoerror), engine.StateReasonIOError},
		"paused by a user":          {golibvirt.DomainPaused, int32(golibvirt.DomainPausedUser), engine.StateReasonPausedByUser},
		"paused by a watchdog":      {golibvirt.DomainPaused, int32(golibvirt.DomainPausedWatchdog), engine.StateReasonWatchdog},
		"paused, guest crashed":     {golibvirt.DomainPaused, int32(golibvirt.DomainPausedCrashed), engine.StateReasonCrashed},
		"paused while starting":     {golibvirt.DomainPaused, int32(golibvirt.DomainPausedStartingUp), engine.StateReasonNone},
		"paused by QEMU, no reason": {golibvirt.DomainPaused, int32(golibvirt.DomainPausedUnknown), engine.StateReasonPausedUnknown},
		"crashed state":             {golibvirt.DomainCrashed, 0, engine.StateReasonCrashed},
		"unknown state":             {golibvirt.DomainState(99), 0, engine.StateReasonNone},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, reasonOf(int32(c.state), c.reason)); d != "" {
				t.Errorf("reasonOf (-want +got):\n%s", d)
			}
		})
	}
}

// TestParamInt reads the state statistics as libvirt sends them, whatever integer type the
// typed parameter carries, and says when one is missing.
func TestParamInt(t *testing.T) {
	params := []golibvirt.TypedParam{
		{Field: "state.state", Value: *golibvirt.NewTypedParamValueInt(int32(golibvirt.DomainPaused))},
		{Field: "state.reason", Value: golibvirt.TypedParamValue{D: 2, I: uint32(golibvirt.DomainPausedIoerror)}},
		{Field: "balloon.current", Value: golibvirt.TypedParamValue{D: 4, I: uint64(65536)}},
	}
	if v, ok := paramInt(params, "state.state"); !ok || v != int32(golibvirt.DomainPaused) {
		t.Errorf("state.state = %d, %t", v, ok)
	}
	if v, ok := paramInt(params, "state.reason"); !ok || v != int32(golibvirt.DomainPausedIoerror) {
		t.Errorf("state.reason = %d, %t", v, ok)
	}
	if _, ok := paramInt(params, "state.missing"); ok {
		t.Error("found a parameter that is not there")
	}
}
