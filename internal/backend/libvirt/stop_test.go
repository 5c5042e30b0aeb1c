package libvirt

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
)

// TestAccShutdownThenStop runs a domain with no OS: SeaBIOS ignores the ACPI power button, so
// ShutdownDomain leaves it running until WaitStopped's timeout, and StopDomain is what stops it.
func TestAccShutdownThenStop(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	name := "tfacc-bk-stop-" + testSuffix()
	defineAcc(t, b, name)

	if err := b.ShutdownDomain(ctx, name); err != nil {
		t.Fatalf("shut down a domain that is not running: %v", err)
	}
	if err := b.StartDomain(ctx, name); err != nil {
		t.Fatalf("start: %v", err)
	}
	if err := b.ShutdownDomain(ctx, name); err != nil {
		t.Fatalf("shut down: %v", err)
	}
	const timeout = time.Second
	start := time.Now()
	stopped, err := b.WaitStopped(ctx, name, timeout)
	if err != nil || stopped {
		t.Fatalf("WaitStopped after ShutdownDomain = %v, %v; want false, nil (SeaBIOS ignores ACPI)", stopped, err)
	}
	if waited := time.Since(start); waited < timeout {
		t.Errorf("WaitStopped gave up after %v, before its timeout of %v", waited, timeout)
	}

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := b.WaitStopped(cancelled, name, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("WaitStopped with a cancelled context = %v, want context.Canceled", err)
	}

	if err := b.StopDomain(ctx, name); err != nil {
		t.Fatalf("stop: %v", err)
	}
	if stopped, err := b.WaitStopped(ctx, name, 10*time.Second); err != nil || !stopped {
		t.Fatalf("WaitStopped after StopDomain = %v, %v; want true, nil", stopped, err)
	}
}

// TestAccStopMissingDomain checks the answers for a domain that does not exist: shutting it
// down is ErrNotFound, and it counts as stopped.
func TestAccStopMissingDomain(t *testing.T) {
	requireAcc(t)
	ctx := context.Background()
	b := connectAcc(t, DefaultURI)
	name := "tfacc-bk-stop-missing-" + testSuffix()
	if err := b.ShutdownDomain(ctx, name); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("ShutdownDomain = %v, want ErrNotFound", err)
	}
	if stopped, err := b.WaitStopped(ctx, name, time.Second); err != nil || !stopped {
		t.Errorf("WaitStopped = %v, %v; want true, nil", stopped, err)
	}
}
