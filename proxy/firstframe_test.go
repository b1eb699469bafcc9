package proxy

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"net"
	"syscall"
	"testing"
	"time"
)

// TestFirstFrameCheckedBeforeDial: what cannot be a Kafka request costs no
// broker connection, and each kind is counted.
func TestFirstFrameCheckedBeforeDial(t *testing.T) {
	prefix := func(n uint32) []byte { return binary.BigEndian.AppendUint32(nil, n) }
	tests := []struct {
		name string
		send []byte
		// want reads the counter the bytes must raise by one.
		want func(Stats) uint64
	}{
		{"http_get", []byte("GET / HTTP/1.1\r\nHost: kproxy\r\n\r\n"), func(s Stats) uint64 { return s.OversizedFrames }},
		{"prefix_2GiB", prefix(1 << 31), func(s Stats) uint64 { return s.OversizedFrames }},
		{"too_short", append(prefix(3), 0, 1, 2), func(s Stats) uint64 { return s.ShortFrames }},
		{"truncated_header", append(prefix(100), 0, 12, 0), func(s Stats) uint64 { return s.TruncatedFrames }},
		{"truncated_prefix", []byte{0, 0}, func(s Stats) uint64 { return s.TruncatedFrames }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := startSink(t)
			p := startProxy(t, fakeConfig(up.addr()), nil)
			c := dial(t, p.Addr().String())
			if _, err := c.Write(tt.send); err != nil {
				t.Fatal(err)
			}
			c.(*net.TCPConn).CloseWrite()
			expectClosed(t, c)
			waitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
			if got := tt.want(p.Stats()); got != 1 {
				t.Errorf("counter %d; want 1 (stats %+v)", got, p.Stats())
			}
			if n := up.accepted.Load(); n != 0 {
				t.Errorf("the broker accepted %d connections; want 0", n)
			}
		})
	}
}

// TestTruncatedRequestCounted: a client closing in the middle of a request
// body is counted once the broker connection exists.
func TestTruncatedRequestCounted(t *testing.T) {
	up := startSink(t)
	p := startProxy(t, fakeConfig(up.addr()), nil)
	c := dial(t, p.Addr().String())
	// A Produce-sized frame (key 3, Metadata, streamed) cut short.
	frame := binary.BigEndian.AppendUint32(nil, 1000)
	frame = append(frame, 0, 3, 0, 1, 0, 0, 0, 7)
	frame = append(frame, make([]byte, 200)...)
	if _, err := c.Write(frame); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, "the broker connection", func() bool { return up.accepted.Load() == 1 })
	c.Close()
	waitFor(t, 5*time.Second, "the truncated frame counted", func() bool { return p.Stats().TruncatedFrames == 1 })
}

// TestDialFailureResets: when the broker cannot be reached, the client's
// connection is reset, which clients retry, rather than closed in order,
// which franz-go reads as ErrFirstReadEOF and does not retry.
func TestDialFailureResets(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := ln.Addr().String()
	ln.Close()
	p := startProxy(t, fakeConfig(dead), nil)
	c := dial(t, p.Addr().String())
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 2)), 18, 1, 10, 0, 0)); err != nil {
		t.Fatal(err)
	}
	c.SetReadDeadline(time.Now().Add(10 * time.Second))
	_, err = c.Read(make([]byte, 1))
	if !errors.Is(err, syscall.ECONNRESET) {
		t.Fatalf("read: %v; want a connection reset", err)
	}
}

// TestBrokerResetMidResponse: a broker that resets its connection in the
// middle of a response frame ends the client's connection (the client sees
// it close, as it would with the broker itself) and the truncated frame is
// counted.
func TestBrokerResetMidResponse(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		frame, err := readTestFrame(c)
		if err != nil {
			c.Close()
			return
		}
		// Half of a 1,000-byte response, then a reset.
		half := append([]byte{0, 0, 3, 0xe8}, frame[8:12]...)
		c.Write(append(half, make([]byte, 400)...))
		time.Sleep(50 * time.Millisecond)
		c.(*net.TCPConn).SetLinger(0)
		c.Close()
	}()
	p := startProxy(t, fakeConfig(ln.Addr().String()), nil)
	c := dial(t, p.Addr().String())
	// A Metadata request: its response is read whole, to be rewritten.
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 2)), 3, 5, 10, 0, 0)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	waitFor(t, 5*time.Second, "the truncated response counted", func() bool { return p.Stats().TruncatedFrames == 1 })
}

// TestCleanCloseNotTruncated: a client closing between frames is not a
// truncated frame.
func TestCleanCloseNotTruncated(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	p := startProxy(t, fakeConfig(broker.addr()), nil)
	for range 3 {
		c := dial(t, p.Addr().String())
		if err := roundTrip(t, c, 1, 10); err != nil {
			t.Fatal(err)
		}
		c.Close()
	}
	c := dial(t, p.Addr().String())
	c.Close() // before any byte
	waitFor(t, 5*time.Second, "the connections to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
	if n := p.Stats().TruncatedFrames; n != 0 {
		t.Errorf("truncated frames %d after clean closes; want 0", n)
	}
}
