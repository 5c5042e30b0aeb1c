package libvirt

import (
	"encoding/binary"
	"net"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// scriptedConn is a socket whose reads return the chunks given, in order, and whose writes are
// kept.
type scriptedConn struct {
	net.Conn
	reads  [][]byte
	closed bool
}

func (c *scriptedConn) Write(b []byte) (int, error) { return len(b), nil }
func (c *scriptedConn) Read(b []byte) (int, error) {
	chunk := c.reads[0]
	n := copy(b, chunk)
	if n == len(chunk) {
		c.reads = c.reads[1:]
	} else {
		c.reads[0] = chunk[n:]
	}
	return n, nil
}
func (c *scriptedConn) Close() error { c.closed = true; return nil }

// packet is a libvirt RPC packet with a body of bodyLen bytes.
func packet(proc, typ, serial uint32, bodyLen int) []byte {
	p := make([]byte, rpcHeaderLen+bodyLen)
	binary.BigEndian.PutUint32(p[0:], uint32(len(p)))
	binary.BigEndian.PutUint32(p[4:], 0x20008086)
	binary.BigEndian.PutUint32(p[8:], 1)
	binary.BigEndian.PutUint32(p[12:], proc)
	binary.BigEndian.PutUint32(p[16:], typ)
	binary.BigEndian.PutUint32(p[20:], serial)
	for i := rpcHeaderLen; i < len(p); i++ {
		p[i] = 0xff // a body that would read as a header of nonsense if it were taken for one
	}
	return p
}

func resetRPCStats(t *testing.T) {
	t.Helper()
	was := rpcStatsOn.Load()
	rpcStats.Lock()
	rpcStats.s, rpcStats.outstanding = RPCStats{}, 0
	rpcStats.Unlock()
	EnableRPCStats()
	t.Cleanup(func() {
		rpcStatsOn.Store(was)
		rpcStats.Lock()
		rpcStats.s, rpcStats.outstanding = RPCStats{}, 0
		rpcStats.Unlock()
	})
}

// TestMeasuredSocket: calls are matched with their replies by serial across writes and reads
// that cut packets anywhere; events, stream packets and replies to no call are not calls; a call
// whose socket closes stops waiting and is not counted.
func TestMeasuredSocket(t *testing.T) {
	resetRPCStats(t)
	call14 := packet(14, rpcCall, 1, 40)
	call273 := packet(273, rpcCall, 2, 0)
	stream := packet(209, 3, 3, 100)
	call16 := packet(16, rpcCall, 4, 8)
	var replies []byte
	replies = append(replies, packet(273, rpcReply, 2, 5000)...)
	replies = append(replies, packet(0, 2, 0, 64)...) // an event
	replies = append(replies, packet(14, rpcReply, 1, 3)...)
	replies = append(replies, packet(14, rpcReply, 99, 3)...) // a reply to no call of ours

	fake := &scriptedConn{reads: [][]byte{replies[:10], replies[10:5100], replies[5100:]}}
	c := measure(fake)
	if _, ok := c.(*measured); !ok {
		t.Fatalf("measure gave %T, want *measured", c)
	}
	// The first call's header cut in two writes, the second's with the first's body.
	writes := [][]byte{call14[:7], call14[7:30], append(append(call14[30:], call273...), stream...), call16}
	for _, w := range writes {
		if _, err := c.Write(w); err != nil {
			t.Fatal(err)
		}
	}
	buf := make([]byte, 4096)
	for len(fake.reads) > 0 {
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
	}
	if got := rpcStats.outstanding; got != 1 {
		t.Errorf("outstanding after the replies = %d, want 1 (call 16)", got)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	got := RPCStatsNow()
	calls := map[uint32]int64{}
	for proc, p := range got.ByProc {
		calls[proc] = p.Calls
	}
	if diff := cmp.Diff(map[uint32]int64{14: 1, 273: 1}, calls); diff != "" {
		t.Errorf("calls by procedure (-want +got):\n%s", diff)
	}
	if got.Calls != 2 {
		t.Errorf("calls = %d, want 2", got.Calls)
	}
	if rpcStats.outstanding != 0 {
		t.Errorf("outstanding after close = %d, want 0", rpcStats.outstanding)
	}
}

// TestMeasureOff: without EnableRPCStats the socket is returned as it is.
func TestMeasureOff(t *testing.T) {
	was := rpcStatsOn.Load()
	rpcStatsOn.Store(false)
	t.Cleanup(func() { rpcStatsOn.Store(was) })
	fake := &scriptedConn{}
	if got := measure(fake); got != net.Conn(fake) {
		t.Errorf("measure with stats off gave %T, want the socket itself", got)
	}
}
