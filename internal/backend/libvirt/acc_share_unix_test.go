//go:build unix

package libvirt

import (
	"fmt"
	"os"
	"syscall"
)

// accShareLock is the lock internal/provider's acceptance runs take (its acc_share_unix_test.go):
// a run of that package that starts while no one holds it sweeps every tfacc- domain and volume
// on the machine. This package's acceptance tests name their objects tfacc- too, so they hold it
// shared for the whole run: a provider run starting meanwhile leaves their objects alone (it did
// not, and swept the probe tests' guests from under them).
const accShareLock = "/tmp/virt-acc-sweep.lock"

// holdAccShare takes accShareLock shared for the life of the process (the kernel drops it when
// the process ends, however it ends).
func holdAccShare() error {
	f, err := os.OpenFile(accShareLock, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return fmt.Errorf("open %s: %w", accShareLock, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_SH); err != nil {
		return fmt.Errorf("flock %s: %w", accShareLock, err)
	}
	accShareFile = f
	return nil
}

// accShareFile keeps the lock's descriptor referenced for the life of the process.
var accShareFile *os.File
