package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync/atomic"
	"time"

	"github.com/hashicorp/terraform-plugin-log/tflog"
)

// Volume streams (StorageVolDownload, StorageVolUpload) need care that other calls do not.
//
// A stream cannot run twice: bytes already written to the caller's writer, or read from its
// reader, cannot be taken back. So a stream runs once, through stream below, not through do,
// which runs its function again after a reconnect.
//
// A stream runs on a connection of its own, opened for it and closed after it: go-libvirt can
// hang in a stream (below) holding the lock every call on its connection takes to register, so
// a stream that shared the Backend's connection could hang the calls that clean up after it
// (issue 43: an apply hung 30 minutes on a StatVolume behind an abandoned download).
//
// go-libvirt (as of bae19ce5cb72, and its master) has two ways of hanging in a stream:
//   - a download whose writer returns an error stops reading the call's responses, while
//     go-libvirt's reader goroutine holds the connection's callback lock waiting to hand it the
//     next packet, which the deregistration of the call needs: the whole connection hangs. So
//     sink never returns an error to go-libvirt: it keeps the first error, discards the rest of
//     the stream, and closes the socket so that the stream ends at once.
//   - an upload whose reader returns an error, or whose daemon answers with an error while the
//     sender goroutine is not at the top of its loop (it failed to send, or sent the end of the
//     stream), leaves the call waiting to tell that goroutine to abort while the goroutine waits
//     to report its result: both hang. So source never returns an error to go-libvirt either: it
//     ends the stream early (io.EOF), keeps its error, and UploadVolume fails with it and deletes
//     the volume. The daemon accepts a short upload. For the same reason a cancelled upload is
//     not cut off at once: closing the socket under it hangs it that way (measured: every time).
//     Its source ends the stream at its next read instead, and the socket is closed only if the
//     stream has not ended streamGrace later; then, as when a cut stream does not return within
//     streamGrace, the call's goroutines are abandoned with the stream's connection. streamGrace
//     is the Backend's grace (abandonGrace): a call whose socket is closed returns at once
//     unless go-libvirt hangs.

// stream runs fn, one stream call, once, on a connection of its own, and cuts it off when ctx
// ends (a context without a deadline gets defaultCallBound). With endsItself (an upload, whose
// source ends the stream when ctx ends), the cut waits streamGrace for the stream to end by
// itself, and its error is fn's. fn's cut closes the stream's connection. The connection is
// closed when the stream returns, and abandoned with it when it does not.
func (b *Backend) stream(ctx context.Context, op, object string, endsItself bool, fn func(c conn, cut func()) error) error {
	ctx, cancel := bounded(ctx)
	defer cancel()
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: err, why: cause(ctx)}
	}
	k, err := b.own(ctx, op, object)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	gate := &callGate{} // see within
	go func() { done <- fn(conn{l: k.l, uri: b.uri, gate: gate}, k.sock.cut) }()
	select {
	case err = <-done:
		k.close()
		if err != nil && ctx.Err() != nil {
			return b.cutOff(ctx, op, object, err)
		}
		return err
	case <-ctx.Done():
	}
	if endsItself {
		t := time.NewTimer(b.grace)
		select {
		case err = <-done:
			t.Stop()
			k.close()
			return err
		case <-t.C:
		}
	}
	tflog.SubsystemWarn(ctx, Subsystem, "cutting off a libvirt stream that outlived its context, with its connection",
		map[string]any{"uri": b.uri, "operation": op, "object": object, "reason": cause(ctx).Error()})
	k.retire()
	t := time.NewTimer(b.grace)
	defer t.Stop()
	select {
	case err = <-done:
		return b.cutOff(ctx, op, object, err)
	case <-t.C:
	}
	gate.abandon()
	tflog.SubsystemError(ctx, Subsystem, "abandoned a libvirt call and its connection",
		map[string]any{"uri": b.uri, "operation": op, "object": object, "grace_seconds": b.grace.Seconds(), "stream": true})
	return b.cutOff(ctx, op, object, errAbandoned)
}

// own opens a connection for one stream or migration, bounded by ctx.
func (b *Backend) own(ctx context.Context, op, object string) (*link, error) {
	b.mu.RLock()
	closed := b.closed
	b.mu.RUnlock()
	if closed {
		return nil, &lostError{op: op, object: object, uri: b.uri, cause: errors.New("no connection"), next: errClosed}
	}
	k, err := openWithin(ctx, b.u, b.grace)
	if err != nil {
		if ctx.Err() != nil {
			return nil, b.cutOff(ctx, op, object, err)
		}
		what := op
		if object != "" {
			what += " " + object
		}
		return nil, fmt.Errorf("%s on %s: opening a connection of its own: %w", what, b.uri, b.connectError(err))
	}
	return k, nil
}

// streamLost says that a stream failed because its connection did, which cannot be retried: the
// next call reconnects.
func streamLost(op, object, uri string, done uint64, err error) error {
	return &streamLostError{op: op, object: object, uri: uri, done: done, err: err}
}

// streamLostError is a stream whose connection failed under it.
type streamLostError struct {
	op, object, uri string
	done            uint64
	err             error
}

func (e *streamLostError) Error() string {
	return fmt.Sprintf("%s %s on %s: the stream's connection to libvirt was lost after %d bytes (%s); a stream cannot be resumed", e.op, e.object, e.uri, e.done, describeLoss(e.op, e.err))
}

func (e *streamLostError) Unwrap() error { return e.err }

// failedStream is the error of a stream call that did not end with the daemon's answer:
// lost when the connection failed, else libvirt's own error wrapped.
func failedStream(c conn, op, object string, done uint64, err error) error {
	if connectionLost(err, c.l.IsConnected()) {
		return streamLost(op, object, c.uri, done, err)
	}
	return wrap(op, object, err)
}

// sink is a download's writer: it counts what it wrote to w, and never fails go-libvirt (see
// above): after w's first error it keeps the error, cuts the connection so that the stream ends
// now, and discards what still comes. Once the stream is abandoned (its gate shut) it discards
// too: w is the caller's, who has gone on without this stream (a copy made again writes to a
// writer of its own), and the count it reads of what was written must not change under it.
type sink struct {
	w    io.Writer
	n    atomic.Uint64
	err  error
	cut  func()
	gate *callGate
}

func (s *sink) Write(p []byte) (int, error) {
	if s.err != nil || s.gate.isShut() {
		// The writer failed, or the stream was abandoned: what still comes is discarded, and
		// the error is kept for the caller; returning it to go-libvirt would hang its
		// connection.
		return len(p), nil //nolint:nilerr // see above
	}
	k, err := s.w.Write(p)
	s.n.Add(uint64(k))
	if err == nil && k < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		s.err = err
		s.cut()
	}
	return len(p), nil
}

// source is an upload's reader: it gives go-libvirt want bytes of r and then io.EOF, and never
// an error (see above): when r fails, ends early or ctx ends, it keeps why and ends the stream.
type source struct {
	ctx  context.Context
	r    io.Reader
	n    uint64
	want uint64
	err  error
}

func (s *source) Read(p []byte) (int, error) {
	if s.err != nil || s.n >= s.want {
		return 0, io.EOF
	}
	if err := s.ctx.Err(); err != nil {
		s.err = fmt.Errorf("stopped after %d of its %d bytes: %w", s.n, s.want, err)
		return 0, io.EOF
	}
	if rest := s.want - s.n; uint64(len(p)) > rest {
		p = p[:rest]
	}
	k, err := s.r.Read(p)
	s.n += uint64(k)
	switch {
	case err == io.EOF && s.n < s.want:
		s.err = fmt.Errorf("the content ended after %d of its %d bytes", s.n, s.want)
	case err != nil && err != io.EOF:
		s.err = fmt.Errorf("reading the content failed after %d of its %d bytes: %w", s.n, s.want, err)
	case s.n < s.want:
		return k, nil
	}
	return k, io.EOF
}
