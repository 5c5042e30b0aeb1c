package reconcile

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// A plan, a refresh or a data source read must not wait on one host for ever: a daemon (or a
// proxy in front of it) that accepts a connection and never answers stalled every plan (issue
// 43). Those readings carry a host bound in their context (WithHostBound, from the provider's
// host_timeout): each host's reading runs under context.WithTimeout of it, and a host that did
// not answer in time is a host that is down, with a *HostTimeoutError as the reason. An apply
// carries none: its calls run under the resource's own timeouts, and a slow host there is waited
// for rather than planned around.

type hostBoundKey struct{}

// WithHostBound gives ctx the time each host has to answer a reading made under it. Zero or less
// gives none: the reading then waits as long as ctx lets it.
func WithHostBound(ctx context.Context, bound time.Duration) context.Context {
	return context.WithValue(ctx, hostBoundKey{}, bound)
}

// HostBound is the bound WithHostBound gave ctx; zero when none.
func HostBound(ctx context.Context) time.Duration {
	d, _ := ctx.Value(hostBoundKey{}).(time.Duration)
	return max(d, 0)
}

// HostContext is ctx for one reading of host h: under ctx's host bound when it has one. The
// caller calls cancel when the reading is over, and turns the reading's error into the host's
// (HostErr).
func HostContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if bound := HostBound(ctx); bound > 0 {
		return context.WithTimeout(ctx, bound)
	}
	return context.WithCancel(ctx)
}

// HostErr is the error of a reading of host h made under hctx, a HostContext of ctx: a
// *HostTimeoutError when the host bound ran out while ctx itself did not end, else err as it is.
func HostErr(ctx, hctx context.Context, h string, err error) error {
	if err == nil || ctx.Err() != nil || !errors.Is(hctx.Err(), context.DeadlineExceeded) {
		return err
	}
	return &HostTimeoutError{Host: h, Bound: HostBound(ctx), Err: err}
}

// HostTimeoutError is a host that did not answer a reading within the host bound: it is UNKNOWN,
// as a host that is down.
type HostTimeoutError struct {
	Host  string
	Bound time.Duration
	// Err is what the reading returned when it was cut off; nil when it was abandoned.
	Err error
}

func (e *HostTimeoutError) Error() string {
	return fmt.Sprintf("host %s did not answer within %s (the provider's host_timeout)", e.Host, e.Bound)
}

// Unwrap is context.DeadlineExceeded: the reading ran out of time.
func (e *HostTimeoutError) Unwrap() error { return context.DeadlineExceeded }

// readHost runs read, one reading of host h, under a HostContext of ctx, and returns its error
// as HostErr does. When the bound runs out and read has not returned, the reading is abandoned:
// the backend is asked to cut its call through the context, and a call that does not return
// even then (a connection whose handshake never ends) must not hold the plan. read must then
// write nothing its caller reads: it returns its results through its own variables, which the
// caller reads only when readHost returns nil.
func readHost(ctx context.Context, h string, read func(ctx context.Context) error) error {
	if HostBound(ctx) <= 0 {
		return read(ctx)
	}
	hctx, cancel := HostContext(ctx)
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- read(hctx)
	}()
	select {
	case err := <-done:
		return HostErr(ctx, hctx, h, err)
	case <-hctx.Done():
	}
	select {
	case err := <-done:
		// The reading ended as its time did.
		return HostErr(ctx, hctx, h, err)
	default:
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	return &HostTimeoutError{Host: h, Bound: HostBound(ctx)}
}
