//go:build unix

package lifetime

import (
	"errors"
	"os"
	"syscall"
)

// ParentGone is the check Watch asks in the plugin: whether the process that started this one
// (pid parent, read at start) is gone. When a parent dies its children are given to init or to
// a subreaper, so a parent pid that changed means the parent is gone; a parent that cannot be
// signalled any more (ESRCH) is gone too. ok is false when there is nothing to watch: a plugin
// whose parent is already init.
func ParentGone(parent int) (gone func() bool, ok bool) {
	if parent <= 1 {
		return nil, false
	}
	return func() bool {
		if os.Getppid() != parent {
			return true
		}
		return errors.Is(syscall.Kill(parent, 0), syscall.ESRCH)
	}, true
}
