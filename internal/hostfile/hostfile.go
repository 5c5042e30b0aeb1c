// Package hostfile holds the rules for files on a libvirt host that the provider hands to
// libvirt, or reads itself, outside every storage pool: which trees are never touched, who may
// own such a file, and how a file is judged by what an open descriptor reaches rather than by
// its name. A name can be re-pointed (a symbolic link swapped) between a check and a use; a
// descriptor cannot.
package hostfile

import (
	"fmt"
	"io/fs"
	"os/user"
	"slices"
	"strconv"
	"strings"
)

// ForbiddenDirs hold the host's own system files and kernel interfaces: nothing under them is
// ever handed to libvirt or read into a volume, even with allow_host_paths.
var ForbiddenDirs = []string{"/etc", "/proc", "/sys", "/boot", "/root", "/run", "/var/run"}

// HypervisorUsers are the users distributions run libvirt's QEMU as.
var HypervisorUsers = []string{"libvirt-qemu", "qemu"}

// Owners is who may own a host file a root provider uses: root, and the users libvirt runs
// QEMU as. A provider that is not root uses only what its own user may read, and owners do not
// matter then (Root false).
type Owners struct {
	Root    bool
	Trusted []uint32
}

// LocalOwners are the owners this machine's provider accepts.
func LocalOwners(euid int) Owners {
	o := Owners{Root: euid == 0}
	if !o.Root {
		return o
	}
	for _, name := range HypervisorUsers {
		if u, err := user.Lookup(name); err == nil {
			if id, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
				o.Trusted = append(o.Trusted, uint32(id))
			}
		}
	}
	return o
}

// accepts reports whether a root provider may use a file uid owns.
func (o Owners) accepts(uid uint32) bool {
	return !o.Root || uid == 0 || slices.Contains(o.Trusted, uid)
}

// ForbiddenTree is the forbidden directory p (clean, absolute) is in, or "".
func ForbiddenTree(p string) string {
	for _, d := range ForbiddenDirs {
		if UnderDir(p, d) != "" {
			return d
		}
	}
	return ""
}

// UnderDir is dir when the clean path p is dir or inside it, else "".
func UnderDir(p, dir string) string {
	if p == dir || strings.HasPrefix(p, dir+"/") {
		return dir
	}
	return ""
}

// Opened is what an open descriptor reaches, as fstat and the kernel's name of it tell.
type Opened struct {
	// Path is the kernel's name of the open file (/proc/self/fd/N): where it really is; "" where
	// the system does not say (then Dev and Ino alone tie it to the file judged).
	Path string
	Mode fs.FileMode
	UID  uint32
	Dev  uint64
	Ino  uint64
}

// Judged is the file the path judgement saw before the open: its resolved name and identity.
type Judged struct {
	Path string
	Dev  uint64
	Ino  uint64
}

// JudgeOpened says why the file an open descriptor reaches may not be read into a volume, or
// "" when it may: it must be the very file judged before the open (same device and inode, same
// resolved name), a regular file, outside the forbidden trees, and owned as owners allow. It is
// the last word: whatever was swapped between the judgement of the name and the open shows
// here.
func JudgeOpened(name string, j Judged, o Opened, owners Owners) string {
	switch {
	case o.Dev != j.Dev || o.Ino != j.Ino:
		return fmt.Sprintf("%q changed while it was being opened: the file opened (%s, device %d inode %d) is not the one checked (%s, device %d inode %d)", name, o.Path, o.Dev, o.Ino, j.Path, j.Dev, j.Ino)
	case o.Path != "" && ForbiddenTree(o.Path) != "":
		return fmt.Sprintf("%q reaches %s, under %s, which holds the host's own system files and is never read", name, o.Path, ForbiddenTree(o.Path))
	case o.Path != "" && o.Path != j.Path:
		return fmt.Sprintf("%q changed while it was being opened: it was checked as %s and the file opened is %s", name, j.Path, o.Path)
	case !o.Mode.IsRegular():
		return fmt.Sprintf("%q (%s) is not a regular file: only a regular file is read into an image volume", name, o.Path)
	case !owners.accepts(o.UID):
		return fmt.Sprintf("%q (%s) belongs to uid %d, not to root or the user libvirt runs QEMU as: the provider runs as root and does not read another user's file for libvirt. Give it to root (chown root), or put it in a storage pool", name, o.Path, o.UID)
	}
	return ""
}
