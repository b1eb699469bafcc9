package proxy

import (
	"bytes"
	"encoding/binary"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
)

// framingBroker is the least a broker can be: it reads size-prefixed frames
// and answers each with a frame holding the request's correlation id and
// nothing else. It never parses more, so garbage cannot crash it (kfake
// panics on some garbage frames). It records the frames it read, by
// connection.
type framingBroker struct {
	ln net.Listener

	mu    sync.Mutex
	conns [][][]byte // frames (prefix included) per connection, in accept order
}

// maxFuzzFrame bounds the frames the framing broker accepts.
const maxFuzzFrame = 1 << 20

func startFramingBroker(tb testing.TB) *framingBroker {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	b := &framingBroker{ln: ln}
	go b.accept()
	tb.Cleanup(func() { ln.Close() })
	return b
}

func (b *framingBroker) accept() {
	for {
		c, err := b.ln.Accept()
		if err != nil {
			return
		}
		b.mu.Lock()
		i := len(b.conns)
		b.conns = append(b.conns, nil)
		b.mu.Unlock()
		go b.serve(c, i)
	}
}

// serve reads frames until the connection ends or a size is out of range.
func (b *framingBroker) serve(c net.Conn, i int) {
	defer c.Close()
	for {
		var p [4]byte
		if _, err := io.ReadFull(c, p[:]); err != nil {
			return
		}
		size := int32(binary.BigEndian.Uint32(p[:]))
		if size < 0 || size > maxFuzzFrame {
			return
		}
		frame := make([]byte, 4+int(size))
		copy(frame, p[:])
		if _, err := io.ReadFull(c, frame[4:]); err != nil {
			return
		}
		b.mu.Lock()
		b.conns[i] = append(b.conns[i], frame)
		b.mu.Unlock()
		resp := []byte{0, 0, 0, 4, 0, 0, 0, 0}
		if size >= 8 {
			copy(resp[4:], frame[8:12])
		}
		if _, err := c.Write(resp); err != nil {
			return
		}
	}
}

// framesSince returns the frames of the connections accepted from the
// first'th on.
func (b *framingBroker) framesSince(first int) [][]byte {
	b.mu.Lock()
	defer b.mu.Unlock()
	var out [][]byte
	for _, fs := range b.conns[min(first, len(b.conns)):] {
		out = append(out, fs...)
	}
	return out
}

func (b *framingBroker) accepted() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.conns)
}

// splitFrames splits in into the frames a broker would read from it, as
// the framing broker does; a trailing partial frame is left out.
func splitFrames(in []byte) [][]byte {
	var out [][]byte
	for len(in) >= 4 {
		size := int32(binary.BigEndian.Uint32(in))
		if size < 0 || size > maxFuzzFrame || len(in) < 4+int(size) {
			break
		}
		out = append(out, in[:4+int(size)])
		in = in[4+int(size):]
	}
	return out
}

// isSubsequence reports whether every frame of sub appears in frames, in
// order.
func isSubsequence(sub, frames [][]byte) bool {
	j := 0
	for _, f := range sub {
		for j < len(frames) && !bytes.Equal(frames[j], f) {
			j++
		}
		if j == len(frames) {
			return false
		}
		j++
	}
	return true
}

// FuzzProxyFraming sends arbitrary bytes as a client through a live proxy
// to a broker that only frames replies. The proxy must not panic, must
// forward only frames the client sent, byte for byte and in order (some it
// may answer itself, such as an ApiVersions above kmsg's version, or refuse
// and close), must end the connection once the client has, and must keep
// serving other clients.
func FuzzProxyFraming(f *testing.F) {
	hb := func(corr byte) []byte { return []byte{0, 0, 0, 12, 0, 12, 0, 4, 0, 0, 0, corr, 0xff, 0xff, 0, 0} }
	f.Add(hb(1))
	f.Add(append(hb(1), hb(2)...))
	f.Add([]byte("GET / HTTP/1.1\r\n\r\n"))
	f.Add([]byte{0x16, 0x03, 0x01, 0x00, 0x10})
	f.Add(append(joinGroupHead(40), make([]byte, 32)...))
	f.Add([]byte{0, 0, 0, 10, 0, 17, 0, 0, 0, 0, 0, 1, 0, 0})        // SaslHandshake v0, cut
	f.Add([]byte{0, 0, 0, 10, 0, 18, 0, 99, 0, 0, 0, 1, 0xff, 0xff}) // ApiVersions above kmsg's
	f.Add([]byte{0x80, 0, 0, 0})
	broker := startFramingBroker(f)
	cfg := fakeConfig(broker.ln.Addr().String())
	cfg.MaxFrameSize = maxFuzzFrame
	cfg.MaxObservedFrameSize = 64 << 10
	cfg.FrameReadTimeout = 2 * time.Second
	p := startProxy(f, cfg, zap.NewNop()) // the fuzz target may not log through f
	addr := p.Addr().String()

	f.Fuzz(func(t *testing.T, in []byte) {
		first := broker.accepted()
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.Write(in) // the proxy may have closed already: fine
		c.(*net.TCPConn).CloseWrite()
		c.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := io.Copy(io.Discard, c); err != nil {
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("the proxy kept the connection open 10 s after the client closed its side")
			}
		}
		deadline := time.Now().Add(10 * time.Second)
		for p.Stats().ConnectionsOpen != 0 {
			if time.Now().After(deadline) {
				t.Fatal("connection still served 10 s after the client left")
			}
			time.Sleep(time.Millisecond)
		}
		got := broker.framesSince(first)
		if !isSubsequence(got, splitFrames(in)) {
			t.Fatalf("the broker read %d frames that are not the client's, in order:\ngot  %x\nsent %x", len(got), got, in)
		}
		// Still serving.
		ok, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer ok.Close()
		if _, err := ok.Write(hb(7)); err != nil {
			t.Fatal(err)
		}
		ok.SetReadDeadline(time.Now().Add(10 * time.Second))
		resp := make([]byte, 8)
		if _, err := io.ReadFull(ok, resp); err != nil || resp[7] != 7 {
			t.Fatalf("a good client after the fuzzed one: %x, %v", resp, err)
		}
	})
}
