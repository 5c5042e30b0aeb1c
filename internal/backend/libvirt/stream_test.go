package libvirt

import (
	"context"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// errAfter gives its data, then fails with err.
type errAfter struct {
	data string
	err  error
}

func (r *errAfter) Read(p []byte) (int, error) {
	if r.data == "" {
		return 0, r.err
	}
	n := copy(p, r.data)
	r.data = r.data[n:]
	return n, nil
}

// TestSource reads a source as go-libvirt's sender does (chunks until io.EOF, any other error
// ends it too) and checks it gives want bytes and then io.EOF, never an error, keeping why it
// ended early.
func TestSource(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		r         io.Reader
		want      uint64
		cancelled bool
		sent      string
		err       string // the kept error; "" for none
	}{
		"all of it":             {r: strings.NewReader("0123456789"), want: 10, sent: "0123456789"},
		"no more than want":     {r: strings.NewReader("0123456789"), want: 4, sent: "0123"},
		"nothing to send":       {r: strings.NewReader("0123"), want: 0},
		"ends short":            {r: strings.NewReader("0123"), want: 10, sent: "0123", err: "the content ended after 4 of its 10 bytes"},
		"fails":                 {r: &errAfter{data: "012", err: errors.New("gone")}, want: 10, sent: "012", err: "reading the content failed after 3 of its 10 bytes: gone"},
		"its context has ended": {r: strings.NewReader("0123456789"), want: 10, cancelled: true, err: "stopped after 0 of its 10 bytes: context canceled"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			s := &source{ctx: ctx, r: tc.r, want: tc.want}
			var sent strings.Builder
			buf := make([]byte, 3)
			for i := 0; ; i++ {
				n, err := s.Read(buf)
				sent.Write(buf[:n])
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatalf("read %d: %v; a source never fails go-libvirt", i, err)
				}
				if i > 100 {
					t.Fatal("the source never ends")
				}
			}
			if n, err := s.Read(buf); n != 0 || !errors.Is(err, io.EOF) {
				t.Errorf("a read after the end: %d, %v; want 0, io.EOF", n, err)
			}
			got := ""
			if s.err != nil {
				got = s.err.Error()
			}
			if diff := cmp.Diff(tc.sent, sent.String()); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if got != tc.err {
				t.Errorf("kept error %q; want %q", got, tc.err)
			}
		})
	}
}

// failAfter takes n bytes, then fails every write.
type failAfter struct {
	got strings.Builder
	n   int
}

func (w *failAfter) Write(p []byte) (int, error) {
	if w.got.Len()+len(p) > w.n {
		k := w.n - w.got.Len()
		w.got.Write(p[:k])
		return k, errors.New("gone")
	}
	return w.got.Write(p)
}

// TestSink writes to a sink as go-libvirt's stream does: every write is taken whole, the first
// failure of the writer is kept, cuts the connection once, and what comes after is discarded;
// what comes after the stream was abandoned is discarded too, and not counted.
func TestSink(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		n       int
		written string
		count   uint64
		cuts    int
		err     string
		// abandonAfter shuts the stream's gate after that many writes (0: never).
		abandonAfter int
	}{
		"a writer that takes all": {n: 100, written: "abcdefghi", count: 9},
		"a writer that fails":     {n: 4, written: "abcd", count: 4, cuts: 1, err: "gone"},
		"a writer that fails at once": {
			n: 0, count: 0, cuts: 1, err: "gone",
		},
		"abandoned after a write": {n: 100, written: "abc", count: 3, abandonAfter: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			w := &failAfter{n: tc.n}
			cuts := 0
			gate := &callGate{}
			s := &sink{w: w, cut: func() { cuts++ }, gate: gate}
			for i, chunk := range []string{"abc", "def", "ghi"} {
				if tc.abandonAfter > 0 && i == tc.abandonAfter {
					gate.abandon()
				}
				if n, err := s.Write([]byte(chunk)); n != len(chunk) || err != nil {
					t.Fatalf("write %q: %d, %v; a sink takes every write whole", chunk, n, err)
				}
			}
			got := ""
			if s.err != nil {
				got = s.err.Error()
			}
			if w.got.String() != tc.written || s.n.Load() != tc.count || cuts != tc.cuts || got != tc.err {
				t.Errorf("wrote %q, counted %d, cut %d times, kept %q; want %q, %d, %d, %q", w.got.String(), s.n.Load(), cuts, got, tc.written, tc.count, tc.cuts, tc.err)
			}
		})
	}
}
