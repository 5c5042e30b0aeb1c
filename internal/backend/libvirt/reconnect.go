package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// libvirtd can go away under a running apply: a package upgrade restarts it, or it crashes.
// go-libvirt does not reconnect by itself. Once its reader has seen the socket close, every call
// fails at once with syscall.EINVAL ("invalid argument"), and a call that was waiting for its
// answer fails with golibvirt.ErrInterrupted; neither says that the connection is what failed.
// So every public method runs its libvirt calls through do, which reconnects to the same URI
// once and runs the calls once more, and otherwise says plainly that the connection was lost.

// conn is the connection one attempt of a method runs on. The methods' helpers take it rather
// than reading the Backend's client, so that an attempt never mixes two connections.
type conn struct {
	l   *golibvirt.Libvirt
	uri string
}

func (b *Backend) client() *golibvirt.Libvirt {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.l
}

// do runs fn, the libvirt calls of one public method, on the current connection. When fn fails
// because the connection is gone, do reconnects and runs fn once more on the new connection, so
// fn must be safe to run twice: each method says where that needs care. op and object name the
// method's work for the error users see ("start domain", "db-1"); an empty object is the host.
func (b *Backend) do(ctx context.Context, op, object string, fn func(c conn) error) error {
	l := b.client()
	err := fn(conn{l: l, uri: b.uri})
	if err == nil || !connectionLost(err, l.IsConnected()) {
		return err
	}
	fields := map[string]any{"uri": b.uri, "operation": op, "object": object, "cause": err.Error()}
	tflog.SubsystemWarn(ctx, Subsystem, "lost the connection to libvirt; reconnecting once", fields)
	nl, rerr := b.reconnect(ctx, l)
	if rerr != nil {
		fields["error"] = rerr.Error()
		tflog.SubsystemError(ctx, Subsystem, "cannot reconnect to libvirt", fields)
		e := &lostError{op: op, object: object, uri: b.uri, cause: err, next: rerr}
		if ctx.Err() == nil && !errors.Is(rerr, errClosed) {
			// The daemon could not be reached: say how to bring it back.
			e.hint = startHint(b.u)
		}
		return e
	}
	if retryErr := fn(conn{l: nl, uri: b.uri}); retryErr != nil {
		return &lostError{op: op, object: object, uri: b.uri, cause: err, next: retryErr, retried: true}
	}
	return nil
}

// errClosed is why a closed backend does not reconnect.
var errClosed = errors.New("the backend was closed")

// reconnect replaces stale, the connection a caller found lost, with a new one to the same URI.
// Callers that lost the same connection at the same time wait for one another here, and all but
// the first get the connection the first made.
func (b *Backend) reconnect(ctx context.Context, stale *golibvirt.Libvirt) (*golibvirt.Libvirt, error) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.mu.RLock()
	current, closed := b.l, b.closed
	b.mu.RUnlock()
	switch {
	case closed:
		return nil, errClosed
	case current != stale:
		return current, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	l, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = l.Disconnect()
		return nil, errClosed
	}
	b.l = l
	b.mu.Unlock()
	// Disconnecting a client go-libvirt already found closed returns at once and frees what it
	// still holds. One whose reader has not noticed yet is told to close in the background,
	// because its goodbye call could wait for an answer that never comes.
	if stale.IsConnected() {
		go func() { _ = stale.Disconnect() }()
	} else {
		_ = stale.Disconnect()
	}
	tflog.SubsystemInfo(ctx, Subsystem, "reconnected to libvirt", map[string]any{"uri": b.uri})
	return l, nil
}

// dial connects to the backend's URI again, trying for up to b.patience while the daemon does not
// answer, and gives the last error.
func (b *Backend) dial(ctx context.Context) (*golibvirt.Libvirt, error) {
	deadline := time.Now().Add(b.patience)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		l, err := golibvirt.ConnectToURI(b.u)
		if err == nil || time.Now().Add(wait).After(deadline) {
			return l, err
		}
		if b.dialFailed != nil {
			b.dialFailed(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
		case <-t.C:
		}
	}
}

// connectionLost tells a failure of the connection from a failure libvirt answered with.
// connected is go-libvirt's IsConnected after the failure. go-libvirt notices a closed socket in
// its reader goroutine, so a call can fail just before IsConnected turns false; the errors a
// dead socket gives count as lost whatever it says.
func connectionLost(err error, connected bool) bool {
	if err == nil {
		return false
	}
	var lerr golibvirt.Error
	if errors.As(err, &lerr) {
		// The daemon answered, so the connection works.
		return false
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	if !connected {
		return true
	}
	for _, target := range []error{
		golibvirt.ErrInterrupted, syscall.EINVAL, syscall.EPIPE, syscall.ECONNRESET, syscall.ECONNABORTED,
		io.EOF, io.ErrUnexpectedEOF, io.ErrClosedPipe, net.ErrClosed,
	} {
		if errors.Is(err, target) {
			return true
		}
	}
	var nerr *net.OpError
	return errors.As(err, &nerr)
}

// lostError is a method that failed because the connection was lost, and then failed again:
// either the reconnect failed, or the retry on the new connection did.
type lostError struct {
	op, object, uri string
	cause           error // the first failure
	next            error // the reconnect's failure, or the retry's when retried
	retried         bool
	hint            string
}

func (e *lostError) Error() string {
	what := e.op
	if e.object != "" {
		what += " " + e.object
	}
	msg := fmt.Sprintf("%s on %s: connection to libvirt lost (%s); ", what, e.uri, describeLoss(e.op, e.cause))
	if e.retried {
		return msg + "reconnected, but the retry failed: " + e.next.Error()
	}
	msg += "reconnect failed: " + e.next.Error()
	if e.hint != "" {
		msg += ". " + e.hint
	}
	return msg
}

// Unwrap gives both failures, so that errors.Is finds backend.ErrNotFound in a retry's.
func (e *lostError) Unwrap() []error { return []error{e.cause, e.next} }

// describeLoss says what go-libvirt's error for a lost connection means, since its own words
// ("invalid argument") do not. The step that failed is named when it is not the method's op.
func describeLoss(op string, err error) string {
	step := ""
	var oe *opError
	if errors.As(err, &oe) {
		if oe.op != op {
			step = oe.op + " " + oe.object + ": "
		}
		err = oe.err
	}
	switch {
	case errors.Is(err, golibvirt.ErrInterrupted):
		return step + "the connection closed while the call waited for its answer: " + err.Error()
	case errors.Is(err, syscall.EINVAL):
		return step + "the connection had already closed: " + err.Error()
	}
	return step + err.Error()
}
