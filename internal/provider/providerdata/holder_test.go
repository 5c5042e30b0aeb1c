//go:build linux

package providerdata

import (
	"os"
	"os/exec"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

func hostname(t *testing.T) string {
	h, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestHolderGone(t *testing.T) {
	host := hostname(t)

	reaped := exec.Command("true")
	if err := reaped.Run(); err != nil {
		t.Fatal(err)
	}
	if !HolderGone(engine.Lease{Host: host, PID: reaped.Process.Pid}) {
		t.Error("a process that exited and was reaped counts as alive")
	}

	zombie := exec.Command("true")
	if err := zombie.Start(); err != nil {
		t.Fatal(err)
	}
	// Wait for it to exit without reaping it: it stays a zombie until Wait.
	var info unix.Siginfo
	if err := unix.Waitid(unix.P_PID, zombie.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil); err != nil {
		t.Fatal(err)
	}
	if !HolderGone(engine.Lease{Host: host, PID: zombie.Process.Pid}) {
		t.Error("a process that exited but was not reaped counts as alive")
	}
	_ = zombie.Wait()

	other := exec.Command("sleep", "60")
	if err := other.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = other.Process.Kill(); _ = other.Wait() }()
	if !HolderGone(engine.Lease{Host: host, PID: other.Process.Pid}) {
		t.Error("a number that now belongs to another program counts as a live provider")
	}

	// A provider process (here, this one, which runs the provider in tests) is alive.
	if HolderGone(engine.Lease{Host: host, PID: os.Getpid()}) {
		t.Error("a running provider counts as gone")
	}
	// Nothing is known of other machines, or of a lease without a process.
	if HolderGone(engine.Lease{Host: "elsewhere", PID: reaped.Process.Pid}) || HolderGone(engine.Lease{Host: host}) {
		t.Error("a holder on another machine, or without a pid, counts as gone")
	}
}
