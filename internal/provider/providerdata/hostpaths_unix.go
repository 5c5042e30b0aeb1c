//go:build !windows

package providerdata

import (
	"io/fs"
	"syscall"
)

// fileUID is the owner of the file fi describes.
func fileUID(fi fs.FileInfo) (uint32, bool) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return 0, false
	}
	return st.Uid, true
}
