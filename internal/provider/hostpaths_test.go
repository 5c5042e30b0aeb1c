package provider

import (
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"

	"github.com/hashicorp/terraform-plugin-framework/diag"
	"github.com/hashicorp/terraform-plugin-framework/path"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/backend/fake"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
	"github.com/virtfleet/terraform-provider-virt/internal/provider/providerdata"
)

// hostPathFixture makes, in a fresh directory, the files the path judge is tried on: links into
// the forbidden trees, a link to a character device, a directory link, a regular file, a named
// pipe, a block device node when this machine lets the test make one, and a file of another user.
type hostPathFixture struct {
	dir        string
	blockOK    bool // a block device node could be made
	otherUID   uint32
	otherOwned string
}

func newHostPathFixture(t *testing.T) hostPathFixture {
	t.Helper()
	dir := t.TempDir()
	f := hostPathFixture{dir: dir, otherUID: 54321}
	link := func(name, to string) {
		if err := os.Symlink(to, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
	link("passwd-link", "/etc/passwd")
	link("shadow-link", "/etc/shadow")
	link("proc-link", "/proc/self/status")
	link("root-link", "/root")
	link("null-link", "/dev/null")
	link("mem-link", "/dev/mem")
	link("etc-dir", "/etc")
	link("relative-link", "../../../../../../../../etc/passwd")
	link("dangling", filepath.Join(dir, "nowhere"))
	if err := os.WriteFile(filepath.Join(dir, "disk.img"), make([]byte, 4096), 0o600); err != nil {
		t.Fatal(err)
	}
	link("disk-link", filepath.Join(dir, "disk.img"))
	if err := os.Mkdir(filepath.Join(dir, "logs"), 0o755); err != nil {
		t.Fatal(err)
	}
	link("logs-link", filepath.Join(dir, "logs"))
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A loop device's numbers (7, 200): the node is never opened, only its kind read.
	if err := syscall.Mknod(filepath.Join(dir, "blk"), syscall.S_IFBLK|0o600, 7<<8|200); err == nil {
		f.blockOK = true
		link("blk-link", filepath.Join(dir, "blk"))
	}
	f.otherOwned = filepath.Join(dir, "alice.img")
	if err := os.WriteFile(f.otherOwned, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if os.Geteuid() == 0 {
		if err := os.Chown(f.otherOwned, int(f.otherUID), int(f.otherUID)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// TestHostPathProblem calls the path judge with real links made in a temporary directory: a
// link in a harmless place to a file under /etc, /proc or /root is refused by the file it
// reaches, as are character devices, ".." tricks, pipes and (as root) another user's files; on
// a host whose files cannot be seen only the text is judged, and the verdict says so.
func TestHostPathProblem(t *testing.T) {
	f := newHostPathFixture(t)
	in := func(name string) string { return filepath.Join(f.dir, name) }
	local := providerdata.HostFacts{Name: "qemu:///system", Local: true}
	root := providerdata.HostFacts{Name: "qemu:///system", Local: true, Root: true}
	remote := providerdata.HostFacts{Name: "qemu+ssh://root@h2/system"}

	cases := []struct {
		name    string
		path    string
		kind    providerdata.PathKind
		trusted bool
		facts   providerdata.HostFacts
		problem string // a regexp the problem must match; "" for none
		unseen  bool
		skip    string // why the case cannot run on this machine, when it cannot
	}{
		{name: "regular file", path: in("disk.img"), facts: local},
		{name: "link to a regular file", path: in("disk-link"), facts: local},
		{name: "link to /etc/passwd", path: in("passwd-link"), facts: local, problem: `"` + regexp.QuoteMeta(in("passwd-link")) + `" \(which resolves to "/etc/passwd"\) is under /etc`},
		{name: "link to /etc/shadow", path: in("shadow-link"), facts: local, problem: `resolves to "/etc/shadow"\) is under /etc`},
		{name: "link to a file under /proc", path: in("proc-link"), facts: local, problem: `is under /proc`},
		{name: "link to /root", path: in("root-link"), facts: local, problem: `resolves to "/root"\) is under /root`},
		{name: "a file through a linked directory", path: in("etc-dir") + "/passwd", facts: local, problem: `resolves to "/etc/passwd"\) is under /etc`},
		{name: "relative link climbing to /etc", path: in("relative-link"), facts: local, problem: `resolves to "/etc/passwd"\) is under /etc`},
		{name: "dot-dot in the text", path: f.dir + "/../../../../../../../../etc/passwd", facts: local, problem: `is under /etc`},
		{name: "dot-dot to a harmless file", path: in("logs") + "/../disk.img", facts: local},
		{name: "text under /etc", path: "/etc/passwd", facts: local, problem: `"/etc/passwd" is under /etc`},
		{name: "link to /dev/null", path: in("null-link"), facts: local, problem: `resolves to "/dev/null"\) is a character device`},
		{name: "/dev/mem", path: "/dev/mem", facts: local, problem: `is a character device|does not exist`},
		{name: "link to /dev/mem", path: in("mem-link"), facts: local, problem: `is a character device|leads nowhere`},
		{name: "named pipe", path: in("fifo"), facts: local, problem: `is a named pipe, not a disk`},
		{name: "directory as a disk", path: in("logs"), facts: local, problem: `is a directory, not a disk image`},
		{name: "missing file", path: in("missing.img"), facts: local, problem: `does not exist on qemu:///system`},
		{name: "dangling link", path: in("dangling"), facts: local, problem: `does not exist`},
		{name: "block device node", path: in("blk"), facts: local, skip: skipUnless(f.blockOK, "this machine does not let the test make a device node")},
		{name: "link to a block device node", path: in("blk-link"), facts: local, skip: skipUnless(f.blockOK, "this machine does not let the test make a device node")},
		{name: "another user's file as root", path: f.otherOwned, facts: root, problem: `belongs to uid 54321, not to root`, skip: skipUnless(os.Geteuid() == 0, "only root can give a file away")},
		{name: "another user's file in a pool as root", path: f.otherOwned, trusted: true, facts: root, skip: skipUnless(os.Geteuid() == 0, "only root can give a file away")},
		{name: "the hypervisor user's file as root", path: f.otherOwned, facts: providerdata.HostFacts{Name: "qemu:///system", Local: true, Root: true, TrustedUIDs: []uint32{f.otherUID}}, skip: skipUnless(os.Geteuid() == 0, "only root can give a file away")},
		{name: "another user's file, not as root", path: f.otherOwned, facts: local},
		{name: "directory", path: in("logs"), kind: providerdata.DirPath, facts: local},
		{name: "link to a directory", path: in("logs-link"), kind: providerdata.DirPath, facts: local},
		{name: "link to /etc as a directory", path: in("etc-dir"), kind: providerdata.DirPath, facts: local, problem: `resolves to "/etc"\) is under /etc`},
		{name: "file as a directory", path: in("disk.img"), kind: providerdata.DirPath, facts: local, problem: `is not a directory`},
		// A host reached over the network: its files cannot be seen.
		{name: "remote: a link is not followed", path: in("passwd-link"), facts: remote, unseen: true},
		{name: "remote: text under /etc", path: "/etc/shadow", facts: remote, problem: `is under /etc`},
		{name: "remote: dot-dot", path: "/srv/../etc/shadow", facts: remote, problem: `is under /etc`},
		{name: "remote: unclean", path: "/srv/./a.img", facts: remote, problem: `not a clean absolute path`},
		{name: "remote: /dev/mem", path: "/dev/mem", facts: remote, problem: `is under /dev but is not a block device path`},
		{name: "remote: a block device path", path: "/dev/disk/by-id/x", facts: remote, unseen: true},
		{name: "relative", path: "disk.img", facts: local, problem: `not an absolute path`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			j := providerdata.HostPathProblem(c.path, c.kind, c.trusted, c.facts)
			switch {
			case c.problem == "" && j.Problem != "":
				t.Errorf("hostPathProblem(%q) refused it: %s", c.path, j.Problem)
			case c.problem != "" && !regexp.MustCompile(c.problem).MatchString(j.Problem):
				t.Errorf("hostPathProblem(%q) = %q, want a problem matching %s", c.path, j.Problem, c.problem)
			}
			if j.Unseen != c.unseen {
				t.Errorf("hostPathProblem(%q).Unseen = %v, want %v", c.path, j.Unseen, c.unseen)
			}
		})
	}
}

func skipUnless(ok bool, why string) string {
	if ok {
		return ""
	}
	return why
}

// TestConsoleLogDirProblem: libvirt's own log directory needs no consent, any other directory
// needs allow_host_paths and is then judged as a host path; /etc never passes.
func TestConsoleLogDirProblem(t *testing.T) {
	f := newHostPathFixture(t)
	in := func(name string) string { return filepath.Join(f.dir, name) }
	local := providerdata.HostFacts{Name: "qemu:///system", Local: true}
	remote := providerdata.HostFacts{Name: "qemu+ssh://root@h2/system"}
	_, err := os.Stat("/var/log/libvirt/qemu")
	haveLogDir := skipUnless(err == nil, "/var/log/libvirt/qemu does not exist here (make harness makes it)")

	cases := []struct {
		name    string
		dir     string
		allow   bool
		facts   providerdata.HostFacts
		problem string
		unseen  bool
		skip    string
	}{
		{name: "libvirt's QEMU log directory", dir: "/var/log/libvirt/qemu", facts: local, skip: haveLogDir},
		{name: "libvirt's QEMU log directory, trailing slash", dir: "/var/log/libvirt/qemu/", facts: local, skip: haveLogDir},
		{name: "/etc", dir: "/etc", facts: local, problem: `"/etc" is outside libvirt's log directory`},
		{name: "/etc with host paths allowed", dir: "/etc", allow: true, facts: local, problem: `"/etc" is under /etc`},
		{name: "climbing out of libvirt's log directory", dir: "/var/log/libvirt/../../../etc", allow: true, facts: local, problem: `"/etc" is under /etc`},
		{name: "a host directory", dir: in("logs"), facts: local, problem: `outside libvirt's log directory`},
		{name: "a host directory with host paths allowed", dir: in("logs"), allow: true, facts: local},
		{name: "a link to /etc with host paths allowed", dir: in("etc-dir"), allow: true, facts: local, problem: `resolves to "/etc"\) is under /etc`},
		{name: "a file", dir: in("disk.img"), allow: true, facts: local, problem: `is not a directory`},
		{name: "missing", dir: "/var/log/libvirt/tfacc-nowhere", facts: local, problem: `does not exist`},
		{name: "remote: libvirt's log directory", dir: "/var/log/libvirt/qemu", facts: remote},
		{name: "remote: /etc", dir: "/etc", allow: true, facts: remote, problem: `is under /etc`},
		{name: "remote: a host directory", dir: "/srv/logs", facts: remote, problem: `outside libvirt's log directory`},
		{name: "remote: a host directory with host paths allowed", dir: "/srv/logs", allow: true, facts: remote, unseen: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.skip != "" {
				t.Skip(c.skip)
			}
			j := providerdata.ConsoleLogDirProblem(c.dir, c.allow, c.facts)
			switch {
			case c.problem == "" && j.Problem != "":
				t.Errorf("consoleLogDirProblem(%q) refused it: %s", c.dir, j.Problem)
			case c.problem != "" && !regexp.MustCompile(c.problem).MatchString(j.Problem):
				t.Errorf("consoleLogDirProblem(%q) = %q, want a problem matching %s", c.dir, j.Problem, c.problem)
			}
			if j.Unseen != c.unseen {
				t.Errorf("consoleLogDirProblem(%q).Unseen = %v, want %v", c.dir, j.Unseen, c.unseen)
			}
		})
	}
}

// TestHostFactsOf: only a unix-socket URI is this machine.
func TestHostFactsOf(t *testing.T) {
	for uri, local := range map[string]bool{
		"qemu:///system":  true,
		"qemu:///session": true,
		"qemu+unix:///session?socket=/run/virt-session/libvirt/libvirt-sock": true,
		"qemu+ssh://root@127.0.0.1:16522/system":                             false,
		"qemu+tcp://127.0.0.1/system":                                        false,
		"qemu://localhost/system":                                            false,
	} {
		if got := providerdata.HostFactsOf(uriBackend{uri: uri}).Local; got != local {
			t.Errorf("hostFactsOf(%s).Local = %v, want %v", uri, got, local)
		}
	}
	if f := providerdata.HostFactsOf(nil); f.Local || !strings.Contains(f.Name, "libvirt host") {
		t.Errorf("a backend with no URI: %+v, want a remote host", f)
	}
}

// uriBackend is a backend that only says its URI; any other call panics.
type uriBackend struct {
	backend.Backend
	uri string
}

func (b uriBackend) URI() string { return b.uri }

// TestCheckSource: a host path outside pools is judged by the file it reaches on this machine,
// and only warned about on a host whose files cannot be seen.
func TestCheckSource(t *testing.T) {
	f := newHostPathFixture(t)
	in := func(name string) string { return filepath.Join(f.dir, name) }
	local := func() backend.Backend { return localFake{Backend: fake.New(), uri: "qemu:///system"} }
	remote := func() backend.Backend { return fake.New() }
	cases := []struct {
		name    string
		b       func() backend.Backend
		source  string
		allow   bool
		err     string // a regexp an error must match; "" for none
		warning string // a regexp a warning must match; "" for none
	}{
		{"a link to /etc/passwd, allowed", local, in("passwd-link"), true, `\(which resolves to "/etc/passwd"\) is under /etc`, ""},
		{"a link to /etc/passwd, not allowed", local, in("passwd-link"), false, `is not a volume of any storage pool`, ""},
		{"a host file, allowed", local, in("disk.img"), true, "", ""},
		{"/dev/null, allowed", local, "/dev/null", true, `"/dev/null" is a character device`, ""},
		{"a host file on a remote host, allowed", remote, "/srv/disk.img", true, "", `/srv/disk.img" is on the libvirt host, whose files the provider cannot see`},
		{"/etc on a remote host, allowed", remote, "/etc/passwd", true, `is under /etc`, ""},
		{"a host file on a remote host, not allowed", remote, "/srv/disk.img", false, `^source on host "default" \(the provider's uri\): no storage pool on the libvirt host has a volume at "/srv/disk.img": it does not exist there, or it is a file outside the pools`, ""},
		// A typo is the likelier mistake: a path that does not exist says so first, with or
		// without allow_host_paths.
		{"a missing file, not allowed", local, in("typo.img"), false, `^source on host "default" \(the provider's uri\): "` + regexp.QuoteMeta(in("typo.img")) + `" does not exist on qemu:///system .*check the path. Once it exists: .*allow_host_paths = true`, ""},
		{"a missing file, allowed", local, in("typo.img"), true, `^source on host "default" \(the provider's uri\): "` + regexp.QuoteMeta(in("typo.img")) + `" does not exist on qemu:///system`, ""},
		{"a link that leads nowhere, not allowed", local, in("dangling"), false, `does not exist on qemu:///system \(or a link on its way leads nowhere\)`, ""},
		{"a host file that exists, not allowed", local, in("disk.img"), false, `^source on host "default" \(the provider's uri\): "` + regexp.QuoteMeta(in("disk.img")) + `" is not a volume of any storage pool on this host`, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var diags diag.Diagnostics
			providerdata.CheckSource(context.Background(), &diags, c.b(), engine.DefaultHost, path.Root("source"), "source", "virt", c.source, c.allow)
			var errs, warns []string
			for _, d := range diags {
				if d.Severity() == diag.SeverityError {
					errs = append(errs, d.Detail())
				} else {
					warns = append(warns, d.Detail())
				}
			}
			check := func(kind string, got []string, want string) {
				switch {
				case want == "" && len(got) > 0:
					t.Errorf("unexpected %s: %q", kind, got)
				case want != "" && (len(got) != 1 || !regexp.MustCompile(want).MatchString(got[0])):
					t.Errorf("%s %q, want one matching %s", kind, got, want)
				}
			}
			check("errors", errs, c.err)
			check("warnings", warns, c.warning)
		})
	}
}

// localFake is the in-memory backend, said to be reached through this machine's socket.
type localFake struct {
	*fake.Backend
	uri string
}

func (b localFake) URI() string { return b.uri }
