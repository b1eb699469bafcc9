package proxy

import (
	"encoding/binary"
	"net"
	"sync/atomic"
	"testing"
)

// sink is an upstream that accepts connections and reads everything sent to
// it without holding it: the attacks of attack_test.go must cost kproxy,
// not the test.
type sink struct {
	ln       net.Listener
	accepted atomic.Int64
	read     atomic.Int64
}

func startSink(t testing.TB) *sink {
	t.Helper()
	s := &sink{}
	s.ln = serveFake(t, func(c net.Conn) {
		s.accepted.Add(1)
		buf := make([]byte, 32<<10)
		for {
			n, err := c.Read(buf)
			s.read.Add(int64(n))
			if err != nil {
				return
			}
		}
	})
	return s
}

func (s *sink) addr() string { return s.ln.Addr().String() }

// joinGroupHead is the start of a JoinGroup v5 request declaring size
// bytes after its prefix: the header of the attack.
func joinGroupHead(size uint32) []byte {
	b := binary.BigEndian.AppendUint32(nil, size)
	return append(b, 0x00, 0x0b, 0x00, 0x05, 0x00, 0x00, 0x00, 0x01)
}
