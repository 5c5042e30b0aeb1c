//go:build linux

package providerdata

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
	"syscall"

	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// HolderGone tells that a lease's holder ran on this machine and its process is gone: an apply
// killed with SIGKILL, whose lease the next apply may take at once. A process that exited but was
// not yet reaped (a zombie) is gone; so is one whose number now belongs to another program. A
// process of that number that is a provider still counts as alive, and its lease then ends at
// its expiry.
func HolderGone(l engine.Lease) bool {
	host, err := os.Hostname()
	if err != nil || l.PID <= 0 || l.Host != host {
		return false
	}
	if errors.Is(syscall.Kill(l.PID, 0), syscall.ESRCH) {
		return true
	}
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", l.PID))
	if err != nil {
		return errors.Is(err, fs.ErrNotExist)
	}
	// "pid (comm) state ...": comm may hold spaces and parentheses, the state follows the last ')'.
	open, end := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
	if open < 0 || end < open || end+2 >= len(stat) {
		return false
	}
	if state := stat[end+2]; state == 'Z' || state == 'X' {
		return true
	}
	self, _ := os.ReadFile("/proc/self/comm")
	comm := string(stat[open+1 : end])
	return comm != strings.TrimSpace(string(self)) && !strings.HasPrefix(comm, "terraform-provi")
}
