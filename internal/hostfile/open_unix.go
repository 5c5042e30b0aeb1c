//go:build !windows

package hostfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// Open opens the host file at p (absolute) for reading, judged by what the descriptor reaches:
// the name is resolved (links, "..") and judged, the resolved name is opened without following
// a link in its last part, and the open descriptor is judged again (JudgeOpened) by fstat and
// the kernel's name of it. The caller reads only through the returned file; the name is never
// used again.
func Open(p string, owners Owners) (*os.File, Opened, error) {
	if !filepath.IsAbs(p) {
		return nil, Opened{}, fmt.Errorf("%q is not an absolute path", p)
	}
	if d := ForbiddenTree(filepath.Clean(p)); d != "" {
		return nil, Opened{}, fmt.Errorf("%q is under %s, which holds the host's own system files and is never read", p, d)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, Opened{}, fmt.Errorf("%q does not exist (or a link on its way leads nowhere)", p)
		}
		return nil, Opened{}, fmt.Errorf("%q cannot be resolved: %w", p, err)
	}
	if d := ForbiddenTree(resolved); d != "" {
		return nil, Opened{}, fmt.Errorf("%q resolves to %s, under %s, which holds the host's own system files and is never read", p, resolved, d)
	}
	var st unix.Stat_t
	if err := unix.Lstat(resolved, &st); err != nil {
		return nil, Opened{}, fmt.Errorf("%q (%s) cannot be read: %w", p, resolved, err)
	}
	j := Judged{Path: resolved, Dev: uint64(st.Dev), Ino: st.Ino} //nolint:unconvert // Dev is int32 on darwin
	// O_NONBLOCK: a FIFO swapped in must not block the open; the judgement refuses it after.
	fd, err := unix.Open(resolved, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_CLOEXEC|unix.O_NONBLOCK|unix.O_NOCTTY, 0)
	if err != nil {
		if errors.Is(err, syscall.ELOOP) {
			return nil, Opened{}, fmt.Errorf("%q (%s) became a symbolic link after it was checked: refused", p, resolved)
		}
		return nil, Opened{}, fmt.Errorf("open %q (%s): %w", p, resolved, err)
	}
	f := os.NewFile(uintptr(fd), resolved)
	o, err := opened(fd)
	if err != nil {
		f.Close()
		return nil, Opened{}, fmt.Errorf("read what %q opened: %w", p, err)
	}
	if problem := JudgeOpened(p, j, o, owners); problem != "" {
		f.Close()
		return nil, Opened{}, errors.New(problem)
	}
	// Reads block as usual from here: the descriptor is a regular file's.
	if err := unix.SetNonblock(fd, false); err != nil {
		f.Close()
		return nil, Opened{}, err
	}
	return f, o, nil
}

// opened reads what the descriptor fd reaches.
func opened(fd int) (Opened, error) {
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return Opened{}, err
	}
	// Linux names the open file; elsewhere its device and inode are the proof (Path "").
	name, err := os.Readlink("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil && runtime.GOOS == "linux" {
		return Opened{}, err
	}
	return Opened{Path: name, Mode: modeOf(uint32(st.Mode)), UID: st.Uid, Dev: uint64(st.Dev), Ino: st.Ino}, nil //nolint:unconvert // Mode is uint16 and Dev int32 on darwin
}

// modeOf is the fs.FileMode type bits of a stat mode (permissions do not matter here).
func modeOf(m uint32) fs.FileMode {
	switch m & unix.S_IFMT {
	case unix.S_IFREG:
		return 0
	case unix.S_IFDIR:
		return fs.ModeDir
	case unix.S_IFLNK:
		return fs.ModeSymlink
	case unix.S_IFBLK:
		return fs.ModeDevice
	case unix.S_IFCHR:
		return fs.ModeDevice | fs.ModeCharDevice
	case unix.S_IFIFO:
		return fs.ModeNamedPipe
	case unix.S_IFSOCK:
		return fs.ModeSocket
	}
	return fs.ModeIrregular
}

// NotALink says why the volume file at p, in a pool whose directory is dir, may not be handed to
// libvirt now, or "" when it may: it must not be a symbolic link, and it must resolve inside
// dir. A volume swapped for a link after it was planned is caught here, just before the call.
func NotALink(p, dir string) string {
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return "" // libvirt says what is missing in its own words
		}
		return fmt.Sprintf("%s cannot be read: %v", p, err)
	}
	if fi.Mode()&fs.ModeSymlink != 0 {
		to, _ := os.Readlink(p)
		return fmt.Sprintf("%s is a symbolic link (to %q), not a volume file of the pool: refused, nothing is started on it", p, to)
	}
	if dir == "" {
		return ""
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		return fmt.Sprintf("%s cannot be resolved: %v", p, err)
	}
	rdir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		rdir = dir
	}
	if UnderDir(resolved, rdir) == "" {
		return fmt.Sprintf("%s resolves to %s, outside its pool's directory %s: refused, nothing is started on it", p, resolved, rdir)
	}
	return ""
}

// InPlace says why the host file (a disk: a regular file or a block device) or directory (dir)
// at p, which libvirt opens by name where it is, may not be handed to libvirt now, or "" when
// it may: what its name reaches at this moment, after links and "..", must be outside the
// forbidden trees, of the right kind, and owned as owners allow. It is judged again at every
// use, since a name checked at plan may have been re-pointed since.
func InPlace(p string, dir bool, owners Owners) string {
	if !filepath.IsAbs(p) {
		return fmt.Sprintf("%q is not an absolute path", p)
	}
	if d := ForbiddenTree(filepath.Clean(p)); d != "" {
		return fmt.Sprintf("%q is under %s, which holds the host's own system files and is never handed to libvirt", p, d)
	}
	resolved, err := filepath.EvalSymlinks(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Sprintf("%q does not exist (or a link on its way leads nowhere)", p)
		}
		return fmt.Sprintf("%q cannot be resolved: %v", p, err)
	}
	if d := ForbiddenTree(resolved); d != "" {
		return fmt.Sprintf("%q now resolves to %s, under %s, which holds the host's own system files and is never handed to libvirt", p, resolved, d)
	}
	var st unix.Stat_t
	if err := unix.Stat(resolved, &st); err != nil {
		return fmt.Sprintf("%q (%s) cannot be read: %v", p, resolved, err)
	}
	mode := modeOf(uint32(st.Mode)) //nolint:unconvert // Mode is uint16 on darwin
	switch {
	case dir && !mode.IsDir():
		return fmt.Sprintf("%q (%s) is not a directory", p, resolved)
	case !dir && mode.IsRegular() && UnderDir(resolved, "/dev") != "":
		return fmt.Sprintf("%q (%s) is a file under /dev, not a block device", p, resolved)
	case !dir && !mode.IsRegular() && mode&fs.ModeType != fs.ModeDevice:
		return fmt.Sprintf("%q (%s) is neither a regular file nor a block device", p, resolved)
	case !owners.accepts(st.Uid):
		return fmt.Sprintf("%q (%s) belongs to uid %d, not to root or the user libvirt runs QEMU as: the provider runs as root and does not hand another user's file to libvirt", p, resolved, st.Uid)
	}
	return ""
}
