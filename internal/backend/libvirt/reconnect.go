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

// current is the connection with its socket's cutter.
func (b *Backend) current() (*golibvirt.Libvirt, *cuttable) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.l, b.sock
}

// do runs fn, the libvirt calls of one public method, on the current connection. When fn fails
// because the connection is gone, do reconnects and runs fn once more on the new connection, so
// fn must be safe to run twice: each method says where that needs care. op and object name the
// method's work for the error users see ("start domain", "db-1"); an empty object is the host.
//
// ctx bounds the calls, though go-libvirt takes none: a method called after ctx ended makes no
// call, and one whose call is still waiting for libvirt when ctx ends is cut off (see within).
func (b *Backend) do(ctx context.Context, op, object string, fn func(c conn) error) error {
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: err}
	}
	l, sock := b.current()
	if l == nil {
		var err error
		if l, sock, err = b.connectFirst(ctx); err != nil {
			return err
		}
	}
	err := within(ctx, conn{l: l, uri: b.uri}, sock, fn)
	if err != nil && ctx.Err() != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), call: err}
	}
	if err == nil || !connectionLost(err, l.IsConnected()) {
		return err
	}
	fields := map[string]any{"uri": b.uri, "operation": op, "object": object, "cause": err.Error()}
	tflog.SubsystemWarn(ctx, Subsystem, "lost the connection to libvirt; reconnecting once", fields)
	nl, nsock, rerr := b.reconnect(ctx, l)
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
	if retryErr := within(ctx, conn{l: nl, uri: b.uri}, nsock, fn); retryErr != nil {
		if ctx.Err() != nil {
			return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), call: retryErr}
		}
		return &lostError{op: op, object: object, uri: b.uri, cause: err, next: retryErr, retried: true}
	}
	return nil
}

// within runs fn on c. When ctx ends first, it closes the connection's socket, so that the call
// fn waits on fails at once (and every later call on that connection fails too, which makes the
// next method reconnect), and returns when fn has. Closing the socket is the only way to stop a
// go-libvirt call (see dial.go); other methods running on the same connection at that moment
// lose it as they would in a daemon restart, and reconnect and retry once.
func within(ctx context.Context, c conn, sock *cuttable, fn func(c conn) error) error {
	if ctx.Done() == nil || sock == nil {
		return fn(c)
	}
	done := make(chan error, 1)
	go func() { done <- fn(c) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		tflog.SubsystemWarn(ctx, Subsystem, "cutting off a libvirt call that outlived its context", map[string]any{"uri": c.uri, "reason": ctx.Err().Error()})
		sock.cut()
		return <-done
	}
}

// cutError is a method stopped because its context ended: before it made a call, or while a call
// waited for libvirt (call is then that call's failure, after the socket was closed under it).
type cutError struct {
	op, object, uri string
	ctxErr          error
	call            error
}

func (e *cutError) Error() string {
	what := e.op
	if e.object != "" {
		what += " " + e.object
	}
	reason := "time ran out"
	if errors.Is(e.ctxErr, context.Canceled) {
		reason = "cancelled"
	}
	if e.call == nil {
		return fmt.Sprintf("%s on %s: not started, the operation's %s (%v)", what, e.uri, reason, e.ctxErr)
	}
	return fmt.Sprintf("%s on %s: cut off, the operation's %s while the call waited for libvirt (%v); the connection was closed and the next call opens a new one", what, e.uri, reason, e.ctxErr)
}

// Unwrap gives the context's error, so that errors.Is(err, context.DeadlineExceeded) holds.
func (e *cutError) Unwrap() error { return e.ctxErr }

// connectFirst makes a Lazy backend's first connection: one attempt, no patience, because a host
// that has never answered in this run is not restarting; the next call tries again.
func (b *Backend) connectFirst(ctx context.Context) (*golibvirt.Libvirt, *cuttable, error) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.mu.RLock()
	l, sock, closed := b.l, b.sock, b.closed
	b.mu.RUnlock()
	switch {
	case closed:
		return nil, nil, errClosed
	case l != nil:
		return l, sock, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	l, sock, err := open(b.u)
	if err != nil {
		return nil, nil, b.connectError(err)
	}
	b.mu.Lock()
	b.l, b.sock = l, sock
	b.mu.Unlock()
	tflog.SubsystemInfo(ctx, Subsystem, "connected to libvirt", map[string]any{"uri": b.uri})
	return l, sock, nil
}

// errClosed is why a closed backend does not reconnect.
var errClosed = errors.New("the backend was closed")

// reconnect replaces stale, the connection a caller found lost, with a new one to the same URI.
// Callers that lost the same connection at the same time wait for one another here, and all but
// the first get the connection the first made.
func (b *Backend) reconnect(ctx context.Context, stale *golibvirt.Libvirt) (*golibvirt.Libvirt, *cuttable, error) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.mu.RLock()
	current, currentSock, closed := b.l, b.sock, b.closed
	b.mu.RUnlock()
	switch {
	case closed:
		return nil, nil, errClosed
	case current != stale:
		return current, currentSock, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, nil, err
	}
	l, sock, err := b.dial(ctx)
	if err != nil {
		return nil, nil, err
	}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		_ = l.Disconnect()
		return nil, nil, errClosed
	}
	b.l, b.sock = l, sock
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
	return l, sock, nil
}

// dial connects to the backend's URI again, trying for up to b.patience while the daemon does not
// answer, and gives the last error.
func (b *Backend) dial(ctx context.Context) (*golibvirt.Libvirt, *cuttable, error) {
	deadline := time.Now().Add(b.patience)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		l, sock, err := open(b.u)
		if err == nil || time.Now().Add(wait).After(deadline) {
			return l, sock, err
		}
		if b.dialFailed != nil {
			b.dialFailed(err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, nil, fmt.Errorf("%w (last attempt: %v)", ctx.Err(), err)
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
