package libvirt

import (
	"context"
	"fmt"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// stopPollInterval is how often WaitStopped reads a domain's state. It is production waiting: a
// guest takes seconds to shut down, and one state read is a small call.
const stopPollInterval = 150 * time.Millisecond

// ShutdownDomain presses the domain's ACPI power button: the guest decides whether and how fast
// to shut down, and WaitStopped tells when it has. A domain that is shut off is not an error,
// which also makes pressing again after a lost connection safe. libvirt refuses the request
// ("domain is not running") for every state but running: a domain paused, suspended or crashed
// is then a *backend.NotRunningError, so that the caller does not wait shutdown_timeout for a
// guest that cannot act on it.
func (b *Backend) ShutdownDomain(ctx context.Context, name string) error {
	b.handles.forget(name)
	var halted engine.Status
	err := b.do(ctx, "shut down domain", name, func(c conn) error {
		halted = ""
		d, err := c.lookup(name)
		if err != nil {
			return err
		}
		err = c.l.DomainShutdownFlags(d, golibvirt.DomainShutdownAcpiPowerBtn)
		if err == nil {
			return nil
		}
		if !isCode(err, golibvirt.ErrOperationInvalid) {
			return wrap("shut down domain", name, err)
		}
		state, _, err := c.l.DomainGetState(d, 0)
		if err != nil {
			return wrap("read domain state", name, err)
		}
		// Shut off, shutting down already, or running again since the refusal: the wait that
		// follows sees it stop, or powers it off at its timeout.
		switch golibvirt.DomainState(state) {
		case golibvirt.DomainPaused:
			// Paused for any reason, starting up included: the request was refused.
			halted = engine.StatusPaused
		case golibvirt.DomainPmsuspended:
			halted = engine.StatusSuspended
		case golibvirt.DomainCrashed:
			halted = engine.StatusFailed
		}
		return nil
	})
	if err != nil {
		return err
	}
	if halted != "" {
		return &backend.NotRunningError{Domain: name, Status: halted}
	}
	tflog.SubsystemDebug(ctx, Subsystem, "asked domain to shut down", map[string]any{"domain": name})
	return nil
}

// WaitStopped reads the domain's state until it is shut off, the timeout passes (stopped is then
// false, and that is no error) or ctx ends. A missing domain is stopped.
//
// It polls rather than subscribing to go-libvirt's lifecycle events: events live on one
// connection and end with it, so a wait would have to subscribe again after a reconnect and read
// the state anyway in case the event fell between the two, and each wait would register a
// callback with the daemon. A poll is one state read that the reconnect in do covers like any
// other call. The timeout is measured from the call, not from each attempt.
func (b *Backend) WaitStopped(ctx context.Context, name string, timeout time.Duration) (bool, error) {
	start := time.Now()
	deadline := start.Add(timeout)
	timer := time.NewTimer(0)
	defer timer.Stop()
	for {
		select {
		case <-ctx.Done():
			return false, fmt.Errorf("wait for domain %s to stop: %w", name, ctx.Err())
		case <-timer.C:
		}
		stopped, err := b.isStopped(ctx, name)
		if err != nil {
			return false, err
		}
		if stopped {
			tflog.SubsystemDebug(ctx, Subsystem, "domain stopped", map[string]any{"domain": name, "waited": time.Since(start).String()})
			return true, nil
		}
		left := time.Until(deadline)
		if left <= 0 {
			tflog.SubsystemDebug(ctx, Subsystem, "domain still running at the timeout", map[string]any{"domain": name, "timeout": timeout.String()})
			return false, nil
		}
		timer.Reset(min(stopPollInterval, left))
	}
}

// isStopped reads whether the domain is shut off. Only shut off counts: "shutdown" is libvirt's
// state for a guest that is still shutting down.
func (b *Backend) isStopped(ctx context.Context, name string) (bool, error) {
	stopped := false
	err := b.do(ctx, "wait for domain to stop", name, func(c conn) error {
		d, err := c.lookup(name)
		if isNotFound(err) {
			stopped = true
			return nil
		}
		if err != nil {
			return err
		}
		state, _, err := c.l.DomainGetState(d, 0)
		if isNotFoundLibvirt(err) {
			stopped = true
			return nil
		}
		if err != nil {
			return wrap("read domain state", name, err)
		}
		stopped = golibvirt.DomainState(state) == golibvirt.DomainShutoff
		return nil
	})
	return stopped, err
}
