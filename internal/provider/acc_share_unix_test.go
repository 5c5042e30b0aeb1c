//go:build unix

package provider

import (
	"fmt"
	"os"
	"syscall"
)

// accShareLock is taken by every acceptance run of this package on the machine, so that
// concurrent runs (two developers' targeted runs, a helper's beside `make testacc`) do not sweep
// each other's tfacc- objects mid-test.
const accShareLock = "/tmp/virt-acc-sweep.lock"

// sweepAlone runs sweep when no other acceptance run holds accShareLock, then holds the lock
// shared for as long as this process runs (the descriptor is never closed; the kernel drops the
// lock when the process ends, however it ends). When another run is active it skips sweep and
// says so: that run's objects are not leftovers. It reports whether it swept.
func sweepAlone(sweep func() error) (bool, error) {
	f, err := os.OpenFile(accShareLock, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return false, fmt.Errorf("open %s: %w", accShareLock, err)
	}
	fd := int(f.Fd())
	if err := syscall.Flock(fd, syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		// Another run holds it: share it (waiting while that run sweeps) and leave its objects.
		if err := syscall.Flock(fd, syscall.LOCK_SH); err != nil {
			return false, fmt.Errorf("flock %s: %w", accShareLock, err)
		}
		accShareFile = f
		return false, nil
	}
	accShareFile = f
	if err := sweep(); err != nil {
		return true, err
	}
	// Down to shared: later runs see this one active and do not sweep its objects.
	if err := syscall.Flock(fd, syscall.LOCK_SH); err != nil {
		return true, fmt.Errorf("flock %s: %w", accShareLock, err)
	}
	return true, nil
}

// accShareFile keeps the lock's descriptor referenced for the life of the process.
var accShareFile *os.File
