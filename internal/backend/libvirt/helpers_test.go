package libvirt

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"io"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/virtfleet/terraform-provider-virt/internal/backend"
	"github.com/virtfleet/terraform-provider-virt/internal/engine"
)

// requireAcc skips acceptance tests, which need the libvirt daemon, unless TF_ACC is set.
func requireAcc(t *testing.T) {
	t.Helper()
	if os.Getenv("TF_ACC") == "" {
		t.Skip("acceptance test: set TF_ACC=1 and run a libvirt daemon (make testacc)")
	}
}

// connectAcc connects to uri and closes the connection when the test ends. Cleanups run last
// registered first, so the connection outlives the cleanups registered after this call.
func connectAcc(t *testing.T, uri string) *Backend {
	t.Helper()
	b, err := Connect(uri)
	if err != nil {
		t.Fatalf("connect to %s: %v", uri, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// defineAcc defines the domains, with one vCPU and 64 MiB, and undefines them when the test
// ends, failing it if any is left.
func defineAcc(t *testing.T, b *Backend, names ...string) {
	t.Helper()
	ctx := context.Background()
	for _, n := range names {
		if err := b.DefineDomain(ctx, backend.DomainSpec{Name: n, Shape: engine.Shape{DomainType: "qemu", VCPU: 1, MemoryMiB: 64}}); err != nil {
			t.Fatalf("define %s: %v", n, err)
		}
	}
	t.Cleanup(func() {
		for _, n := range names {
			if err := b.UndefineDomain(ctx, n); err != nil {
				t.Errorf("undefine %s: %v", n, err)
			}
		}
		for _, n := range names {
			if left, err := b.ListDomains(ctx, n); err != nil || len(left) > 0 {
				t.Errorf("left behind: %v %v", left, err)
			}
		}
	})
}

// rawConn is the backend's current connection, for tests that look under a method.
func rawConn(b *Backend) conn { return conn{l: b.Raw(), uri: b.URI()} }

// testSuffix makes acceptance object names unique per run.
func testSuffix() string {
	var b [3]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// lockedBuffer is a log sink for calls made from several goroutines.
type lockedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// socketProxy forwards connections on its own unix socket to libvirtd's, so that a test can
// break them as libvirtd dying would, without touching the daemon other tests use.
type socketProxy struct {
	path string
	ln   net.Listener

	mu       sync.Mutex
	conns    []net.Conn // both ends of every open pair
	accepted int
	stalled  bool // what clients send on open connections is swallowed, not forwarded
	// dropping makes the open connections forward repliesLeft more answers and swallow the
	// ones after, as when libvirtd dies between doing a call's work and answering it.
	dropping    bool
	repliesLeft int
	// swallowed receives once for each read or answer swallowed, so a test knows that a call
	// is waiting for an answer that will not come.
	swallowed chan struct{}
}

func startProxy(t *testing.T, upstream string) *socketProxy {
	t.Helper()
	// A unix socket path must fit in about 100 bytes, which t.TempDir's long names may not.
	dir, err := os.MkdirTemp("", "virt-proxy") //nolint:usetesting // t.TempDir's path is too long for a socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	p := &socketProxy{path: path, ln: ln, swallowed: make(chan struct{}, 16)}
	go p.serve(ln, upstream)
	t.Cleanup(p.close)
	return p
}

func (p *socketProxy) serve(ln net.Listener, upstream string) {
	for {
		down, err := ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("unix", upstream)
		if err != nil {
			_ = down.Close()
			continue
		}
		p.mu.Lock()
		p.accepted++
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		go p.forwardCalls(down, up)
		go p.forwardAnswers(up, down)
	}
}

func (p *socketProxy) signalSwallowed() {
	select {
	case p.swallowed <- struct{}{}:
	default:
	}
}

// forwardCalls copies what the client sends to libvirtd, bytes as they come.
func (p *socketProxy) forwardCalls(from, to net.Conn) {
	defer func() { _ = from.Close(); _ = to.Close() }()
	buf := make([]byte, 64<<10)
	for {
		n, err := from.Read(buf)
		if n > 0 {
			p.mu.Lock()
			swallow := p.stalled
			p.mu.Unlock()
			if swallow {
				p.signalSwallowed()
			} else if _, werr := to.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// forwardAnswers copies libvirtd's packets to the client one whole packet at a time, so that
// dropReply can count them. A packet starts with its length, the length's own 4 bytes included.
func (p *socketProxy) forwardAnswers(from, to net.Conn) {
	defer func() { _ = from.Close(); _ = to.Close() }()
	r := bufio.NewReader(from)
	for {
		var head [4]byte
		if _, err := io.ReadFull(r, head[:]); err != nil {
			return
		}
		n := binary.BigEndian.Uint32(head[:])
		if n < 4 {
			return
		}
		pkt := make([]byte, n)
		copy(pkt, head[:])
		if _, err := io.ReadFull(r, pkt[4:]); err != nil {
			return
		}
		p.mu.Lock()
		swallow := p.dropping && p.repliesLeft == 0
		if p.dropping && p.repliesLeft > 0 {
			p.repliesLeft--
		}
		p.mu.Unlock()
		if swallow {
			p.signalSwallowed()
			continue
		}
		if _, err := to.Write(pkt); err != nil {
			return
		}
	}
}

// dropReply makes the open connections forward n more answers and swallow every one after,
// until cut: the call whose answer is swallowed was done by libvirtd, but its caller never
// hears so.
func (p *socketProxy) dropReply(n int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropping, p.repliesLeft = true, n
}

// stall makes the open connections swallow what clients send from now on, until cut.
func (p *socketProxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// resume forwards what clients send again, on the open connections and the new ones.
func (p *socketProxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
}

// cut closes every open connection, as libvirtd does when it dies, and keeps accepting new ones.
func (p *socketProxy) cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled, p.dropping = false, false
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
}

// close stops accepting, removes the socket and cuts the open connections: the daemon is gone.
func (p *socketProxy) close() {
	p.mu.Lock()
	ln := p.ln
	p.mu.Unlock()
	_ = ln.Close()
	p.cut()
}

// reopen listens at the same path again: the daemon is back.
func (p *socketProxy) reopen(upstream string) error {
	ln, err := net.Listen("unix", p.path)
	if err != nil {
		return err
	}
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go p.serve(ln, upstream)
	return nil
}

func (p *socketProxy) connections() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// uri is a libvirt URI that connects through the proxy.
func (p *socketProxy) uri() string { return "qemu:///system?socket=" + p.path }
