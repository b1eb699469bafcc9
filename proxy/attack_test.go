//go:build integration

package proxy

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"testing"
	"time"
)

// heapInUse is the live heap after a collection.
func heapInUse() int64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return int64(ms.HeapAlloc)
}

// attack opens n connections that each send head and then body bytes of
// zeros, and leaves them open until the test ends.
func attack(t *testing.T, addr string, n int, head []byte, body int) {
	t.Helper()
	zeros := make([]byte, body)
	var wg sync.WaitGroup
	for range n {
		c := dial(t, addr)
		wg.Add(1)
		go func() {
			defer wg.Done()
			// A write blocked by a paused reader fails when the proxy
			// closes the connection (frame read timeout): expected.
			c.Write(append(append([]byte(nil), head...), zeros...))
		}()
	}
	t.Cleanup(wg.Wait)
}

// TestDeclaredSizeAttack: connections declaring large JoinGroup frames and
// sending most of them (the RSS attack, scaled down) cost kproxy
// what they sent, bounded by the buffer budget, never what they declared.
func TestDeclaredSizeAttack(t *testing.T) {
	const (
		conns       = 16
		maxObserved = 1 << 20
		budgetBytes = 4 << 20
	)
	tests := []struct {
		name string
		// declared is the frame size announced, sent the body bytes
		// actually sent after the 8-byte header.
		declared, sent int
		// maxHeap bounds the live-heap growth; wantStreamed says the
		// frames went to the broker unobserved.
		maxHeap      int64
		wantStreamed bool
		wantWaits    bool
		wantRefused  bool
	}{
		// 100 MiB declared: above the maximum group frame size, so
		// refused before any of it reaches the broker.
		{"declared_100MiB_refused", 100 << 20, 256 << 10, 4 << 20, false, false, true},
		// 8 MiB declared, 256 KiB sent: larger than the maximum
		// observed frame, so streamed; nothing held but copy buffers.
		{"declared_8MiB_streamed", 8 << 20, 256 << 10, 4 << 20, true, false, false},
		// Just under the maximum observed frame, all but 1,000 bytes
		// sent: read whole, so held, but 16 MiB asked of a 4 MiB budget.
		{"under_observed_limit_budgeted", maxObserved, maxObserved - 8 - 1000, budgetBytes + 4<<20, false, true, false},
		// Just under the maximum observed frame, 1,000 bytes sent: the
		// budget is reserved, but buffers grow only as bytes arrive.
		{"under_observed_limit_little_sent", maxObserved, 1000, 2 << 20, false, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up := startSink(t)
			cfg := fakeConfig(up.addr())
			cfg.MaxObservedFrameSize = maxObserved
			cfg.MaxBufferedBytes = budgetBytes
			cfg.FrameReadTimeout = 3 * time.Second
			p := startProxy(t, cfg, nil)
			before := heapInUse()
			attack(t, p.Addr().String(), conns, joinGroupHead(uint32(tt.declared)), tt.sent)
			switch {
			case tt.wantRefused:
				waitFor(t, 10*time.Second, "every connection refused", func() bool {
					s := p.Stats()
					return s.OversizedFrames == conns && s.ConnectionsOpen == 0
				})
				if n := up.read.Load(); n != 0 {
					t.Errorf("the broker read %d bytes of refused frames; want none", n)
				}
			case tt.wantStreamed:
				waitFor(t, 10*time.Second, "the bodies to reach the broker", func() bool {
					return up.read.Load() >= int64(conns*tt.sent)
				})
			default:
				waitFor(t, 10*time.Second, "the budget spent and readers waiting", func() bool {
					s := p.Stats()
					return s.BufferedBytes >= budgetBytes-maxObserved && s.BufferWaits > 0
				})
				time.Sleep(200 * time.Millisecond) // let whatever can be read be read
			}
			grew := heapInUse() - before
			st := p.Stats()
			t.Logf("%d connections declaring %d bytes, sending %d: live heap grew %.1f MiB (bound %.1f MiB); buffered %d, waits %d, unobserved %d",
				conns, tt.declared, tt.sent, float64(grew)/(1<<20), float64(tt.maxHeap)/(1<<20), st.BufferedBytes, st.BufferWaits, st.UnobservedFrames)
			if grew > tt.maxHeap {
				t.Errorf("live heap grew %d bytes; want at most %d", grew, tt.maxHeap)
			}
			if st.BufferedBytes > budgetBytes {
				t.Errorf("buffered %d bytes; want at most the budget %d", st.BufferedBytes, budgetBytes)
			}
			if tt.wantStreamed && st.UnobservedFrames != conns {
				t.Errorf("unobserved frames %d; want %d", st.UnobservedFrames, conns)
			}
			if tt.wantWaits {
				// The frame read timeout closes them all and gives
				// the budget back.
				waitFor(t, 10*time.Second, "the frame read timeouts", func() bool {
					s := p.Stats()
					return s.FrameReadTimeouts == conns && s.BufferedBytes == 0 && s.ConnectionsOpen == 0
				})
			}
		})
	}
}

// TestFrameReadTimeout: a client that sends part of a frame of interest and
// stops is disconnected after the frame read timeout, counted, and its
// buffer given back.
func TestFrameReadTimeout(t *testing.T) {
	up := startSink(t)
	cfg := fakeConfig(up.addr())
	cfg.FrameReadTimeout = 300 * time.Millisecond
	p := startProxy(t, cfg, nil)
	c := dial(t, p.Addr().String())
	start := time.Now()
	if _, err := c.Write(append(joinGroupHead(1000), make([]byte, 100)...)); err != nil {
		t.Fatal(err)
	}
	expectClosed(t, c)
	t.Logf("closed after %v", time.Since(start).Round(time.Millisecond))
	waitFor(t, 5*time.Second, "the connection to end", func() bool { return p.Stats().ConnectionsOpen == 0 })
	if st := p.Stats(); st.FrameReadTimeouts != 1 || st.BufferedBytes != 0 {
		t.Errorf("frame read timeouts %d, buffered %d; want 1 and 0", st.FrameReadTimeouts, st.BufferedBytes)
	}
}

// TestOversizedObserved: a request of interest, and a response of interest,
// larger than the maximum observed frame size are forwarded whole, and
// observed as exchanges marked Oversized without the frame too large.
func TestOversizedObserved(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	cfg := fakeConfig(broker.addr())
	cfg.MaxObservedFrameSize = 1024
	rec := &recorder{}
	p := newProxy(t, cfg, nil)
	pl := runProxy(t, p, rec)
	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(1, 2))
	// Heartbeats (key 12): a 2,000-byte request, then a 5,000-byte
	// response.
	for i, req := range [][]byte{testRequest(rng, 12, 1, 10, 0, 2000), testRequest(rng, 12, 2, 5000, 0, 0)} {
		if _, err := c.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	waitFor(t, 5*time.Second, "two exchanges observed", func() bool { xs, _ := rec.snapshot(); return len(xs) == 2 })
	xs, _ := rec.snapshot()
	if x := xs[0]; !x.Oversized || x.Request != nil || x.Response != nil || x.ResponseAt.IsZero() {
		t.Errorf("request too large: oversized %v, request %d bytes, response %d bytes, answered %v; want oversized, no frames, answered",
			x.Oversized, len(x.Request), len(x.Response), !x.ResponseAt.IsZero())
	}
	if x := xs[1]; !x.Oversized || x.Request == nil || x.Response != nil {
		t.Errorf("response too large: oversized %v, request %d bytes, response %d bytes; want oversized, the request only",
			x.Oversized, len(x.Request), len(x.Response))
	}
	if st, undecoded := p.Stats(), pl.Stats().Undecoded; st.UnobservedFrames != 2 || undecoded != 0 {
		t.Errorf("unobserved %d, undecoded %d; want 2 and 0", st.UnobservedFrames, undecoded)
	}
}
