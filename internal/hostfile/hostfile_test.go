package hostfile

import (
	"encoding/binary"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestJudgeOpened(t *testing.T) {
	t.Parallel()
	judged := Judged{Path: "/srv/images/base.img", Dev: 1, Ino: 10}
	same := Opened{Path: "/srv/images/base.img", UID: 0, Dev: 1, Ino: 10}
	root := Owners{Root: true, Trusted: []uint32{64055}}
	with := func(f func(*Opened)) Opened { o := same; f(&o); return o }
	tests := map[string]struct {
		opened Opened
		owners Owners
		want   string // a part of the problem; "" when accepted
	}{
		"the file judged, owned by root":               {same, root, ""},
		"owned by the qemu user":                       {with(func(o *Opened) { o.UID = 64055 }), root, ""},
		"owned by another user, provider root":         {with(func(o *Opened) { o.UID = 1000 }), root, "belongs to uid 1000"},
		"owned by another user, provider not root":     {with(func(o *Opened) { o.UID = 1000 }), Owners{}, ""},
		"another inode (swapped after the check)":      {with(func(o *Opened) { o.Ino = 11 }), root, "changed while it was being opened"},
		"another device":                               {with(func(o *Opened) { o.Dev = 2 }), root, "changed while it was being opened"},
		"reaches /etc":                                 {with(func(o *Opened) { o.Path = "/etc/shadow" }), root, "under /etc"},
		"another name, same inode (a hard link moved)": {with(func(o *Opened) { o.Path = "/srv/other.img" }), root, "checked as /srv/images/base.img"},
		"a directory":                                  {with(func(o *Opened) { o.Mode = fs.ModeDir }), root, "not a regular file"},
		"a character device":                           {with(func(o *Opened) { o.Mode = fs.ModeDevice | fs.ModeCharDevice }), root, "not a regular file"},
		"a block device":                               {with(func(o *Opened) { o.Mode = fs.ModeDevice }), root, "not a regular file"},
		"a named pipe":                                 {with(func(o *Opened) { o.Mode = fs.ModeNamedPipe }), root, "not a regular file"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := JudgeOpened("/srv/link.img", judged, tt.opened, tt.owners)
			if (tt.want == "") != (got == "") || !strings.Contains(got, tt.want) {
				t.Errorf("JudgeOpened = %q, want a problem containing %q", got, tt.want)
			}
		})
	}
}

func qcow2Header(version uint32, backing uint64, incompatible uint64, virtual uint64) []byte {
	h := make([]byte, 104)
	copy(h, qcow2Magic)
	binary.BigEndian.PutUint32(h[4:8], version)
	binary.BigEndian.PutUint64(h[8:16], backing)
	binary.BigEndian.PutUint64(h[24:32], virtual)
	binary.BigEndian.PutUint64(h[72:80], incompatible)
	return h
}

func TestReadImage(t *testing.T) {
	t.Parallel()
	tests := map[string]struct {
		data    []byte
		want    Image
		problem string
	}{
		"raw":                       {[]byte("plain bytes"), Image{Format: "raw", VirtualBytes: 11, Bytes: 11}, ""},
		"empty raw":                 {nil, Image{Format: "raw"}, ""},
		"qcow2 v3":                  {qcow2Header(3, 0, 0, 1<<30), Image{Format: "qcow2", VirtualBytes: 1 << 30, Bytes: 104}, ""},
		"qcow2 v2":                  {qcow2Header(2, 0, 0, 1<<20)[:72], Image{Format: "qcow2", VirtualBytes: 1 << 20, Bytes: 72}, ""},
		"qcow2 with a backing file": {qcow2Header(3, 0x200, 0, 1<<30), Image{}, "backing file"},
		"qcow2 with external data":  {qcow2Header(3, 0, qcow2ExternalData, 1<<30), Image{}, "external data file"},
		"qcow2 cut short":           {qcow2Header(3, 0, 0, 1)[:20], Image{}, "no whole header"},
		"qcow2 v3 header cut short": {qcow2Header(3, 0, 0, 1)[:60], Image{}, "no whole header"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got, err := ReadImage(strings.NewReader(string(tt.data)), int64(len(tt.data)))
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("ReadImage error = %v, want one containing %q", err, tt.problem)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ReadImage = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

// TestOpen opens real files: a link is followed only up to the judgement, and what the
// descriptor reaches is the verdict.
func TestOpen(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := filepath.Join(dir, "base.img")
	if err := os.WriteFile(img, []byte("image"), 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink(img, link); err != nil {
		t.Fatal(err)
	}
	toEtc := filepath.Join(dir, "etc.img")
	if err := os.Symlink("/etc/hostname", toEtc); err != nil {
		t.Fatal(err)
	}
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	owners := LocalOwners(os.Geteuid())
	tests := map[string]struct {
		path    string
		problem string
	}{
		"a regular file":    {img, ""},
		"a link to one":     {link, ""},
		"a link into /etc":  {toEtc, "under /etc"},
		"a path under /etc": {"/etc/hostname", "under /etc"},
		"a named pipe":      {fifo, "not a regular file"},
		"a directory":       {dir, "not a regular file"},
		"missing":           {filepath.Join(dir, "nope"), "does not exist"},
		"relative":          {"base.img", "not an absolute path"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			f, o, err := Open(tt.path, owners)
			if tt.problem != "" {
				if err == nil || !strings.Contains(err.Error(), tt.problem) {
					t.Fatalf("Open(%s) error = %v, want one containing %q", tt.path, err, tt.problem)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if o.Path != img {
				t.Errorf("Open(%s) reached %s, want %s", tt.path, o.Path, img)
			}
		})
	}
}

func TestNotALink(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	pool := filepath.Join(dir, "pool")
	if err := os.Mkdir(pool, 0o700); err != nil {
		t.Fatal(err)
	}
	vol := filepath.Join(pool, "v.qcow2")
	if err := os.WriteFile(vol, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(pool, "l.qcow2")
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	outside := filepath.Join(dir, "outside.qcow2")
	if err := os.WriteFile(outside, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		path, dir, problem string
	}{
		"a volume file":            {vol, pool, ""},
		"a link in the pool":       {link, pool, `symbolic link (to "/etc/hostname")`},
		"a file outside the pool":  {outside, pool, "outside its pool's directory"},
		"missing: libvirt says so": {filepath.Join(pool, "gone.qcow2"), pool, ""},
		"a pool of no directory":   {vol, "", ""},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := NotALink(tt.path, tt.dir)
			if (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("NotALink = %q, want a problem containing %q", got, tt.problem)
			}
		})
	}
}

func TestInPlace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	img := filepath.Join(dir, "data.img")
	if err := os.WriteFile(img, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(dir, "link.img")
	if err := os.Symlink("/etc/hostname", link); err != nil {
		t.Fatal(err)
	}
	owners := LocalOwners(os.Geteuid())
	tests := map[string]struct {
		path    string
		dir     bool
		problem string
	}{
		"a regular file":           {img, false, ""},
		"a directory as a share":   {dir, true, ""},
		"a file as a share":        {img, true, "not a directory"},
		"a directory as a disk":    {dir, false, "neither a regular file nor a block device"},
		"a link swapped into /etc": {link, false, "now resolves to /etc/hostname"},
		"a character device":       {"/dev/null", false, "neither a regular file nor a block device"},
		"missing":                  {filepath.Join(dir, "gone"), false, "does not exist"},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			got := InPlace(tt.path, tt.dir, owners)
			if (tt.problem == "") != (got == "") || !strings.Contains(got, tt.problem) {
				t.Errorf("InPlace = %q, want a problem containing %q", got, tt.problem)
			}
		})
	}
}
