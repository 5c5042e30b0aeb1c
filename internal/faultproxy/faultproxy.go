// Package faultproxy is test and chaos support; the provider does not use it. It is a proxy
// that forwards the connections made to its own unix socket (or TCP address) to a target (a
// libvirt daemon's socket, or a TCP address), and breaks them on request the ways a network or
// a stuck daemon does: it stalls a connection (forever, or for a while), cuts it (closes both
// ends), or slows it to a trickle, at a chosen byte of a chosen connection or of whichever
// connection gets there first.
//
// A stalled connection stays open: the client's bytes are held, nothing is answered, and the
// kernel's buffers fill as they would behind a daemon that accepts and never answers. That is
// the fault a caller without a deadline never returns from.
//
// Use:
//
//	p, err := faultproxy.New("unix:/tmp/x.sock", "unix:/var/run/libvirt/libvirt-sock")
//	defer p.Close()
//	// connect through "qemu+unix:///system?socket=" + p.Addr()
//	p.SetFault(faultproxy.Fault{Kind: faultproxy.Stall, Conn: faultproxy.AnyConn, AfterBytes: 1000})
//	ev := <-p.Fired() // the stall took effect on connection ev.Conn at byte ev.At
//	p.Clear()         // forward again
package faultproxy

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"time"
)

// Kind is what a fault does to a connection.
type Kind int

const (
	// None is no fault: SetFault(Fault{}) disarms, as Clear does, but lets stalls in effect run on.
	None Kind = iota
	// Stall stops forwarding in both directions and keeps both ends open: forever when the
	// fault's Duration is 0 (until Clear or Close), else for Duration, after which the
	// connection forwards again.
	Stall
	// Cut closes both ends of the connection.
	Cut
	// Trickle forwards Rate bytes a second in each direction (DefaultRate when Rate is 0):
	// forever when Duration is 0 (until Clear or Close), else for Duration.
	Trickle
)

func (k Kind) String() string {
	switch k {
	case None:
		return "none"
	case Stall:
		return "stall"
	case Cut:
		return "cut"
	case Trickle:
		return "trickle"
	}
	return fmt.Sprintf("Kind(%d)", int(k))
}

// DefaultRate is a trickle's bytes per second when its fault names no Rate.
const DefaultRate = 4

// Which connections a fault hits: a connection number (1 for the first connection the proxy
// accepted, 2 for the next, open or still to come), or one of these.
const (
	// AnyConn hits the first connection, open or new, that forwards AfterBytes bytes after the
	// fault is set; it hits that one connection only.
	AnyConn = 0
	// EveryConn hits every connection, open or new, once each, when it has forwarded
	// AfterBytes bytes after the fault was set (a new connection: since it was accepted).
	EveryConn = -1
)

// Fault says what to do to which connection, and when.
type Fault struct {
	Kind Kind
	// Conn is the connection: a number (1 is the first accepted), AnyConn or EveryConn.
	Conn int
	// AfterBytes is how many bytes the connection forwards (both directions counted together)
	// after the fault is set before the fault takes effect, at exactly that byte: 0 is at the
	// next byte either side sends.
	AfterBytes int64
	// Duration bounds a stall or a trickle (0: until Clear or Close).
	Duration time.Duration
	// Rate is a trickle's bytes per second (0: DefaultRate).
	Rate int
}

// Random is a fault of kind k at a random byte in [0, maxBytes) of whichever connection gets
// there first, lasting d (see Fault.Duration).
func Random(r *rand.Rand, k Kind, maxBytes int64, d time.Duration) Fault {
	at := int64(0)
	if maxBytes > 0 {
		at = r.Int64N(maxBytes)
	}
	return Fault{Kind: k, Conn: AnyConn, AfterBytes: at, Duration: d}
}

// Event is a fault taking effect.
type Event struct {
	Conn int   // the connection's number
	Kind Kind  // what was done
	At   int64 // the connection's bytes forwarded (both directions) when it took effect
}

// Proxy forwards connections from its listener to its target and injects the armed fault.
type Proxy struct {
	ln                    net.Listener
	network, addr         string // the listener's
	targetNet, targetAddr string

	fired chan Event

	mu       sync.Mutex
	armed    *armed
	conns    map[int]*pconn // open connections by number
	accepted int
	// dialFailed counts connections accepted that the proxy closed at once because the target
	// refused it (a daemon's listen backlog full, the daemon gone), with the last error: what
	// a client sees as its connection closed mid-handshake, with no fault armed.
	dialFailed  int
	lastDialErr error
	closed      bool
	wg          sync.WaitGroup
}

// armed is the fault set by SetFault and what it has hit.
type armed struct {
	f    Fault
	base map[int]int64 // each open connection's bytes when the fault was set
	hit  map[int]bool  // connections it took effect on (EveryConn)
}

// pconn is one proxied connection.
type pconn struct {
	id       int
	down, up net.Conn
	bytes    int64 // forwarded, both directions
	once     sync.Once
	gone     chan struct{} // closed when the connection is
	// effect is the stall or trickle in effect on the connection, nil when it forwards freely.
	effect *effect
}

// effect is a stall or trickle in effect; ended is closed when it ends early (Clear, Close).
type effect struct {
	kind  Kind
	until time.Time // zero: until Clear or Close
	rate  int
	ended chan struct{}
}

// New listens on listen and forwards each connection to target. An address is "unix:PATH",
// "tcp:HOST:PORT", a bare path (starting with / or .) for a unix socket, or a bare HOST:PORT
// for TCP ("127.0.0.1:0" takes a free port: Addr says which). A unix socket left at the path
// by an earlier run is removed first.
func New(listen, target string) (*Proxy, error) {
	lnet, laddr := parseAddr(listen)
	tnet, taddr := parseAddr(target)
	if lnet == "unix" {
		if err := os.Remove(laddr); err != nil && !errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("faultproxy: remove the old socket %s: %w", laddr, err)
		}
	}
	ln, err := net.Listen(lnet, laddr)
	if err != nil {
		return nil, fmt.Errorf("faultproxy: listen on %s: %w", listen, err)
	}
	p := &Proxy{
		ln: ln, network: lnet, addr: ln.Addr().String(),
		targetNet: tnet, targetAddr: taddr,
		fired: make(chan Event, 64),
		conns: map[int]*pconn{},
	}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

func parseAddr(s string) (network, addr string) {
	switch {
	case strings.HasPrefix(s, "unix:"):
		return "unix", strings.TrimPrefix(s, "unix:")
	case strings.HasPrefix(s, "tcp:"):
		return "tcp", strings.TrimPrefix(s, "tcp:")
	case strings.HasPrefix(s, "/"), strings.HasPrefix(s, "."):
		return "unix", s
	}
	return "tcp", s
}

// Addr is the address clients connect to: the socket's path, or HOST:PORT.
func (p *Proxy) Addr() string { return p.addr }

// Network is "unix" or "tcp".
func (p *Proxy) Network() string { return p.network }

// Fired tells of each fault taking effect, so that a test can wait for a stall to hold a call
// rather than sleep. It holds the last 64 events not yet received; older ones are dropped.
func (p *Proxy) Fired() <-chan Event { return p.fired }

// Accepted is how many connections the proxy has accepted.
func (p *Proxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// DialFailures is how many accepted connections the proxy closed at once because it could not
// reach the target, and the last such error (nil when none).
func (p *Proxy) DialFailures() (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialFailed, p.lastDialErr
}

// Open is how many proxied connections are open.
func (p *Proxy) Open() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

// SetFault arms f, replacing the fault armed before (one that has not taken effect yet is
// dropped; stalls and trickles in effect run on). Bytes are counted from now on the open
// connections.
func (p *Proxy) SetFault(f Fault) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if f.Kind == None {
		p.armed = nil
		return
	}
	a := &armed{f: f, base: map[int]int64{}, hit: map[int]bool{}}
	for id, c := range p.conns {
		a.base[id] = c.bytes
	}
	p.armed = a
}

// Clear disarms the fault and ends the stalls and trickles in effect: every open connection
// forwards freely again. Cut connections stay closed.
func (p *Proxy) Clear() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.armed = nil
	for _, c := range p.conns {
		if c.effect != nil {
			close(c.effect.ended)
			c.effect = nil
		}
	}
}

// Cut closes connection n now (both ends), stalled or not; false when it is not open.
func (p *Proxy) Cut(n int) bool {
	p.mu.Lock()
	c, ok := p.conns[n]
	p.mu.Unlock()
	if ok {
		c.close()
	}
	return ok
}

// CutAll closes every open connection now, as a daemon that dies does; new ones are accepted.
func (p *Proxy) CutAll() {
	p.mu.Lock()
	conns := make([]*pconn, 0, len(p.conns))
	for _, c := range p.conns {
		conns = append(conns, c)
	}
	p.mu.Unlock()
	for _, c := range conns {
		c.close()
	}
}

// Close stops listening, closes every connection, ends every stall, and waits for the
// proxy's goroutines. A unix socket's file is removed.
func (p *Proxy) Close() error {
	p.mu.Lock()
	if p.closed {
		p.mu.Unlock()
		return nil
	}
	p.closed = true
	p.mu.Unlock()
	err := p.ln.Close()
	p.Clear()
	p.CutAll()
	p.wg.Wait()
	return err
}

func (p *Proxy) serve() {
	defer p.wg.Done()
	for {
		down, err := p.ln.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial(p.targetNet, p.targetAddr)
		if err != nil {
			_ = down.Close()
			p.mu.Lock()
			p.dialFailed++
			p.lastDialErr = err
			p.mu.Unlock()
			continue
		}
		p.mu.Lock()
		if p.closed {
			p.mu.Unlock()
			_ = down.Close()
			_ = up.Close()
			return
		}
		p.accepted++
		c := &pconn{id: p.accepted, down: down, up: up, gone: make(chan struct{})}
		p.conns[c.id] = c
		p.mu.Unlock()
		p.wg.Add(2)
		go p.forward(c, down, up)
		go p.forward(c, up, down)
	}
}

func (c *pconn) close() {
	c.once.Do(func() {
		_ = c.down.Close()
		_ = c.up.Close()
		close(c.gone)
	})
}

// forward copies from to to, one direction of c, with the faults.
func (p *Proxy) forward(c *pconn, from, to net.Conn) {
	defer p.wg.Done()
	defer p.drop(c)
	buf := make([]byte, 32<<10)
	for {
		n, rerr := from.Read(buf)
		for b := buf[:n]; len(b) > 0; {
			k, e, cut := p.step(c, len(b))
			switch {
			case cut:
				c.close()
				return
			case e != nil && e.kind == Stall:
				if !p.hold(c, e) {
					return
				}
				continue
			case e != nil && e.kind == Trickle:
				// One byte, then the rest of its second's share of time.
				if _, err := to.Write(b[:1]); err != nil {
					return
				}
				p.count(c, 1)
				b = b[1:]
				if !p.pause(c, e, time.Second/time.Duration(e.rate)) {
					return
				}
				continue
			}
			if _, err := to.Write(b[:k]); err != nil {
				c.close()
				return
			}
			p.count(c, k)
			b = b[k:]
		}
		if rerr != nil {
			c.close()
			return
		}
	}
}

// drop forgets a connection whose forwarding ended.
func (p *Proxy) drop(c *pconn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	delete(p.conns, c.id)
}

func (p *Proxy) count(c *pconn, k int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	c.bytes += int64(k)
}

// step says what to do with the next n bytes of c: forward k of them freely (e nil, not cut),
// stall or trickle (e), or cut. It fires the armed fault when c reaches its byte.
func (p *Proxy) step(c *pconn, n int) (k int, e *effect, cut bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if e := c.effect; e != nil {
		if e.until.IsZero() || time.Now().Before(e.until) {
			return 0, e, false
		}
		c.effect = nil
	}
	a := p.armed
	if a == nil || !a.applies(c.id) {
		return n, nil, false
	}
	left := a.f.AfterBytes - (c.bytes - a.base[c.id])
	if left > 0 {
		return int(min(int64(n), left)), nil, false
	}
	// c is at the fault's byte.
	if a.f.Conn == EveryConn {
		a.hit[c.id] = true
	} else {
		p.armed = nil
	}
	p.emit(Event{Conn: c.id, Kind: a.f.Kind, At: c.bytes})
	if a.f.Kind == Cut {
		return 0, nil, true
	}
	e = &effect{kind: a.f.Kind, rate: a.f.Rate, ended: make(chan struct{})}
	if e.rate <= 0 {
		e.rate = DefaultRate
	}
	if a.f.Duration > 0 {
		e.until = time.Now().Add(a.f.Duration)
	}
	c.effect = e
	return 0, e, false
}

func (a *armed) applies(id int) bool {
	switch a.f.Conn {
	case AnyConn:
		return true
	case EveryConn:
		return !a.hit[id]
	}
	return a.f.Conn == id
}

func (p *Proxy) emit(ev Event) {
	select {
	case p.fired <- ev:
	default:
	}
}

// hold waits out a stall: until its time passes or it is ended. It says false when the
// connection was closed meanwhile (Close, CutAll), so its forwarding should stop.
func (p *Proxy) hold(c *pconn, e *effect) bool {
	var expired <-chan time.Time
	if !e.until.IsZero() {
		t := time.NewTimer(time.Until(e.until))
		defer t.Stop()
		expired = t.C
	}
	select {
	case <-e.ended:
	case <-expired:
	case <-c.gone:
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}

// pause waits d, or less when the trickle is ended; false when the connection or the proxy
// closed.
func (p *Proxy) pause(c *pconn, e *effect, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-e.ended:
	case <-t.C:
	case <-c.gone:
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return !p.closed
}
