package libvirt

import (
	"bytes"
	"context"
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

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/faultproxy"
)

// Faults on the wire (issue 43): a fault proxy between the backend and the system daemon's
// socket stalls or cuts one connection at a chosen byte, the daemon alive.

// wireBackend connects to the system daemon through a fault proxy. Its grace is shortened for
// the tests' speed: nothing asserts on it.
func wireBackend(t *testing.T) (*Backend, *faultproxy.Proxy) {
	t.Helper()
	// A unix socket path must fit in about 100 bytes, which t.TempDir's long names may not.
	dir, err := os.MkdirTemp("", "virt-fp") //nolint:usetesting // t.TempDir's path is too long for a socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	p, err := faultproxy.New("unix:"+filepath.Join(dir, "sock"), "unix:"+defaultSocket)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	b := connectAcc(t, "qemu:///system?socket="+p.Addr())
	b.grace = 2 * time.Second
	return b, p
}

// fired is the fault's event, which must have come by the time the call it hit returned.
func fired(t *testing.T, p *faultproxy.Proxy, conn int) {
	t.Helper()
	select {
	case ev := <-p.Fired():
		if ev.Conn != conn {
			t.Errorf("the fault hit connection %d, want %d", ev.Conn, conn)
		}
	default:
		t.Error("the fault never took effect: the test proves nothing")
	}
}

func wantErrSays(t *testing.T, err error, want ...string) {
	t.Helper()
	if err == nil {
		t.Fatalf("the call succeeded; want an error saying %q", want)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not say %q", err, w)
		}
	}
}

func wantGone(t *testing.T, b *Backend, name string) {
	t.Helper()
	if _, err := b.LookupVolume(context.Background(), movePool, name); !errors.Is(err, backend.ErrNotFound) {
		t.Errorf("volume %s: %v; want it gone", name, err)
	}
}

// TestAccWireStall: a call whose connection stalls mid-call returns when its context's deadline
// passes, with an error naming the operation, the object and the URI; the next call succeeds on
// a new connection, the stalled one left alone.
func TestAccWireStall(t *testing.T) {
	requireAcc(t)
	b, p := wireBackend(t)
	name := "tfacc-wire-" + testSuffix() + ".raw"
	sourceVolumeFile(t, b, name, randomBytes(t, 1<<20))
	old, main := b.Raw(), p.Accepted()

	p.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: main, AfterBytes: 40})
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
	_, err := b.StatVolume(ctx, movePool, name)
	cancel()
	fired(t, p, main)
	wantErrSays(t, err, "read volume "+movePool+"/"+name+" on "+b.URI())
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("error %q does not wrap the deadline's", err)
	}
	t.Logf("stalled call: %v", err)

	st, err := b.StatVolume(context.Background(), movePool, name)
	if err != nil {
		t.Fatalf("the next call: %v", err)
	}
	if st.Bytes != 1<<20 {
		t.Errorf("the next call read %d bytes, want %d", st.Bytes, 1<<20)
	}
	if b.Raw() == old {
		t.Error("the next call ran on the connection the stalled call was cut off on")
	}
	if got := p.Accepted() - main; got != 1 {
		t.Errorf("%d new connections, want 1", got)
	}
}

// TestAccWireStreamStall: a download or an upload whose stream stalls for good returns when its
// context's deadline passes, and the calls that clean up after it (StatVolume, DeleteVolume)
// succeed at once on the backend's connection, which the stream never used.
func TestAccWireStreamStall(t *testing.T) {
	requireAcc(t)
	// Parallel: its objects are its own (suffixed names, its own fault proxy), and most of it is
	// waiting (a stall, a migration).
	t.Parallel()
	b, p := wireBackend(t)
	sfx := testSuffix()
	const size = 8 << 20
	data := randomBytes(t, size)

	t.Run("download", func(t *testing.T) {
		name := "tfacc-wire-" + sfx + "-down.raw"
		sourceVolumeFile(t, b, name, data)
		old := b.Raw()
		stream := p.Accepted() + 1
		p.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: stream, AfterBytes: 1 << 20})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		_, err := b.DownloadVolume(ctx, movePool, name, io.Discard)
		cancel()
		fired(t, p, stream)
		wantErrSays(t, err, "download volume "+movePool+"/"+name+" on "+b.URI())
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("error %q does not wrap the deadline's", err)
		}
		t.Logf("stalled download: %v", err)
		if _, err := b.StatVolume(context.Background(), movePool, name); err != nil {
			t.Errorf("stat after the stalled download: %v", err)
		}
		if err := b.DeleteVolume(context.Background(), movePool, name); err != nil {
			t.Errorf("delete after the stalled download: %v", err)
		}
		wantGone(t, b, name)
		if b.Raw() != old {
			t.Error("the backend's connection changed: the stream ran on it")
		}
	})

	t.Run("upload", func(t *testing.T) {
		name := "tfacc-wire-" + sfx + "-up.raw"
		old := b.Raw()
		stream := p.Accepted() + 1
		p.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: stream, AfterBytes: 1 << 20})
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
		err := b.UploadVolume(ctx, backend.VolumeUpload{Pool: movePool, Name: name, Format: "raw", CapacityBytes: size, Bytes: size}, bytes.NewReader(data))
		cancel()
		fired(t, p, stream)
		wantErrSays(t, err, "upload volume "+movePool+"/"+name+" on "+b.URI())
		if strings.Contains(err.Error(), "deleting the half-made volume failed") {
			t.Errorf("the upload's cleanup failed: %v", err)
		}
		t.Logf("stalled upload: %v", err)
		wantGone(t, b, name) // UploadVolume deleted what it had made
		if b.Raw() != old {
			t.Error("the backend's connection changed: the stream ran on it")
		}
	})
}

// TestAccWireCut: a call whose connection is cut mid-call reconnects and succeeds; a stream whose
// connection is cut fails at once, saying so, and the next copy is whole.
func TestAccWireCut(t *testing.T) {
	requireAcc(t)
	b, p := wireBackend(t)
	const size = 8 << 20
	data := randomBytes(t, size)
	name := "tfacc-wire-" + testSuffix() + "-cut.raw"
	sourceVolumeFile(t, b, name, data)

	old, main := b.Raw(), p.Accepted()
	p.SetFault(faultproxy.Fault{Kind: faultproxy.Cut, Conn: main, AfterBytes: 40})
	st, err := b.StatVolume(context.Background(), movePool, name)
	fired(t, p, main)
	if err != nil || st.Bytes != size {
		t.Fatalf("stat across a cut: %+v, %v; want it read again on a new connection", st, err)
	}
	if b.Raw() == old {
		t.Error("the call did not reconnect")
	}

	stream := p.Accepted() + 1
	p.SetFault(faultproxy.Fault{Kind: faultproxy.Cut, Conn: stream, AfterBytes: 1 << 20})
	_, err = b.DownloadVolume(context.Background(), movePool, name, io.Discard)
	fired(t, p, stream)
	wantErrSays(t, err, "download volume "+movePool+"/"+name+" on "+b.URI(), "connection to libvirt was lost")
	t.Logf("cut download: %v", err)

	h := sha256.New()
	n, err := b.DownloadVolume(context.Background(), movePool, name, h)
	if err != nil {
		t.Fatalf("the download after the cut: %v", err)
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != sum(data) || n != size {
		t.Errorf("the download after the cut: %d bytes of sha256 %s; want %d of %s", n, got, size, sum(data))
	}
}

// TestAccWireMigrationStall: a live migration whose own connection stalls while libvirt copies
// the domain returns when its context ends: the job is aborted on the backend's connection, and
// the migration call, whose answer the stall holds, is abandoned with its connection; the
// domain runs on at its source, and the backend's connection serves the next call.
func TestAccWireMigrationStall(t *testing.T) {
	requireAcc(t)
	// Parallel: its objects are its own (suffixed names, its own fault proxy), and most of it is
	// waiting (a stall, a migration).
	t.Parallel()
	b, p := wireBackend(t)
	h2 := connectAcc(t, h2URI)
	ctx := context.Background()
	sfx := testSuffix()
	// A short name: on h2 libvirt puts the guest agent's socket at
	// /var/lib/virt-session/.config/libvirt/qemu/channel/target/domain-ID-NAME/org.qemu.guest_agent.0,
	// at most 107 bytes, which tfacc-wmig-XXXXXX passed once h2's domain IDs had two digits.
	name, disk := "tfacc-wm-"+sfx, "tfacc-wm-"+sfx+"-boot.qcow2"
	for _, host := range []*Backend{b, h2} {
		if _, err := host.EnsureVolume(ctx, backend.VolumeSpec{Pool: movePool, Name: disk, SizeMiB: 64, Fresh: true}); err != nil {
			t.Fatal(err)
		}
		deleteAtEnd(t, host, disk)
	}
	// Data on the disk, which the migration copies at the bandwidth set below.
	v, err := b.LookupVolume(ctx, movePool, disk)
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("qemu-io", "-f", "qcow2", "-c", "write -P 0x5a 16M 32M", v.Path).CombinedOutput(); err != nil {
		t.Fatalf("qemu-io: %v: %s", err, out)
	}
	t.Cleanup(func() {
		_ = h2.StopDomain(ctx, name)
		_ = h2.UndefineDomain(ctx, name)
	})
	startAcc(t, b, name, []backend.Disk{{DeviceName: "boot", Pool: movePool, Volume: disk}}, nil, "")
	// libvirt takes a few seconds to end an aborted job on a loaded machine: the migration's
	// grace must outlast that for the stall, not the abort, to be what is abandoned.
	b.grace = abandonGrace
	// At 1 MiB/s the copy of the domain's memory outlasts the test.
	d, err := b.Raw().DomainLookupByName(name)
	if err == nil {
		err = b.Raw().DomainMigrateSetMaxSpeed(d, 1, 0)
	}
	if err != nil {
		t.Fatal(err)
	}

	old := b.Raw()
	mig := p.Accepted() + 1
	mctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		done <- b.MigrateLive(mctx, name, backend.Migration{DestURI: h2URI, Timeout: 10 * time.Minute})
	}()
	for running := false; !running; {
		select {
		case err := <-done:
			t.Fatalf("the migration ended before it was stalled: %v", err)
		case <-time.After(100 * time.Millisecond):
		}
		if running, err = b.MigrationRunning(ctx, name); err != nil {
			t.Fatal(err)
		}
	}
	// The migration call has reached the daemon: hold its answer.
	p.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: mig})
	cancel()
	err = <-done
	fired(t, p, mig)
	wantErrSays(t, err, "migrate domain "+name, "on "+b.URI(), "abandoned with its connection")
	t.Logf("stalled migration: %v", err)
	if b.Raw() != old {
		t.Error("the backend's connection changed: the migration ran on it")
	}
	wantOn(t, b, h2, name)
}
