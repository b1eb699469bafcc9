package proxy

import (
	"bufio"
	"encoding/binary"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
)

// answerFirstRequest is a broker that reads the first request of each
// connection and hands the connection and the request's correlation id to
// answer, then closes the connection; it listens until the test ends.
func answerFirstRequest(t *testing.T, answer func(c net.Conn, corr int32)) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				frame, err := readTestFrame(bufio.NewReader(c))
				if err != nil {
					return
				}
				h, err := decode.ParseRequestHeader(frame[4:])
				if err != nil {
					return
				}
				answer(c, h.CorrelationID)
			}()
		}
	}()
	return ln.Addr().String()
}

// startCuttingBroker answers the first request of each connection with a
// response declaring declared bytes of body, sends sent of them and ends
// the connection: closed, or reset when reset is set (a broker crash).
func startCuttingBroker(t *testing.T, declared, sent int, reset bool) string {
	t.Helper()
	return answerFirstRequest(t, func(c net.Conn, corr int32) {
		resp := binary.BigEndian.AppendUint32(nil, uint32(4+declared))
		resp = binary.BigEndian.AppendUint32(resp, uint32(corr))
		resp = append(resp, make([]byte, sent)...)
		c.Write(resp)
		time.Sleep(50 * time.Millisecond) // let it reach the proxy before the reset
		if reset {
			c.(*net.TCPConn).SetLinger(0)
		}
	})
}

// TestResponseCut: a broker that ends its connection in the middle of a
// response, streamed or read whole, costs the client its connection (closed
// at once, not left waiting for the rest) and is counted as a truncated
// frame.
func TestResponseCut(t *testing.T) {
	tests := []struct {
		name  string
		key   int16 // 1 Fetch: streamed; 3 Metadata: read whole to be rewritten
		reset bool
	}{
		{"streamed response, broker closes", 1, false},
		{"streamed response, broker resets", 1, true},
		{"response read whole, broker closes", 3, false},
		{"response read whole, broker resets", 3, true},
	}
	const declared, sent = 1 << 20, 200 << 10
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broker := startCuttingBroker(t, declared, sent, tc.reset)
			p := startProxy(t, fakeConfig(broker), zap.NewNop())
			c, err := net.Dial("tcp", p.Addr().String())
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			rng := rand.New(rand.NewPCG(1, 2))
			if _, err := c.Write(testRequest(rng, tc.key, 7, 0, 0, 0)); err != nil {
				t.Fatal(err)
			}
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			got, err := io.Copy(io.Discard, c)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("client connection still open 10 s after the broker cut the response (read %d bytes)", got)
			}
			if got >= 4+4+declared {
				t.Fatalf("client read %d bytes; want fewer than the %d declared", got, 8+declared)
			}
			waitFor(t, 5*time.Second, "truncated frame counted", func() bool { return p.Stats().TruncatedFrames == 1 })
			if n := p.Stats().TruncatedFrames; n != 1 {
				t.Errorf("TruncatedFrames = %d; want 1", n)
			}
		})
	}
}
