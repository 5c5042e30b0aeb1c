package libvirt

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"
)

// Volume streams (StorageVolDownload, StorageVolUpload) need care that other calls do not.
//
// A stream cannot run twice: bytes already written to the caller's writer, or read from its
// reader, cannot be taken back. So a stream runs once, through stream below, not through do,
// which runs its function again after a reconnect.
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
//     streamGrace, the call's goroutines are abandoned.

// streamGrace is how long a stream whose context ended may take to end by itself (an upload)
// before its socket is closed, and then to return before it is abandoned: a call whose socket
// is closed returns at once unless go-libvirt hangs (see above).
const streamGrace = 10 * time.Second

// stream runs fn, one stream call, once, on the current connection, and cuts it off when ctx
// ends (as within does). With endsItself (an upload, whose source ends the stream when ctx
// ends), the cut waits streamGrace for the stream to end by itself, and its error is fn's.
// The connection must have answered a call of the same method just before (do reconnects a lost
// one there), which is why a stream is never the first call of a method.
func (b *Backend) stream(ctx context.Context, op, object string, endsItself bool, fn func(c conn, cut func()) error) error {
	if err := ctx.Err(); err != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: err}
	}
	l, sock := b.current()
	if l == nil {
		return &lostError{op: op, object: object, uri: b.uri, cause: errors.New("no connection"), next: errClosed}
	}
	cut := func() {}
	if sock != nil {
		cut = sock.cut
	}
	done := make(chan error, 1)
	go func() { done <- fn(conn{l: l, uri: b.uri}, cut) }()
	var err error
	select {
	case err = <-done:
	case <-ctx.Done():
		if endsItself {
			t := time.NewTimer(streamGrace)
			select {
			case err = <-done:
				t.Stop()
				return err
			case <-t.C:
			}
		}
		cut()
		t := time.NewTimer(streamGrace)
		defer t.Stop()
		select {
		case err = <-done:
		case <-t.C:
			return fmt.Errorf("%w; go-libvirt did not return from the stream within %s of its connection being closed, and the call was abandoned",
				&cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), call: errors.New("abandoned")}, streamGrace)
		}
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), call: err}
	}
	if err != nil && ctx.Err() != nil {
		return &cutError{op: op, object: object, uri: b.uri, ctxErr: ctx.Err(), call: err}
	}
	return err
}

// streamLost says that a stream failed because its connection did, which cannot be retried: the
// next call reconnects.
func streamLost(op, object, uri string, done uint64, err error) error {
	return fmt.Errorf("%s %s on %s: connection to libvirt lost after %d bytes of the stream (%s); a stream cannot be resumed, the next call reconnects", op, object, uri, done, describeLoss(op, err))
}

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
// now, and discards what still comes.
type sink struct {
	w   io.Writer
	n   uint64
	err error
	cut func()
}

func (s *sink) Write(p []byte) (int, error) {
	if s.err != nil {
		// The writer failed: what still comes is discarded, and the error is kept for the
		// caller; returning it to go-libvirt would hang its connection.
		return len(p), nil //nolint:nilerr // see above
	}
	k, err := s.w.Write(p)
	s.n += uint64(k)
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
