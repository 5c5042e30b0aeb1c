package libvirt

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"sync"
	"time"

	golibvirt "github.com/digitalocean/go-libvirt"
)

// Bounds. go-libvirt takes no context, and a call it sent waits for its answer as long as the
// socket is open; a call waiting to send waits, in (*Libvirt).register, for a lock that a call
// stuck in a stream may hold forever (issue 43: an apply hung for 30 minutes that way). So the
// backend bounds every call itself, and gives up on a connection a call was cut off on.

// defaultCallBound bounds a method called with a context that has no deadline (a refresh, a
// plan's reads, Connect): a few minutes, far more than any one call takes on a daemon that
// answers (the longest, a volume clone or a pool refresh, take seconds), so that it cuts off
// only a call that will not return. A method whose context has a deadline keeps that deadline,
// longer or shorter.
const defaultCallBound = 5 * time.Minute

// abandonGrace is how long a call whose socket was closed under it may take to return before it
// is abandoned. Closing the socket ends a waiting call at once unless go-libvirt hangs (a call
// blocked behind a stuck stream's lock; see stream.go), so this is only ever waited in full
// for a call that would never return.
const abandonGrace = 10 * time.Second

// errDefaultBound is the cause of a context ended by defaultCallBound.
var errDefaultBound = fmt.Errorf("the call was given no deadline and ran into the backend's default bound of %s", defaultCallBound)

// bounded gives ctx a deadline when it has none (see defaultCallBound).
func bounded(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeoutCause(ctx, defaultCallBound, errDefaultBound)
}

// link is one go-libvirt connection with its socket's cutter. A link on which a call was cut
// off or abandoned is retired: its socket is closed, it is dropped by the Backend and never
// handed to another call, and the calls still running on it are told (retired), so that they
// too stop waiting on it within abandonGrace rather than behind a lock the stuck call holds.
type link struct {
	l       *golibvirt.Libvirt
	sock    *cuttable
	retired chan struct{}
	once    sync.Once
}

func newLink(l *golibvirt.Libvirt, sock *cuttable) *link {
	return &link{l: l, sock: sock, retired: make(chan struct{})}
}

// retire closes the link for good. Its Disconnect runs in the background: go-libvirt's goodbye
// call can wait on the same lock as the stuck call, forever.
func (k *link) retire() {
	k.once.Do(func() {
		close(k.retired)
		k.sock.cut()
		go func() { _ = k.l.Disconnect() }()
	})
}

// close ends a link no call is stuck on: politely (go-libvirt's goodbye, so that the daemon
// logs no error), in the background, and by closing its socket when the goodbye does not
// return within abandonGrace.
func (k *link) close() {
	k.once.Do(func() {
		close(k.retired)
		go func() {
			done := make(chan struct{})
			go func() { _ = k.l.Disconnect(); close(done) }()
			t := time.NewTimer(abandonGrace)
			defer t.Stop()
			select {
			case <-done:
			case <-t.C:
				k.sock.cut()
			}
		}()
	})
}

// openWithin connects to the daemon at u, cut off when ctx ends: a daemon that accepts the
// connection and never answers holds go-libvirt's connect call as it holds any other. A connect
// that does not return within grace (abandonGrace) of its socket being closed is abandoned.
func openWithin(ctx context.Context, u *url.URL, grace time.Duration) (*link, error) {
	d, err := dialerFor(u)
	if err != nil {
		return nil, err
	}
	cd := &cuttable{d: d}
	type result struct {
		l   *golibvirt.Libvirt
		err error
	}
	done := make(chan result, 1)
	go func() {
		l, err := connectOn(u, cd)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, r.err
		}
		return newLink(r.l, cd), nil
	case <-ctx.Done():
	}
	cd.cut()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case r := <-done:
		if r.err == nil {
			// It connected just as ctx ended: the caller will not use it.
			go func() { _ = r.l.Disconnect() }()
		}
		return nil, fmt.Errorf("failed to connect to libvirt: the daemon did not answer before the %w (%v)", cause(ctx), r.err)
	case <-t.C:
		return nil, fmt.Errorf("failed to connect to libvirt: the daemon did not answer before the %w, and go-libvirt did not return within %s of the socket being closed: abandoned", cause(ctx), grace)
	}
}

// cause is why ctx ended, wrapping ctx.Err() so that errors.Is(err, context.DeadlineExceeded)
// holds either way.
func cause(ctx context.Context) error {
	err := ctx.Err()
	what := "operation's time ran out"
	if errors.Is(err, context.Canceled) {
		what = "operation was cancelled"
	}
	if c := context.Cause(ctx); c != nil && !errors.Is(c, err) {
		return fmt.Errorf("%s (%v): %w", what, c, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}
