package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/digitalocean/go-libvirt/libvirttest"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/hashicorp/terraform-plugin-log/tflog"
	"github.com/hashicorp/terraform-plugin-log/tflogtest"
)

// testGrace shortens the wait for a call cut off under a stuck go-libvirt, which these tests
// make on purpose: nothing asserts on it.
const testGrace = 50 * time.Millisecond

// mockBackend is a Backend whose connection is go-libvirt's mock daemon (no libvirt), for tests
// of how calls are bounded; the functions the tests run stand for go-libvirt's calls, stuck or not.
func mockBackend(t *testing.T) (*Backend, *link) {
	t.Helper()
	b, err := Lazy("qemu:///system?socket=/nonexistent/tfacc-bounds.sock")
	if err != nil {
		t.Fatal(err)
	}
	b.grace, b.patience = testGrace, 0
	cd := &cuttable{d: libvirttest.New()}
	l := golibvirt.NewWithDialer(cd)
	if err := l.ConnectToURI(golibvirt.QEMUSystem); err != nil {
		t.Fatal(err)
	}
	k := newLink(l, cd)
	b.cur = k
	t.Cleanup(func() { _ = b.Close() })
	return b, k
}

// stuck is a call go-libvirt never returns from (as one behind a stuck stream's lock), until
// the test ends.
func stuck(t *testing.T) func(started chan<- struct{}) func(conn) error {
	forever := make(chan struct{})
	t.Cleanup(func() { close(forever) })
	return func(started chan<- struct{}) func(conn) error {
		return func(conn) error {
			close(started)
			<-forever
			return errors.New("returned after the test")
		}
	}
}

// failsOnClose is a call that fails as go-libvirt's do when their socket is closed.
func failsOnClose(started chan<- struct{}) func(c conn) error {
	return func(c conn) error {
		close(started)
		<-c.l.Disconnected()
		return golibvirt.ErrInterrupted
	}
}

func TestWithin(t *testing.T) {
	t.Parallel()
	errLibvirt := errors.New("libvirt's own answer")
	cases := map[string]struct {
		call func(t *testing.T, started chan<- struct{}) func(conn) error
		// end ends the call's context (cancel) or retires its connection as another call's
		// cut does (retire), once the call started; nil: neither.
		end         func(cancel func(), retire func())
		wantErr     error
		wantRetired bool
	}{
		"returns before its context ends": {
			call: func(_ *testing.T, started chan<- struct{}) func(conn) error {
				return func(conn) error { close(started); return errLibvirt }
			},
			wantErr: errLibvirt,
		},
		"cut off, returns when its socket closes": {
			call:        func(_ *testing.T, s chan<- struct{}) func(conn) error { return failsOnClose(s) },
			end:         func(cancel, _ func()) { cancel() },
			wantErr:     golibvirt.ErrInterrupted,
			wantRetired: true,
		},
		"cut off, stuck in go-libvirt: abandoned": {
			call:        func(t *testing.T, s chan<- struct{}) func(conn) error { return stuck(t)(s) },
			end:         func(cancel, _ func()) { cancel() },
			wantErr:     errAbandoned,
			wantRetired: true,
		},
		"another call cut off on its connection, this one fails at once": {
			call:        func(_ *testing.T, s chan<- struct{}) func(conn) error { return failsOnClose(s) },
			end:         func(_, retire func()) { retire() },
			wantErr:     golibvirt.ErrInterrupted,
			wantRetired: true,
		},
		"another call cut off on its connection, this one stuck: abandoned": {
			call:        func(t *testing.T, s chan<- struct{}) func(conn) error { return stuck(t)(s) },
			end:         func(_, retire func()) { retire() },
			wantErr:     errAbandoned,
			wantRetired: true,
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, k := mockBackend(t)
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started := make(chan struct{})
			fn := c.call(t, started)
			go func() {
				<-started
				if c.end != nil {
					c.end(cancel, func() { b.retire(k) })
				}
			}()
			err := b.within(ctx, "read volume", "virt/v", k, fn)
			if !errors.Is(err, c.wantErr) {
				t.Errorf("within: %v, want %v", err, c.wantErr)
			}
			retired := false
			select {
			case <-k.retired:
				retired = true
			default:
			}
			if retired != c.wantRetired {
				t.Errorf("connection retired: %v, want %v", retired, c.wantRetired)
			}
			if got := b.current(); (got == nil) != c.wantRetired {
				t.Errorf("the backend's connection after the call: %p, the call's %p; want it dropped: %v", got, k, c.wantRetired)
			}
		})
	}
}

// TestDoAbandons: a method whose call is stuck in go-libvirt when its context ends returns,
// with an error naming the operation, the object and the URI and saying it was abandoned; its
// connection is dropped, and a method stuck on the same connection with no deadline of its own
// is abandoned with it, not run again; both are logged.
func TestDoAbandons(t *testing.T) {
	t.Parallel()
	b, k := mockBackend(t)
	var logs lockedBuffer
	root := tflog.NewSubsystem(tflogtest.RootLogger(context.Background(), &logs), Subsystem)
	ctx, cancel := context.WithCancel(root)
	defer cancel()
	block := stuck(t)

	var otherCalls atomic.Int32
	otherStarted := make(chan struct{})
	otherErr := make(chan error, 1)
	go func() {
		first := block(otherStarted)
		otherErr <- b.do(root, "list domains", "", func(c conn) error {
			otherCalls.Add(1)
			return first(c)
		})
	}()
	<-otherStarted
	started := make(chan struct{})
	go func() { <-started; cancel() }()
	err := b.do(ctx, "read volume", "virt/tfacc-v", block(started))

	var ce *cutError
	if !errors.As(err, &ce) || !errors.Is(err, context.Canceled) {
		t.Fatalf("do: %v; want a cut-off error wrapping the context's", err)
	}
	for _, want := range []string{"read volume virt/tfacc-v on " + b.URI(), "abandoned", "the next call opens a new one"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
	oerr := <-otherErr
	var ae *abandonedError
	if !errors.As(oerr, &ae) || !strings.Contains(oerr.Error(), "list domains on "+b.URI()+": abandoned") {
		t.Errorf("the other call: %v; want it abandoned", oerr)
	}
	if n := otherCalls.Load(); n != 1 {
		t.Errorf("the other call ran %d times, want once: an abandoned call may still run, so it is not run again", n)
	}
	if b.current() != nil {
		t.Error("the backend kept the connection a call was cut off on")
	}
	select {
	case <-k.l.Disconnected():
	default:
		t.Error("the retired connection's socket is open")
	}

	entries, err := tflogtest.MultilineJSONDecode(&logs.buf)
	if err != nil {
		t.Fatal(err)
	}
	type abandoned struct{ Operation, Object, URI string }
	var got []abandoned
	for _, e := range entries {
		if e["@message"] == "abandoned a libvirt call and its connection" {
			got = append(got, abandoned{Operation: e["operation"].(string), Object: e["object"].(string), URI: e["uri"].(string)})
		}
	}
	want := []abandoned{{"read volume", "virt/tfacc-v", b.URI()}, {"list domains", "", b.URI()}}
	less := func(a, b abandoned) bool { return a.Operation < b.Operation }
	if diff := cmp.Diff(want, got, cmpopts.SortSlices(less)); diff != "" {
		t.Errorf("abandon logs (-want +got):\n%s", diff)
	}
}

// TestBounded: a context without a deadline gets defaultCallBound, and one with a deadline
// keeps it, longer or shorter.
func TestBounded(t *testing.T) {
	t.Parallel()
	before := time.Now()
	ctx, cancel := bounded(context.Background())
	defer cancel()
	if d, ok := ctx.Deadline(); !ok || d.Before(before.Add(defaultCallBound)) {
		t.Errorf("no deadline given: bounded gives %s (%v), want now + %s", d, ok, defaultCallBound)
	}
	for _, want := range []time.Time{time.Now().Add(time.Hour), time.Now().Add(time.Second)} {
		given, cancel := context.WithDeadline(context.Background(), want)
		ctx, cancel2 := bounded(given)
		if d, _ := ctx.Deadline(); !d.Equal(want) {
			t.Errorf("deadline %s given: bounded gives %s", want, d)
		}
		cancel2()
		cancel()
	}
	e := &cutError{op: "list domains", uri: "qemu:///system", ctxErr: context.DeadlineExceeded, why: fmt.Errorf("operation's time ran out (%v): %w", errDefaultBound, context.DeadlineExceeded)}
	if !strings.Contains(e.Error(), "default bound of 5m0s") || !errors.Is(e, context.DeadlineExceeded) {
		t.Errorf("cut-off error under the default bound: %q", e)
	}
}

// TestOpenWithinStalled: a daemon that accepts a connection and never answers does not hold
// a connect past its context.
func TestOpenWithinStalled(t *testing.T) {
	t.Parallel()
	dir, err := os.MkdirTemp("", "virt-stall") //nolint:usetesting // t.TempDir's path is too long for a socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	path := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		c, err := ln.Accept() // and never answer
		cancel()
		if err == nil {
			defer c.Close()
			_, _ = io.Copy(io.Discard, c)
		}
	}()
	u, err := url.Parse("qemu:///system?socket=" + path)
	if err != nil {
		t.Fatal(err)
	}
	_, err = openWithin(ctx, u, testGrace)
	if err == nil || !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "the daemon did not answer") {
		t.Errorf("connect to a daemon that never answers: %v", err)
	}
}

// TestWithinAbandonedCallReturnsLater: a call go-libvirt returns from only after within
// abandoned it ends without blocking (its result has a slot nobody reads), and what it read is
// not kept: not in the Backend's caches, where a later call would read it, nor in the method's
// results. The same call returning in time keeps both.
func TestWithinAbandonedCallReturnsLater(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		cutOff   bool
		wantErr  error
		wantKept []string
	}{
		"returns in time":                {cutOff: false, wantErr: nil, wantKept: []string{"listed"}},
		"returns after it was abandoned": {cutOff: true, wantErr: errAbandoned, wantKept: nil},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			b, k := mockBackend(t)
			ended := make(chan struct{})
			b.callEnded = func() { close(ended) }
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			started, release := make(chan struct{}), make(chan struct{})
			var result []string // the method's result, as ListDomains's
			fn := func(c conn) error {
				close(started)
				<-release // go-libvirt returns when the test says
				c.keep(func() {
					result = []string{"listed"}
					b.handles.remember(domainName, golibvirt.Domain{Name: "listed"})
				})
				return nil
			}
			go func() {
				<-started
				if c.cutOff {
					cancel() // within retires the connection and, the call stuck, abandons it
					return
				}
				close(release)
			}()
			err := b.within(ctx, "list domains", "", k, fn)
			if !errors.Is(err, c.wantErr) {
				t.Fatalf("within: %v, want %v", err, c.wantErr)
			}
			if c.cutOff {
				close(release) // go-libvirt returns now, after the method gave up on the call
			}
			<-ended // the call's goroutine ended: it did not block on its result
			var kept []string
			if _, ok := b.handles.take("listed"); ok {
				kept = append(kept, "listed")
			}
			if diff := cmp.Diff(c.wantKept, kept); diff != "" {
				t.Errorf("handles kept (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(c.wantKept, result); diff != "" {
				t.Errorf("the method's result (-want +got):\n%s", diff)
			}
		})
	}
}
