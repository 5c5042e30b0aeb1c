package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
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
	// gate is shut when the method stops waiting for this attempt (within abandoned it): the
	// attempt's goroutine may still return much later, and must then write nothing a later
	// call reads (keep).
	gate *callGate
}

// callGate is shut once, when the method abandons the attempt that holds it.
type callGate struct {
	mu   sync.Mutex
	shut bool
}

// abandon shuts the gate: after it returns, no keep of the attempt writes anything.
func (g *callGate) abandon() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.shut = true
}

// isShut reports whether the attempt was abandoned; a nil gate never is.
func (g *callGate) isShut() bool {
	if g == nil {
		return false
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.shut
}

// keep runs write, a change to what outlives the attempt (the Backend's caches of handles, the
// method's results), unless the method abandoned the attempt: a call go-libvirt returns from
// after its method gave up on it must not put what it read on a retired connection, maybe long
// ago, where a later call reads it. write runs under the gate's lock, so it ends before the
// method's abandon does, or does not run at all.
func (c conn) keep(write func()) {
	if c.gate == nil {
		write()
		return
	}
	c.gate.mu.Lock()
	defer c.gate.mu.Unlock()
	if !c.gate.shut {
		write()
	}
}

func (b *Backend) client() *golibvirt.Libvirt {
	if k := b.current(); k != nil {
		return k.l
	}
	return nil
}

// current is the connection calls run on now; nil before the first, and after one was retired.
func (b *Backend) current() *link {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.cur
}

// do runs fn, the libvirt calls of one public method, on the current connection. When fn fails
// because the connection is gone, do reconnects and runs fn once more on the new connection, so
// fn must be safe to run twice: each method says where that needs care. op and object name the
// method's work for the error users see ("start domain", "db-1"); an empty object is the host.
//
// ctx bounds the calls, though go-libvirt takes none (a context without a deadline gets
// defaultCallBound): a method called after ctx ended makes no call, and one whose call is still
// waiting for libvirt when ctx ends is cut off with its connection (see within).
func (b *Backend) do(ctx context.Context, op, object string, fn func(c conn) error) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: err, why: cause(ctx)}
	}
	k := b.current()
	if k == nil {
		var err error
		if k, err = b.connect(ctx); err != nil {
			if ctx.Err() != nil {
				return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), why: cause(ctx), call: err}
			}
			return err
		}
	}
	err := b.within(ctx, op, object, k, fn)
	if err != nil && ctx.Err() != nil {
		return b.cutOff(ctx, op, object, err)
	}
	if errors.Is(err, errAbandoned) {
		// The call was abandoned on a connection another call retired; it may still run, so
		// it is not run again here: the next method runs on a new connection.
		return err
	}
	if err == nil || !connectionLost(err, k.l.IsConnected()) {
		return err
	}
	fields := map[string]any{"uri": b.uri, "operation": op, "object": object, "cause": err.Error()}
	tflog.SubsystemWarn(ctx, Subsystem, "lost the connection to libvirt; reconnecting once", fields)
	nk, rerr := b.reconnect(ctx, k)
	if rerr != nil {
		if ctx.Err() != nil {
			return b.cutOff(ctx, op, object, rerr)
		}
		fields["error"] = rerr.Error()
		tflog.SubsystemError(ctx, Subsystem, "cannot reconnect to libvirt", fields)
		e := &lostError{op: op, object: object, uri: b.uri, cause: err, next: rerr}
		if !errors.Is(rerr, errClosed) {
			// The daemon could not be reached: say how to bring it back.
			e.hint = startHint(b.u)
		}
		return e
	}
	if retryErr := b.within(ctx, op, object, nk, fn); retryErr != nil {
		if ctx.Err() != nil {
			return b.cutOff(ctx, op, object, retryErr)
		}
		if errors.Is(retryErr, errAbandoned) {
			return retryErr
		}
		return &lostError{op: op, object: object, uri: b.uri, cause: err, next: retryErr, retried: true}
	}
	return nil
}

// cutOff is the error of a method whose context ended while its call waited: call is what the
// call returned after its socket was closed, or within's errAbandoned.
func (b *Backend) cutOff(ctx context.Context, op, object string, call error) error {
	return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), why: cause(ctx), call: call, abandoned: errors.Is(call, errAbandoned), grace: b.grace}
}

// errAbandoned marks a call that did not return within abandonGrace of its connection being
// closed: its goroutine is left to go-libvirt, and the method returns without it.
var errAbandoned = errors.New("abandoned")

// within runs fn on k. When ctx ends first, it retires k (closes its socket and drops it from
// the Backend, see retire), so that the call fn waits on fails at once, and every other call on
// k is told to stop waiting too; when another call retires k first, fn's call is in the same
// case. Either way within then waits at most abandonGrace for fn to return: a call stuck in
// go-libvirt (behind a lock that a stuck stream holds) is abandoned, with an error wrapping
// errAbandoned, and logged.
//
// An abandoned call's goroutine is left to return when go-libvirt lets it: its result goes into
// done's one buffered slot, which nobody reads then, so it never blocks; and its conn's gate is
// shut, so it writes nothing a later call reads (conn.keep).
func (b *Backend) within(ctx context.Context, op, object string, k *link, fn func(c conn) error) error {
	done := make(chan error, 1)
	gate := &callGate{}
	ended := b.callEnded
	go func() {
		done <- fn(conn{l: k.l, uri: b.uri, gate: gate})
		if ended != nil {
			ended()
		}
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		tflog.SubsystemWarn(ctx, Subsystem, "cutting off a libvirt call that outlived its context, and retiring its connection",
			map[string]any{"uri": b.uri, "operation": op, "object": object, "reason": cause(ctx).Error()})
		b.retire(k)
	case <-k.retired:
		// Another call was cut off on k: this one waits on a closed socket, or behind it.
	}
	t := time.NewTimer(b.grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
	}
	gate.abandon()
	tflog.SubsystemError(ctx, Subsystem, "abandoned a libvirt call and its connection",
		map[string]any{"uri": b.uri, "operation": op, "object": object, "grace_seconds": b.grace.Seconds(), "context_ended": ctx.Err() != nil})
	if ctx.Err() != nil {
		return errAbandoned
	}
	return &abandonedError{op: op, object: object, uri: b.uri, grace: b.grace}
}

// retire drops k, the connection a call was cut off on, so that the next call opens a new one,
// and closes it for good (see link).
func (b *Backend) retire(k *link) {
	b.mu.Lock()
	if b.cur == k {
		b.cur = nil
	}
	b.mu.Unlock()
	k.retire()
}

// cutError is a method stopped because its context ended: before it made a call, or while a call
// waited for libvirt (call is then that call's failure, after the socket was closed under it,
// or errAbandoned when the call did not return even then).
type cutError struct {
	op, object, uri string
	ctxErr          error
	why             error // cause(ctx): says so when the default bound ended it
	call            error
	abandoned       bool
	grace           time.Duration // how long an abandoned call was given
}

func (e *cutError) Error() string {
	what := e.op
	if e.object != "" {
		what += " " + e.object
	}
	reason := "the operation's time ran out"
	if errors.Is(e.ctxErr, context.Canceled) {
		reason = "the operation was cancelled"
	}
	if e.why != nil {
		reason = "the " + e.why.Error()
	}
	switch {
	case e.call == nil:
		return fmt.Sprintf("%s on %s: not started, %s", what, e.uri, reason)
	case e.abandoned:
		return fmt.Sprintf("%s on %s: abandoned, %s while the call waited for libvirt, and go-libvirt did not return within %s of its connection being closed; the connection was closed and the next call opens a new one", what, e.uri, reason, e.grace)
	}
	return fmt.Sprintf("%s on %s: cut off, %s while the call waited for libvirt (%v); the connection was closed and the next call opens a new one", what, e.uri, reason, e.call)
}

// Unwrap gives the context's error, so that errors.Is(err, context.DeadlineExceeded) holds.
func (e *cutError) Unwrap() error { return e.ctxErr }

// abandonedError is a call abandoned on a connection that another call was cut off on.
type abandonedError struct {
	op, object, uri string
	grace           time.Duration
}

func (e *abandonedError) Error() string {
	what := e.op
	if e.object != "" {
		what += " " + e.object
	}
	return fmt.Sprintf("%s on %s: abandoned: another call on its connection was cut off, which closed the connection, and go-libvirt did not return from this one within %s; the next call opens a new connection", what, e.uri, e.grace)
}

func (e *abandonedError) Unwrap() error { return errAbandoned }

// connect opens the connection calls run on, when there is none: a Lazy backend's first, or the
// one after a connection was retired. One attempt, no patience: a host that has never answered
// in this run is not restarting, and one whose call was cut off is there; the next call tries
// again.
func (b *Backend) connect(ctx context.Context) (*link, error) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.mu.RLock()
	k, closed := b.cur, b.closed
	b.mu.RUnlock()
	switch {
	case closed:
		return nil, errClosed
	case k != nil:
		return k, nil
	}
	k, err := openWithin(ctx, b.u, b.grace)
	if err != nil {
		return nil, b.connectError(err)
	}
	if !b.install(k) {
		return nil, errClosed
	}
	tflog.SubsystemInfo(ctx, Subsystem, "connected to libvirt", map[string]any{"uri": b.uri})
	return k, nil
}

// install makes k the connection calls run on, unless the backend was closed (false: k is
// closed then).
func (b *Backend) install(k *link) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		k.retire()
		return false
	}
	b.cur = k
	return true
}

// errClosed is why a closed backend does not reconnect.
var errClosed = errors.New("the backend was closed")

// reconnect replaces stale, the connection a caller found lost, with a new one to the same URI.
// Callers that lost the same connection at the same time wait for one another here, and all but
// the first get the connection the first made.
func (b *Backend) reconnect(ctx context.Context, stale *link) (*link, error) {
	b.reconnectMu.Lock()
	defer b.reconnectMu.Unlock()
	b.mu.RLock()
	current, closed := b.cur, b.closed
	b.mu.RUnlock()
	switch {
	case closed:
		return nil, errClosed
	case current != nil && current != stale:
		return current, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	k, err := b.dial(ctx)
	if err != nil {
		return nil, err
	}
	if !b.install(k) {
		return nil, errClosed
	}
	// Disconnecting a client go-libvirt already found closed returns at once and frees what it
	// still holds; one whose reader has not noticed yet is closed with its socket (retire).
	if stale.l.IsConnected() {
		stale.retire()
	} else {
		stale.once.Do(func() { close(stale.retired); _ = stale.l.Disconnect() })
	}
	tflog.SubsystemInfo(ctx, Subsystem, "reconnected to libvirt", map[string]any{"uri": b.uri})
	return k, nil
}

// dial connects to the backend's URI again, trying for up to b.patience while the daemon does not
// answer, and gives the last error.
func (b *Backend) dial(ctx context.Context) (*link, error) {
	deadline := time.Now().Add(b.patience)
	for wait := 100 * time.Millisecond; ; wait = min(2*wait, time.Second) {
		k, err := openWithin(ctx, b.u, b.grace)
		if err == nil || ctx.Err() != nil || time.Now().Add(wait).After(deadline) {
			return k, err
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
