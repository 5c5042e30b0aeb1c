package libvirt

import (
	"encoding/binary"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// For performance work (make bench-cli -profile): how long this process waited on libvirt. The
// sockets the backend dials are watched, once EnableRPCStats was called, for the libvirt RPC
// packets passing through them: a call (type 0) is timed from when go-libvirt writes it to when
// its reply (type 1, same serial on the same socket) is read. The sum of those times is the
// calls' latency; busy is the wall time during which at least one call of the process was
// waiting, which is what the process's wall time owes to libvirt (calls in flight together
// count once). Off, nothing is wrapped.

var rpcStatsOn atomic.Bool

// EnableRPCStats makes the sockets dialled from now on measured.
func EnableRPCStats() { rpcStatsOn.Store(true) }

// ProcStats are the calls of one remote procedure.
type ProcStats struct {
	Calls int64         `json:"calls"`
	Sum   time.Duration `json:"sum_ns"`
}

// RPCStats are the libvirt calls this process made over the measured sockets.
type RPCStats struct {
	Calls int64         `json:"calls"`
	Sum   time.Duration `json:"sum_ns"`
	Busy  time.Duration `json:"busy_ns"`
	// ByProc is keyed by libvirt's remote procedure number (remote_protocol.x).
	ByProc map[uint32]ProcStats `json:"by_proc"`
}

var rpcStats struct {
	sync.Mutex
	s           RPCStats
	outstanding int
	busySince   time.Time
}

// RPCStatsNow returns the stats so far, with a call still waiting counted as busy up to now.
func RPCStatsNow() RPCStats {
	rpcStats.Lock()
	defer rpcStats.Unlock()
	out := rpcStats.s
	out.ByProc = make(map[uint32]ProcStats, len(rpcStats.s.ByProc))
	for k, v := range rpcStats.s.ByProc {
		out.ByProc[k] = v
	}
	if rpcStats.outstanding > 0 {
		out.Busy += time.Since(rpcStats.busySince)
	}
	return out
}

func rpcCallStarted(at time.Time) {
	rpcStats.Lock()
	defer rpcStats.Unlock()
	if rpcStats.outstanding == 0 {
		rpcStats.busySince = at
	}
	rpcStats.outstanding++
}

// rpcCallEnded records a call that ended at at; answered is false for a call whose socket
// closed under it (it stops waiting, but is not counted).
func rpcCallEnded(proc uint32, started, at time.Time, answered bool) {
	rpcStats.Lock()
	defer rpcStats.Unlock()
	rpcStats.outstanding--
	if rpcStats.outstanding == 0 {
		rpcStats.s.Busy += at.Sub(rpcStats.busySince)
	}
	if !answered {
		return
	}
	d := at.Sub(started)
	rpcStats.s.Calls++
	rpcStats.s.Sum += d
	if rpcStats.s.ByProc == nil {
		rpcStats.s.ByProc = map[uint32]ProcStats{}
	}
	p := rpcStats.s.ByProc[proc]
	p.Calls++
	p.Sum += d
	rpcStats.s.ByProc[proc] = p
}

// measured is a socket whose libvirt calls are timed into rpcStats.
type measured struct {
	net.Conn
	out, in packetScanner

	mu      sync.Mutex
	pending map[uint32]pendingCall // by serial
	closed  bool
}

type pendingCall struct {
	proc  uint32
	start time.Time
}

func measure(c net.Conn) net.Conn {
	if !rpcStatsOn.Load() {
		return c
	}
	return &measured{Conn: c, pending: map[uint32]pendingCall{}}
}

// The header of a libvirt RPC packet: its length (itself included), then program, version,
// procedure, type, serial and status, each 4 bytes big-endian.
const (
	rpcHeaderLen = 28
	rpcCall      = 0
	rpcReply     = 1
)

// packetScanner follows the packets of one direction of a socket across the reads or writes that
// carry them, and hands each packet's header to fn once it is whole.
type packetScanner struct {
	hdr  [rpcHeaderLen]byte
	have int
	skip uint32 // bytes of the current packet's body still to come
}

func (s *packetScanner) feed(b []byte, fn func(h []byte)) {
	for len(b) > 0 {
		if s.skip > 0 {
			n := uint32(len(b))
			if n > s.skip {
				n = s.skip
			}
			b, s.skip = b[n:], s.skip-n
			continue
		}
		n := copy(s.hdr[s.have:], b)
		s.have += n
		b = b[n:]
		if s.have < rpcHeaderLen {
			return
		}
		s.have = 0
		if l := binary.BigEndian.Uint32(s.hdr[0:4]); l > rpcHeaderLen {
			s.skip = l - rpcHeaderLen
		}
		fn(s.hdr[:])
	}
}

func (m *measured) Write(b []byte) (int, error) {
	now := time.Now()
	m.out.feed(b, func(h []byte) {
		if binary.BigEndian.Uint32(h[16:20]) != rpcCall {
			return
		}
		serial := binary.BigEndian.Uint32(h[20:24])
		m.mu.Lock()
		if !m.closed {
			if _, dup := m.pending[serial]; !dup {
				m.pending[serial] = pendingCall{proc: binary.BigEndian.Uint32(h[12:16]), start: now}
				rpcCallStarted(now)
			}
		}
		m.mu.Unlock()
	})
	return m.Conn.Write(b)
}

func (m *measured) Read(b []byte) (int, error) {
	n, err := m.Conn.Read(b)
	if n > 0 {
		now := time.Now()
		m.in.feed(b[:n], func(h []byte) {
			if binary.BigEndian.Uint32(h[16:20]) != rpcReply {
				return
			}
			serial := binary.BigEndian.Uint32(h[20:24])
			m.mu.Lock()
			p, ok := m.pending[serial]
			delete(m.pending, serial)
			m.mu.Unlock()
			if ok {
				rpcCallEnded(p.proc, p.start, now, true)
			}
		})
	}
	return n, err
}

// Close ends the wait of the calls still pending on the socket: they will not be answered.
func (m *measured) Close() error {
	err := m.Conn.Close()
	now := time.Now()
	m.mu.Lock()
	left := m.pending
	m.pending, m.closed = map[uint32]pendingCall{}, true
	m.mu.Unlock()
	for _, p := range left {
		rpcCallEnded(p.proc, p.start, now, false)
	}
	return err
}
