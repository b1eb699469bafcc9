package proxy

import (
	"bufio"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"runtime"
	"testing"
	"time"

	"go.uber.org/zap"
)

// tcpPair returns both ends of a loopback TCP connection.
func tcpPair(tb testing.TB) (*net.TCPConn, *net.TCPConn) {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, _ := ln.Accept()
		accepted <- c
	}()
	a, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		tb.Fatal(err)
	}
	b := <-accepted
	if b == nil {
		tb.Fatal("accept failed")
	}
	tb.Cleanup(func() { a.Close(); b.Close() })
	return a.(*net.TCPConn), b.(*net.TCPConn)
}

// BenchmarkPump moves frames from one TCP connection to another the ways a
// pump can: read whole then write ("buffered", what kproxy does only for
// frames of interest), through a pooled buffer (what kproxy does for frames
// it streams), and with splice(2). A feeder writes the
// frames and a drainer discards them on goroutines of their own.
func BenchmarkPump(b *testing.B) {
	for _, size := range []int{1 << 10, 16 << 10, 64 << 10, 256 << 10, 1 << 20, 8 << 20} {
		for _, mode := range []string{"buffered", "pooled", "splice"} {
			b.Run(fmt.Sprintf("%s/%dKiB", mode, size>>10), func(b *testing.B) {
				benchPump(b, size, mode)
			})
		}
	}
}

func benchPump(b *testing.B, size int, mode string) {
	frame := make([]byte, 4+size)
	binary.BigEndian.PutUint32(frame, uint32(size))
	fillRandom(rand.New(rand.NewPCG(1, 1)), frame[4:])
	benchForward(b, frame, func(dst, src *net.TCPConn, br *bufio.Reader, prefix [4]byte, sz int32) error {
		if mode == "buffered" {
			f, err := readFrame(br, prefix, sz)
			if err == nil {
				_, err = dst.Write(f)
			}
			return err
		}
		m := map[string]copyMode{"pooled": copyPooled, "splice": copySplice}[mode]
		_, err := streamFrame(dst, br, src, prefix, nil, int(sz), m)
		return err
	})
}

// benchForward measures forward moving b.N copies of frame from one TCP
// connection to another: a feeder writes the frames and a drainer discards
// them on goroutines of their own.
func benchForward(b *testing.B, frame []byte, forward func(dst, src *net.TCPConn, br *bufio.Reader, prefix [4]byte, size int32) error) {
	feedW, feedR := tcpPair(b)
	outW, outR := tcpPair(b)
	n := b.N
	go func() {
		for range n {
			if _, err := feedW.Write(frame); err != nil {
				return
			}
		}
	}()
	drained := make(chan int64, 1)
	go func() {
		m, _ := io.CopyN(io.Discard, outR, int64(n)*int64(len(frame)))
		drained <- m
	}()

	br := bufio.NewReaderSize(feedR, readBufSize)
	b.SetBytes(int64(len(frame)))
	b.ReportAllocs()
	b.ResetTimer()
	for range n {
		prefix, sz, err := frameSize(br)
		if err == nil {
			err = forward(outW, feedR, br, prefix, sz)
		}
		if err != nil {
			b.Fatal(err)
		}
	}
	if got := <-drained; got != int64(n)*int64(len(frame)) {
		b.Fatalf("drained %d bytes; want %d", got, int64(n)*int64(len(frame)))
	}
}

// BenchmarkRoundTrip measures one small request and its response, one at a
// time, straight to a fake broker and through kproxy.
func BenchmarkRoundTrip(b *testing.B) {
	broker := startFakeBroker(b, "127.0.0.1:0")
	p := startProxy(b, fakeConfig(broker.addr()), zap.NewNop())
	for _, tc := range []struct{ name, addr string }{
		{"direct", broker.addr()},
		{"proxied", p.Addr().String()},
	} {
		for _, size := range []int{100, 64 << 10} {
			b.Run(fmt.Sprintf("%s/%dB", tc.name, size), func(b *testing.B) {
				c := dial(b, tc.addr)
				req := testRequest(rand.New(rand.NewPCG(1, 1)), 1, 0, int32(size), 0, size)
				resp := make([]byte, 8+size)
				b.SetBytes(int64(len(req) + len(resp)))
				b.ReportAllocs()
				b.ResetTimer()
				for i := range b.N {
					binary.BigEndian.PutUint32(req[8:], uint32(i))
					if _, err := c.Write(req); err != nil {
						b.Fatal(err)
					}
					if _, err := io.ReadFull(c, resp); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// BenchmarkIdleConnMemory reports the heap and stack kproxy holds per idle
// connection (client side, broker side, both pumps), after one round trip
// each: the memory of the same number of direct connections to the fake
// broker is subtracted, which leaves only kproxy's share.
func BenchmarkIdleConnMemory(b *testing.B) {
	const conns = 500
	broker := startFakeBroker(b, "127.0.0.1:0")
	p := startProxy(b, fakeConfig(broker.addr()), zap.NewNop())
	open := func(addr string) uint64 {
		before := memInUse()
		var cs []net.Conn
		for i := range conns {
			c, err := net.Dial("tcp", addr)
			if err != nil {
				b.Fatal(err)
			}
			if err := roundTrip(b, c, int32(i), 10); err != nil {
				b.Fatal(err)
			}
			cs = append(cs, c)
		}
		after := memInUse()
		for _, c := range cs {
			c.Close()
		}
		waitFor(b, 10*time.Second, "connections to close", func() bool { return p.Stats().ConnectionsOpen == 0 })
		return after - min(before, after)
	}
	for range b.N {
		direct := open(broker.addr())
		proxied := open(p.Addr().String())
		b.ReportMetric(float64(proxied-min(direct, proxied))/conns, "B/idle-conn")
	}
}

func memInUse() uint64 {
	runtime.GC()
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return m.HeapInuse + m.StackInuse
}
