package faultproxy

import (
	"bytes"
	"errors"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// safety bounds a wait that only a broken proxy makes long; no assertion depends on it.
const safety = 30 * time.Second

// sink is a target server that keeps what each connection sent, in accept order.
type sink struct {
	ln   net.Listener
	mu   sync.Mutex
	cond *sync.Cond
	got  []*bytes.Buffer
	eof  []bool
}

func startSink(t *testing.T, network, addr string) *sink {
	t.Helper()
	ln, err := net.Listen(network, addr)
	if err != nil {
		t.Fatal(err)
	}
	s := &sink{ln: ln}
	s.cond = sync.NewCond(&s.mu)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			i := len(s.got)
			s.got = append(s.got, &bytes.Buffer{})
			s.eof = append(s.eof, false)
			s.cond.Broadcast()
			s.mu.Unlock()
			go s.read(i, c)
		}
	}()
	t.Cleanup(func() { _ = ln.Close() })
	return s
}

func (s *sink) read(i int, c net.Conn) {
	defer c.Close()
	buf := make([]byte, 1024)
	for {
		n, err := c.Read(buf)
		s.mu.Lock()
		s.got[i].Write(buf[:n])
		if err != nil {
			s.eof[i] = true
		}
		s.cond.Broadcast()
		s.mu.Unlock()
		if err != nil {
			return
		}
	}
}

// wait blocks until connection i has n bytes, or has ended (end).
func (s *sink) wait(i int, n int, end bool) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	for len(s.got) <= i || (!end && s.got[i].Len() < n && !s.eof[i]) || (end && !s.eof[i]) {
		s.cond.Wait()
	}
	return bytes.Clone(s.got[i].Bytes())
}

func shortDir(t *testing.T) string {
	t.Helper()
	// A unix socket path must fit in about 100 bytes, which t.TempDir's may not.
	dir, err := os.MkdirTemp("", "fp") //nolint:usetesting // t.TempDir's path is too long for a socket
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	return dir
}

func TestProxy(t *testing.T) {
	t.Parallel()
	const size = 100
	payload := make([]byte, size)
	for i := range payload {
		payload[i] = byte(i)
	}
	type then int
	const (
		nothing  then = iota
		cutAll        // after the events and the free connections' bytes: cut everything
		cutHit        // after the events and the free connections' bytes: cut the connections hit
		clearAll      // after the events: Clear, and wait for every byte
	)
	cases := map[string]struct {
		tcp   bool
		fault Fault
		conns int
		then  then
		// fires are the connections the fault takes effect on, by number.
		fires []int
		// want is what the target has of each connection when it ends.
		want []int
	}{
		"no fault": {
			conns: 2, then: cutAll, want: []int{size, size},
		},
		"stall forever at byte 40 of connection 2": {
			fault: Fault{Kind: Stall, Conn: 2, AfterBytes: 40}, conns: 3, then: cutAll,
			fires: []int{2}, want: []int{size, 40, size},
		},
		"stall forever at byte 40 of connection 1, then cut it": {
			fault: Fault{Kind: Stall, Conn: 1, AfterBytes: 40}, conns: 2, then: cutHit,
			fires: []int{1}, want: []int{40, size},
		},
		"stall forever, then cleared": {
			fault: Fault{Kind: Stall, Conn: 1, AfterBytes: 40}, conns: 1, then: clearAll,
			fires: []int{1}, want: []int{size},
		},
		"stall at the first byte of every connection": {
			fault: Fault{Kind: Stall, Conn: EveryConn}, conns: 2, then: cutAll,
			fires: []int{1, 2}, want: []int{0, 0},
		},
		"stall for a while, then forward again": {
			fault: Fault{Kind: Stall, Conn: 1, AfterBytes: 10, Duration: 50 * time.Millisecond}, conns: 1, then: nothing,
			fires: []int{1}, want: []int{size},
		},
		"cut at byte 60": {
			fault: Fault{Kind: Cut, Conn: 1, AfterBytes: 60}, conns: 1, then: nothing,
			fires: []int{1}, want: []int{60},
		},
		"cut any connection at byte 0": {
			fault: Fault{Kind: Cut, Conn: AnyConn}, conns: 1, then: nothing,
			fires: []int{1}, want: []int{0},
		},
		"trickle": {
			fault: Fault{Kind: Trickle, Conn: 1, AfterBytes: 90, Rate: 1000}, conns: 1, then: cutAll,
			fires: []int{1}, want: []int{size},
		},
		"tcp, stall forever at byte 30": {
			tcp:   true,
			fault: Fault{Kind: Stall, Conn: 1, AfterBytes: 30}, conns: 1, then: cutAll,
			fires: []int{1}, want: []int{30},
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var s *sink
			var p *Proxy
			var err error
			if c.tcp {
				s = startSink(t, "tcp", "127.0.0.1:0")
				p, err = New("127.0.0.1:0", "tcp:"+s.ln.Addr().String())
			} else {
				dir := shortDir(t)
				s = startSink(t, "unix", filepath.Join(dir, "target"))
				p, err = New("unix:"+filepath.Join(dir, "proxy"), filepath.Join(dir, "target"))
			}
			if err != nil {
				t.Fatal(err)
			}
			defer p.Close()
			clients := make([]net.Conn, c.conns)
			for i := range clients {
				clients[i], err = net.Dial(p.Network(), p.Addr())
				if err != nil {
					t.Fatal(err)
				}
				defer clients[i].Close() //nolint:gocritic // a few connections, closed when the case ends
				// The proxy numbers connections as it accepts them: let it take this one
				// before the next is made, so that the numbers follow i.
				s.wait(i, 0, false)
			}
			p.SetFault(c.fault)
			for _, cl := range clients {
				if _, err := cl.Write(payload); err != nil {
					t.Fatal(err)
				}
			}
			var fired []int
			for range c.fires {
				select {
				case ev := <-p.Fired():
					if ev.Kind != c.fault.Kind || ev.At != c.fault.AfterBytes {
						t.Errorf("event %+v, want kind %v at byte %d", ev, c.fault.Kind, c.fault.AfterBytes)
					}
					fired = append(fired, ev.Conn)
				case <-time.After(safety):
					t.Fatalf("no fault took effect; fired so far %v", fired)
				}
			}
			sort.Ints(fired)
			if diff := cmp.Diff(c.fires, fired); diff != "" {
				t.Errorf("connections hit (-want +got):\n%s", diff)
			}
			switch c.then {
			case cutAll:
				for i, n := range c.want {
					if n == size {
						s.wait(i, size, false)
					}
				}
				p.CutAll()
			case cutHit:
				for i, n := range c.want {
					if n == size {
						s.wait(i, size, false)
					}
				}
				for _, n := range fired {
					if !p.Cut(n) {
						t.Errorf("Cut(%d): not open", n)
					}
				}
			case clearAll:
				p.Clear()
			case nothing:
			}
			var got []int
			for i, cl := range clients {
				if c.then != cutAll && c.fault.Kind != Cut && (c.then != cutHit || !slices.Contains(c.fires, i+1)) {
					s.wait(i, size, false)
					_ = cl.Close()
				}
				b := s.wait(i, 0, true)
				if !bytes.Equal(b, payload[:len(b)]) {
					t.Errorf("connection %d: the target got bytes that were not sent in order", i+1)
				}
				got = append(got, len(b))
			}
			if diff := cmp.Diff(c.want, got); diff != "" {
				t.Errorf("bytes the target got per connection (-want +got):\n%s", diff)
			}
			if c.fault.Kind == Cut {
				// The client's end is closed too.
				_ = clients[0].SetReadDeadline(time.Now().Add(safety))
				if _, err := clients[0].Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
					t.Errorf("read on the cut connection: %v, want EOF", err)
				}
			}
		})
	}
}

// TestCloseEndsStalls: Close returns with a stalled connection open (it ends the stall), and
// removes the unix socket.
func TestCloseEndsStalls(t *testing.T) {
	t.Parallel()
	dir := shortDir(t)
	s := startSink(t, "unix", filepath.Join(dir, "target"))
	p, err := New(filepath.Join(dir, "proxy"), filepath.Join(dir, "target"))
	if err != nil {
		t.Fatal(err)
	}
	p.SetFault(Fault{Kind: Stall, Conn: AnyConn})
	c, err := net.Dial("unix", p.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	<-p.Fired()
	if err := p.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if got := s.wait(0, 0, true); len(got) != 0 {
		t.Errorf("the target got %q through a stall", got)
	}
	if _, err := os.Stat(p.Addr()); !os.IsNotExist(err) {
		t.Errorf("the socket is still there: %v", err)
	}
	if got := p.Accepted(); got != 1 {
		t.Errorf("accepted %d connections, want 1", got)
	}
}

func TestRandom(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for range 100 {
		f := Random(r, Cut, 1000, 0)
		if f.AfterBytes < 0 || f.AfterBytes >= 1000 || f.Conn != AnyConn || f.Kind != Cut {
			t.Fatalf("Random gave %+v", f)
		}
	}
}
