package libvirt

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/google/go-cmp/cmp"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// The harness's second host, h2: a session daemon run by user virt-session, with a directory
// pool named virt, as the system daemon has.
const (
	h2URI    = "qemu+unix:///session?socket=" + sessionSocket
	movePool = "virt"
)

// sourceVolumeFile writes data as the file of a tfacc- volume of the system daemon's pool, as
// a member's disk would have been written by its guest, and deletes the volume when the test
// ends.
func sourceVolumeFile(t *testing.T, b *Backend, name string, data []byte) string {
	t.Helper()
	ctx := context.Background()
	p, err := b.LookupPool(ctx, movePool)
	if err != nil || p.Path == "" {
		t.Fatalf("pool %s: %v (a directory pool is needed)", movePool, err)
	}
	path := filepath.Join(p.Path, name)
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := b.DeleteVolume(ctx, movePool, name); err != nil {
			t.Errorf("delete %s: %v", name, err)
		}
		_ = os.Remove(path)
	})
	if err := b.RefreshPool(ctx, movePool); err != nil {
		t.Fatal(err)
	}
	return path
}

// deleteAtEnd deletes the volume from the host when the test ends.
func deleteAtEnd(t *testing.T, b *Backend, name string) {
	t.Helper()
	t.Cleanup(func() {
		if err := b.DeleteVolume(context.Background(), movePool, name); err != nil {
			t.Errorf("delete %s on %s: %v", name, b.URI(), err)
		}
	})
}

func randomBytes(t *testing.T, n int) []byte {
	t.Helper()
	data := make([]byte, n)
	if _, err := rand.Read(data); err != nil {
		t.Fatal(err)
	}
	return data
}

func sum(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// volumeSum downloads the volume and returns the sha256 of its bytes and their count.
func volumeSum(t *testing.T, b *Backend, name string) (string, int64) {
	t.Helper()
	h := sha256.New()
	n, err := b.DownloadVolume(context.Background(), movePool, name, h)
	if err != nil {
		t.Fatalf("download %s from %s: %v", name, b.URI(), err)
	}
	return hex.EncodeToString(h.Sum(nil)), n
}

// copyVolume copies the volume from src to dst as a cold move does: dst's upload fed by src's
// download through a pipe, hashing the stream. It returns the stream's sha256.
func copyVolume(t *testing.T, src, dst *Backend, name string) (string, backend.VolumeStat) {
	t.Helper()
	ctx := context.Background()
	st, err := src.StatVolume(ctx, movePool, name)
	if err != nil {
		t.Fatalf("stat %s: %v", name, err)
	}
	pr, pw := io.Pipe()
	h := sha256.New()
	type result struct {
		n   int64
		err error
	}
	down := make(chan result, 1)
	go func() {
		n, err := src.DownloadVolume(ctx, movePool, name, io.MultiWriter(pw, h))
		pw.CloseWithError(err)
		down <- result{n, err}
	}()
	err = dst.UploadVolume(ctx, backend.VolumeUpload{Pool: movePool, Name: name, Format: st.Format, CapacityBytes: st.CapacityBytes, Bytes: st.Bytes}, pr)
	pr.CloseWithError(errors.New("the upload ended"))
	d := <-down
	if d.err != nil || err != nil {
		t.Fatalf("copy %s: download %d bytes, %v; upload %v", name, d.n, d.err, err)
	}
	deleteAtEnd(t, dst, name)
	if uint64(d.n) != st.Bytes {
		t.Errorf("%s: downloaded %d bytes, StatVolume says the file has %d", name, d.n, st.Bytes)
	}
	return hex.EncodeToString(h.Sum(nil)), st
}

// TestAccVolumeCopy copies volumes from the system daemon to h2 by piping DownloadVolume into
// UploadVolume: an 8 MiB raw volume of random bytes and a qcow2 overlay of it holding data of its
// own. The copy's bytes (downloaded again from h2) hash as the source file's do, and StatVolume
// reads the same on both hosts.
func TestAccVolumeCopy(t *testing.T) {
	requireAcc(t)
	sys, h2 := connectAcc(t, "qemu:///system"), connectAcc(t, h2URI)
	ctx := context.Background()
	sfx := testSuffix()
	raw, overlay := "tfacc-mv-"+sfx+".raw", "tfacc-mv-"+sfx+".qcow2"
	rawPath := sourceVolumeFile(t, sys, raw, randomBytes(t, 8<<20))

	if _, err := sys.EnsureVolume(ctx, backend.VolumeSpec{Pool: movePool, Name: overlay, SizeMiB: 16, BackingPath: rawPath, Fresh: true}); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, sys, overlay)
	ovInfo, err := sys.LookupVolume(ctx, movePool, overlay)
	if err != nil {
		t.Fatal(err)
	}
	// The overlay's own clusters: a MiB written at 1 MiB, over the backing file's bytes.
	if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", "write -P 0x5a 1M 1M", ovInfo.Path).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io: %v: %s", err, out)
	}
	if err := sys.RefreshPool(ctx, movePool); err != nil {
		t.Fatal(err)
	}

	cases := map[string]struct {
		name   string
		format string
	}{
		"raw, 8 MiB of random bytes": {name: raw, format: "raw"},
		"qcow2 overlay":              {name: overlay, format: "qcow2"},
	}
	for desc, tc := range cases {
		t.Run(desc, func(t *testing.T) {
			file, err := os.ReadFile(filepath.Join(filepath.Dir(rawPath), tc.name))
			if err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			streamed, st := copyVolume(t, sys, h2, tc.name)
			elapsed := time.Since(start)
			t.Logf("%s: copied %d bytes (%s, capacity %d) in %s: %.1f MiB/s", tc.name, st.Bytes, st.Format, st.CapacityBytes, elapsed, float64(st.Bytes)/(1<<20)/elapsed.Seconds())
			if st.Format != tc.format || st.Bytes != uint64(len(file)) {
				t.Errorf("source stat %+v; want format %s and the file's %d bytes", st, tc.format, len(file))
			}
			if streamed != sum(file) {
				t.Errorf("the stream's sha256 %s differs from the source file's %s", streamed, sum(file))
			}
			copied, n := volumeSum(t, h2, tc.name)
			if copied != sum(file) || n != int64(len(file)) {
				t.Errorf("h2's copy: %d bytes of sha256 %s; want %d bytes of %s", n, copied, len(file), sum(file))
			}
			got, err := h2.StatVolume(ctx, movePool, tc.name)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(st, got); diff != "" {
				t.Errorf("StatVolume on h2 differs from the source's (-source +h2):\n%s", diff)
			}
		})
	}
	if _, err := h2.StatVolume(ctx, movePool, "tfacc-mv-"+sfx+"-none"); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("StatVolume of a missing volume: %v; want ErrNotFound", err)
	}
}

// failingReader gives n bytes of data, then fails with err (io.EOF: the content ends short).
type failingReader struct {
	data []byte
	n    int
	err  error
	// at, when set, is called once when n bytes were given.
	at func()
}

func (r *failingReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		if r.at != nil {
			r.at()
			r.at = nil
		}
		return 0, r.err
	}
	k := copy(p[:min(len(p), r.n)], r.data)
	r.data, r.n = r.data[k:], r.n-k
	return k, nil
}

// TestAccVolumeUploadFailures: an upload onto a name that is taken fails with ErrExists and
// leaves that volume's bytes as they were; an upload whose content fails, ends short or whose
// context is cancelled half-way leaves no volume, and the connection serves the next call.
func TestAccVolumeUploadFailures(t *testing.T) {
	requireAcc(t)
	h2 := connectAcc(t, h2URI)
	ctx := context.Background()
	sfx := testSuffix()
	const size = 8 << 20
	data := randomBytes(t, size)
	upload := func(ctx context.Context, name string, r io.Reader) error {
		return h2.UploadVolume(ctx, backend.VolumeUpload{Pool: movePool, Name: name, Format: "raw", CapacityBytes: size, Bytes: size}, r)
	}

	taken := "tfacc-up-" + sfx + "-taken"
	if err := upload(ctx, taken, strings.NewReader(string(data))); err != nil {
		t.Fatal(err)
	}
	deleteAtEnd(t, h2, taken)
	err := upload(ctx, taken, strings.NewReader(string(randomBytes(t, size))))
	if !errors.Is(err, backend.ErrExists) {
		t.Fatalf("upload onto %s: %v; want ErrExists", taken, err)
	}
	t.Logf("upload onto a taken name: %v", err)
	if got, _ := volumeSum(t, h2, taken); got != sum(data) {
		t.Errorf("%s changed: sha256 %s, was %s", taken, got, sum(data))
	}

	cases := map[string]struct {
		reader func(cancel func()) io.Reader
		want   error  // errors.Is
		text   string // in the error
	}{
		"the content fails half-way": {
			reader: func(func()) io.Reader {
				return &failingReader{data: data, n: size / 2, err: errors.New("the source host went away")}
			},
			text: "the source host went away",
		},
		"the content ends short": {
			reader: func(func()) io.Reader { return &failingReader{data: data, n: size / 2, err: io.EOF} },
			text:   "the content ended after 4194304 of its 8388608 bytes",
		},
		"the context is cancelled half-way": {
			reader: func(cancel func()) io.Reader {
				// The content goes on after the cancel, as a download feeding a pipe would until
				// its own context stops it.
				return io.MultiReader(&failingReader{data: data, n: size / 2, err: io.EOF, at: cancel}, strings.NewReader(string(data[size/2:])))
			},
			want: context.Canceled,
		},
	}
	for desc, tc := range cases {
		t.Run(desc, func(t *testing.T) {
			name := "tfacc-up-" + sfx + "-" + strings.ReplaceAll(desc, " ", "-")
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			err := upload(cctx, name, tc.reader(cancel))
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("upload: %v; want an error (%v) saying %q", err, tc.want, tc.text)
			}
			t.Logf("upload: %v", err)
			if _, err := h2.StatVolume(ctx, movePool, name); !errors.Is(err, backend.ErrNotFound) {
				t.Errorf("the failed upload left %s: %v", name, err)
				deleteAtEnd(t, h2, name)
			}
			if _, err := h2.HostUUID(ctx); err != nil {
				t.Errorf("the next call: %v", err)
			}
		})
	}
}

// failingWriter takes n bytes, then fails.
type failingWriter struct {
	n      int
	cancel func() // called instead of failing, when set
}

func (w *failingWriter) Write(p []byte) (int, error) {
	if w.n <= 0 {
		if w.cancel != nil {
			w.cancel()
			return len(p), nil
		}
		return 0, errors.New("the destination host went away")
	}
	w.n -= len(p)
	return len(p), nil
}

// TestAccVolumeDownloadFailures: a download whose writer fails, or whose context is cancelled,
// half-way returns at once with the error, and the connection serves the next call.
func TestAccVolumeDownloadFailures(t *testing.T) {
	requireAcc(t)
	sys := connectAcc(t, "qemu:///system")
	ctx := context.Background()
	name := "tfacc-down-" + testSuffix() + ".raw"
	sourceVolumeFile(t, sys, name, randomBytes(t, 8<<20))
	cases := map[string]struct {
		cancel bool
		want   error
		text   string
	}{
		"the writer fails":         {text: "the destination host went away"},
		"the context is cancelled": {cancel: true, want: context.Canceled},
	}
	for desc, tc := range cases {
		t.Run(desc, func(t *testing.T) {
			cctx, cancel := context.WithCancel(ctx)
			defer cancel()
			w := &failingWriter{n: 1 << 20}
			if tc.cancel {
				w.cancel = cancel
			}
			n, err := sys.DownloadVolume(cctx, movePool, name, w)
			if err == nil || (tc.want != nil && !errors.Is(err, tc.want)) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("download: %d bytes, %v; want an error (%v) saying %q", n, err, tc.want, tc.text)
			}
			t.Logf("download: %d bytes, %v", n, err)
			if _, err := sys.StatVolume(ctx, movePool, name); err != nil {
				t.Errorf("the next call: %v", err)
			}
		})
	}
}

// unlimitedSpeed is the most migration bandwidth libvirt takes (MiB/s), which it treats as no limit.
const unlimitedSpeed = 1<<63/(1<<20) - 1

// domainOn tells whether the domain is on the host, whether it runs, and whether it is defined
// there (persistent) rather than only running.
func domainOn(t *testing.T, b *Backend, name string) (present, running, persistent bool) {
	t.Helper()
	ctx := context.Background()
	doms, err := b.ListDomains(ctx, name)
	if err != nil {
		t.Fatalf("list %s on %s: %v", name, b.URI(), err)
	}
	if len(doms) == 0 {
		return false, false, false
	}
	transient, err := b.TransientDomainNames(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return true, doms[0].Status == engine.StatusRunning, !transient[name]
}

// wantOn fails the test unless the domain runs, defined, on host and is not on away.
func wantOn(t *testing.T, host, away *Backend, name string) {
	t.Helper()
	if present, running, persistent := domainOn(t, host, name); !present || !running || !persistent {
		t.Errorf("%s on %s: present %t, running %t, defined %t; want it running and defined", name, host.URI(), present, running, persistent)
	}
	if present, _, _ := domainOn(t, away, name); present {
		t.Errorf("%s is on %s too", name, away.URI())
	}
}

// TestAccMigrateLive migrates a running tfacc- domain with a disk of 32 MiB of data between the
// system daemon and h2, both ways. The three daemons of the harness run on one machine under one
// host name ("vm"), but libvirt compares the daemons' host UUIDs, which differ, and migrates.
//
//   - with the bandwidth at 1 MiB/s, a migration with a timeout of 3 seconds is aborted, and so
//     is one whose context ends after 3 seconds: the error carries libvirt's message and the
//     domain runs on, defined, on the source only;
//   - system to h2 (the root daemon reaches the session daemon's socket): the domain runs,
//     defined, on h2 only, its disk's content copied into the volume made there beforehand;
//   - h2 to qemu:///system fails with libvirt's message (a session daemon opens that URI
//     itself and refuses the system path), the domain running on h2;
//   - h2 to the system daemon through its TCP listener succeeds.
func TestAccMigrateLive(t *testing.T) {
	requireAcc(t)
	// Parallel: its objects are its own (suffixed names, its own fault proxy), and most of it is
	// waiting (a stall, a migration).
	t.Parallel()
	sys, h2 := connectAcc(t, "qemu:///system"), connectAcc(t, h2URI)
	ctx := context.Background()
	sfx := testSuffix()
	// Short, as TestAccWireMigrationStall's: the guest agent's socket path on h2 holds the name.
	name, disk := "tfacc-lm-"+sfx, "tfacc-lm-"+sfx+"-boot.qcow2"
	// The disk on the source, and the empty volume of the same name the caller makes on the
	// destination beforehand.
	paths := map[*Backend]string{}
	for _, b := range []*Backend{sys, h2} {
		if _, err := b.EnsureVolume(ctx, backend.VolumeSpec{Pool: movePool, Name: disk, SizeMiB: 64, Fresh: true}); err != nil {
			t.Fatal(err)
		}
		deleteAtEnd(t, b, disk)
		v, err := b.LookupVolume(ctx, movePool, disk)
		if err != nil {
			t.Fatal(err)
		}
		paths[b] = v.Path
	}
	if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", "write -P 0x5a 16M 32M", paths[sys]).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io: %v: %s", err, out)
	}
	t.Cleanup(func() { // startAcc's cleanup stops and undefines it on the system daemon
		_ = h2.StopDomain(ctx, name)
		_ = h2.UndefineDomain(ctx, name)
	})
	startAcc(t, sys, name, []backend.Disk{{DeviceName: "boot", Pool: movePool, Volume: disk}}, nil, "")
	for _, b := range []*Backend{sys, h2} {
		h, err := b.HostUUID(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("host UUID of %s: %q", b.URI(), h)
	}
	setSpeed := func(b *Backend, mibs uint64) {
		t.Helper()
		d, err := b.Raw().DomainLookupByName(name)
		if err == nil {
			err = b.Raw().DomainMigrateSetMaxSpeed(d, mibs, 0)
		}
		if err != nil {
			t.Fatalf("set the migration bandwidth of %s: %v", name, err)
		}
	}

	t.Run("a migration that outlives its timeout is aborted", func(t *testing.T) {
		setSpeed(sys, 1)
		err := sys.MigrateLive(ctx, name, backend.Migration{DestURI: h2URI, Timeout: 3 * time.Second})
		var lerr golibvirt.Error
		if err == nil || !errors.As(err, &lerr) || golibvirt.ErrorNumber(lerr.Code) != golibvirt.ErrOperationAborted || !strings.Contains(err.Error(), "aborted when its time (3s) ran out") {
			t.Fatalf("migration: %v; want libvirt's abort", err)
		}
		t.Logf("migration error: %v", err)
		wantOn(t, sys, h2, name)
	})
	t.Run("a migration whose context ends is aborted", func(t *testing.T) {
		cctx, cancel := context.WithTimeout(ctx, 3*time.Second)
		defer cancel()
		err := sys.MigrateLive(cctx, name, backend.Migration{DestURI: h2URI, Timeout: 2 * time.Minute})
		var lerr golibvirt.Error
		if err == nil || !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &lerr) || golibvirt.ErrorNumber(lerr.Code) != golibvirt.ErrOperationAborted {
			t.Fatalf("migration: %v; want libvirt's abort and the context's error", err)
		}
		t.Logf("migration error: %v", err)
		wantOn(t, sys, h2, name)
	})
	t.Run("system to h2", func(t *testing.T) {
		setSpeed(sys, unlimitedSpeed)
		start := time.Now()
		if err := sys.MigrateLive(ctx, name, backend.Migration{DestURI: h2URI, Timeout: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		t.Logf("migrated in %s", time.Since(start))
		wantOn(t, h2, sys, name)
		if out, err := exec.Command("qemu-img", "compare", "-U", "-f", "qcow2", "-F", "qcow2", paths[sys], paths[h2]).CombinedOutput(); err != nil {
			t.Errorf("the disk's content on h2 differs from the source's: %v: %s", err, out)
		}
	})
	t.Run("h2 to qemu:///system fails with libvirt's message", func(t *testing.T) {
		err := h2.MigrateLive(ctx, name, backend.Migration{DestURI: "qemu:///system", Timeout: 2 * time.Minute})
		if err == nil || !strings.Contains(err.Error(), "unexpected qemu URI path '/system', try qemu:///session") {
			t.Fatalf("migration: %v; want libvirt's refusal of the system URI", err)
		}
		t.Logf("migration error: %v", err)
		wantOn(t, h2, sys, name)
	})
	t.Run("h2 to the system daemon over TCP", func(t *testing.T) {
		if err := h2.MigrateLive(ctx, name, backend.Migration{DestURI: "qemu+tcp://127.0.0.1/system", Timeout: 2 * time.Minute}); err != nil {
			t.Fatal(err)
		}
		wantOn(t, sys, h2, name)
	})
}
