package providerdata

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/virtfleet/terraform-provider-virt/internal/backend/libvirt"
	"github.com/virtfleet/terraform-provider-virt/internal/hostfile"
)

// Host paths are files and directories on a libvirt host that the provider hands to libvirt by
// path: disk sources outside pools and the console log directory. libvirt's daemon (root, for
// qemu:///system) opens them, so a path is judged by the file it reaches, after symbolic links
// and "..", wherever the provider can see that file, and by its text where it cannot.

// forbiddenHostDirs hold the host's own system files and kernel interfaces: nothing under them
// is ever handed to libvirt, even with allow_host_paths.
// The list is hostfile's, which judges files at the moment they are used.
var forbiddenHostDirs = hostfile.ForbiddenDirs

// blockDevicePrefixes are the /dev paths that name disks, for a host whose files the provider
// cannot see; on this machine a file's kind says it.
var blockDevicePrefixes = []string{"/dev/disk/", "/dev/mapper/", "/dev/sd", "/dev/vd", "/dev/hd", "/dev/xvd", "/dev/nvme", "/dev/md", "/dev/dm-", "/dev/loop", "/dev/zd", "/dev/rbd"}

// libvirtLogDir is where libvirt keeps its own logs (the system daemon's QEMU logs are in its
// qemu subdirectory): a console_log_dir under it needs no allow_host_paths.
const libvirtLogDir = "/var/log/libvirt"

// HostFacts is what the path judge knows about the host a path is on.
type HostFacts struct {
	// Name names the host in messages (its URI, password masked).
	Name string
	// Local is true when the host is this machine (a unix-socket URI): its files can be read.
	Local bool
	// Root is true when the provider runs as root. Root's libvirt opens any file; the provider
	// then refuses to hand it one that belongs to another user (see hostPathProblem).
	Root bool
	// TrustedUIDs own files a root provider accepts besides root's own: the users libvirt runs
	// QEMU as.
	TrustedUIDs []uint32
}

// hypervisorUsers are the users distributions run libvirt's QEMU as.
var hypervisorUsers = hostfile.HypervisorUsers

// HostFactsOf describes the host behind b. A backend that does not say its URI (a test's fake)
// is treated as remote: its files are judged by their text.
func HostFactsOf(b any) HostFacts {
	f := HostFacts{Name: "the libvirt host"}
	if u, ok := b.(interface{ URI() string }); ok {
		f.Name = u.URI()
		f.Local = libvirt.IsLocal(u.URI())
	}
	if f.Local {
		f.Root = os.Geteuid() == 0
		for _, name := range hypervisorUsers {
			if u, err := user.Lookup(name); err == nil {
				if id, err := strconv.ParseUint(u.Uid, 10, 32); err == nil {
					f.TrustedUIDs = append(f.TrustedUIDs, uint32(id))
				}
			}
		}
	}
	return f
}

// PathKind is what a host path must be.
type PathKind int

const (
	// diskPath is a disk source: a regular file or a block device.
	diskPath PathKind = iota
	// DirPath is a directory libvirt writes files into.
	DirPath
)

// PathJudgement is the verdict on one host path.
type PathJudgement struct {
	// Problem says why the path may not be handed to libvirt; "" when it may.
	Problem string
	// Resolved is the path with links and ".." resolved, on a local host; "" otherwise.
	Resolved string
	// Unseen says that the host's files cannot be seen, so only the text was judged.
	Unseen bool
}

// HostPathProblem judges the host path p (absolute) as a path of kind on the host that facts
// describe. On this machine it resolves symbolic links and ".." and judges the file reached:
// not under a forbidden tree, of the right kind (a disk is a regular file or a block device, so
// /dev/mem or /dev/null are refused), and, when the provider runs as root and the place is not
// trusted (a storage pool, libvirt's own log directory), owned by root or by the user libvirt
// runs QEMU as: root's libvirt opens any file, and the provider does not hand it a file of
// another user on that user's behalf (they chown it, or put it in a pool). On another host only
// the text is judged (and must be clean), and Unseen is set so that the caller says so.
func HostPathProblem(p string, kind PathKind, trusted bool, facts HostFacts) PathJudgement {
	if !filepath.IsAbs(p) {
		return PathJudgement{Problem: fmt.Sprintf("%q is not an absolute path", p)}
	}
	if d := ForbiddenTree(filepath.Clean(p)); d != "" {
		return PathJudgement{Problem: fmt.Sprintf("%q is under %s, which holds the host's own system files and is never handed to libvirt", p, d)}
	}
	if !facts.Local {
		return judgeText(p, kind)
	}
	resolved, err := filepath.EvalSymlinks(p)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return PathJudgement{Problem: fmt.Sprintf("%q does not exist on %s (or a link on its way leads nowhere)", p, facts.Name)}
	case err != nil:
		return PathJudgement{Problem: fmt.Sprintf("%q cannot be resolved on %s: %v", p, facts.Name, errors.Unwrap(err))}
	}
	j := PathJudgement{Resolved: resolved}
	named := fmt.Sprintf("%q", p)
	if resolved != p {
		named = fmt.Sprintf("%q (which resolves to %q)", p, resolved)
	}
	if d := ForbiddenTree(resolved); d != "" {
		j.Problem = fmt.Sprintf("%s is under %s, which holds the host's own system files and is never handed to libvirt", named, d)
		return j
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		j.Problem = fmt.Sprintf("%s cannot be read on %s: %v", named, facts.Name, errors.Unwrap(err))
		return j
	}
	mode := fi.Mode()
	uid, hasUID := fileUID(fi)
	switch {
	case kind == DirPath && !mode.IsDir():
		j.Problem = fmt.Sprintf("%s is not a directory", named)
	case kind == diskPath && mode.IsDir():
		j.Problem = fmt.Sprintf("%s is a directory, not a disk image", named)
	case kind == diskPath && mode&fs.ModeCharDevice != 0:
		j.Problem = fmt.Sprintf("%s is a character device, not a disk: only regular files and block devices are disks", named)
	case kind == diskPath && !mode.IsRegular() && mode&fs.ModeDevice == 0:
		j.Problem = fmt.Sprintf("%s is a %s, not a disk: only regular files and block devices are disks", named, fileKind(mode))
	case kind == diskPath && mode.IsRegular() && underDir(resolved, "/dev") != "":
		// /dev holds device nodes; a regular file there is a shared-memory or runtime file.
		j.Problem = fmt.Sprintf("%s is a file under /dev, not a block device", named)
	case facts.Root && !trusted && hasUID && uid != 0 && !slices.Contains(facts.TrustedUIDs, uid):
		j.Problem = fmt.Sprintf("%s belongs to %s, not to root: the provider runs as root and does not hand another user's file to libvirt. "+
			"Give it to root (chown root), or put it in a storage pool", named, owner(uid))
	}
	return j
}

// judgeText judges a path on a host whose files the provider cannot see: the forbidden trees
// were checked already; the path must be clean, since ".." cannot be resolved from here.
func judgeText(p string, kind PathKind) PathJudgement {
	if clean := filepath.Clean(p); clean != p {
		return PathJudgement{Problem: fmt.Sprintf("%q is not a clean absolute path (it would be read as %q), and links on that host cannot be resolved from here", p, clean)}
	}
	if kind == diskPath && underDir(p, "/dev") != "" && !slices.ContainsFunc(blockDevicePrefixes, func(b string) bool { return strings.HasPrefix(p, b) }) {
		return PathJudgement{Problem: fmt.Sprintf("%q is under /dev but is not a block device path (%s...)", p, strings.Join(blockDevicePrefixes, "..., "))}
	}
	return PathJudgement{Unseen: true}
}

// UnseenWarning is what the user is told when a path was judged by its text only.
func UnseenWarning(what, p, host string) (string, string) {
	return "Host path not checked on " + host,
		fmt.Sprintf("%s %q is on %s, whose files the provider cannot see from here: it was checked by its text only (not under a system directory, a clean path), not for links, its kind or its owner. "+
			"It is handed to libvirt on your allow_host_paths consent; make sure it is the file you mean.", what, p, host)
}

// ForbiddenTree is the forbidden directory p is in, or "".
func ForbiddenTree(p string) string {
	for _, d := range forbiddenHostDirs {
		if underDir(p, d) != "" {
			return d
		}
	}
	return ""
}

// underDir is dir when the clean path p is dir or inside it, else "".
func underDir(p, dir string) string {
	if p == dir || strings.HasPrefix(p, dir+"/") {
		return dir
	}
	return ""
}

func fileKind(mode fs.FileMode) string {
	switch {
	case mode&fs.ModeNamedPipe != 0:
		return "named pipe"
	case mode&fs.ModeSocket != 0:
		return "socket"
	}
	return "special file"
}

func owner(uid uint32) string {
	if u, err := user.LookupId(strconv.FormatUint(uint64(uid), 10)); err == nil {
		return fmt.Sprintf("user %s (uid %d)", u.Username, uid)
	}
	return fmt.Sprintf("uid %d", uid)
}

// ConsoleLogDirProblem judges template.console_log_dir on one host. A directory under
// libvirt's own log directory needs no consent; any other is a host path, allowed only with
// allow_host_paths and then judged as one. The cleaned path is judged: it is what libvirt gets.
func ConsoleLogDirProblem(dir string, allowHostPaths bool, facts HostFacts) PathJudgement {
	clean := filepath.Clean(dir)
	if underDir(clean, libvirtLogDir) != "" {
		j := HostPathProblem(clean, DirPath, true, facts)
		if j.Problem != "" || j.Unseen || underDir(j.Resolved, libvirtLogDir) != "" {
			// On a host whose files cannot be seen, a directory under libvirt's own log
			// directory is taken at its word: only root there can put a link in it.
			j.Unseen = false
			return j
		}
		if !allowHostPaths {
			return PathJudgement{Problem: fmt.Sprintf("%q resolves to %q, outside libvirt's log directory %s, and host directories elsewhere need allow_host_paths = true in the provider block", dir, j.Resolved, libvirtLogDir)}
		}
	} else if !allowHostPaths {
		return PathJudgement{Problem: fmt.Sprintf("%q is outside libvirt's log directory %s. Use a directory under it (such as %s/qemu, where the system daemon keeps its QEMU logs), or set allow_host_paths = true in the provider block to let the consoles of members be appended to files in another host directory", dir, libvirtLogDir, libvirtLogDir)}
	}
	return HostPathProblem(clean, DirPath, false, facts)
}
