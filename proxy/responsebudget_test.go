package proxy

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"net"
	"sync"
	"testing"
	"time"
)

// gatedBroker reads one request per connection, tells got, waits for
// answer to be closed, then sends response: its size prefix, the request's
// correlation id and body.
func gatedBroker(t *testing.T, body []byte, got chan<- struct{}, answer <-chan struct{}) string {
	t.Helper()
	return answerFirstRequest(t, func(c net.Conn, corr int32) {
		got <- struct{}{}
		<-answer
		resp := binary.BigEndian.AppendUint32(nil, uint32(4+len(body)))
		resp = binary.BigEndian.AppendUint32(resp, uint32(corr))
		c.Write(append(resp, body...))
		readTestFrame(c) // until the client leaves
	})
}

// TestResponseBudgetSpent: a response of interest arriving when the buffer
// budget is spent does not wait for it (the bytes could be held by
// requests awaiting their responses). An observed response is streamed
// unobserved, whole and byte for byte; one kproxy rewrites is read whole
// anyway, overdrawing the budget until it is written.
func TestResponseBudgetSpent(t *testing.T) {
	tests := []struct {
		name           string
		key            int16
		wantUnobserved uint64
	}{
		{"observed response streamed unobserved", 11, 1}, // JoinGroup
		{"rewritten response read whole", 3, 0},          // Metadata
	}
	body := make([]byte, 20000)
	fillRandom(rand.New(rand.NewPCG(3, 4)), body)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, answer := make(chan struct{}, 1), make(chan struct{})
			cfg := fakeConfig(gatedBroker(t, body, got, answer))
			rec := &recorder{}
			p := startProxy(t, cfg, nil, rec)
			c := dial(t, p.Addr().String())
			if _, err := c.Write(testRequest(rand.New(rand.NewPCG(1, 2)), tc.key, 5, 0, 0, 100)); err != nil {
				t.Fatal(err)
			}
			select {
			case <-got:
			case <-time.After(5 * time.Second):
				t.Fatal("the request did not reach the broker")
			}
			// Spend what is left of the budget, as other connections
			// would.
			left := p.cfg.MaxBufferedBytes - p.Stats().BufferedBytes
			if !p.budget.tryTake(left) {
				t.Fatal("could not spend the budget")
			}
			defer p.budget.give(left)
			close(answer)
			c.SetReadDeadline(time.Now().Add(10 * time.Second))
			resp, err := readTestFrame(c)
			if err != nil {
				t.Fatalf("response with the budget spent: %v", err)
			}
			if !bytes.Equal(resp[8:], body) {
				t.Errorf("response body differs from the broker's (%d bytes; want %d)", len(resp)-8, len(body))
			}
			if n := p.Stats().UnobservedFrames; n != tc.wantUnobserved {
				t.Errorf("UnobservedFrames = %d; want %d", n, tc.wantUnobserved)
			}
			waitFor(t, 5*time.Second, "exchange observed", func() bool { xs, _ := rec.snapshot(); return len(xs) == 1 })
			if xs, _ := rec.snapshot(); tc.wantUnobserved == 1 && (!xs[0].Oversized || xs[0].Response != nil || xs[0].Request == nil) {
				t.Errorf("exchange: oversized %v, request %d bytes, response %d bytes; want oversized with the request only",
					xs[0].Oversized, len(xs[0].Request), len(xs[0].Response))
			}
			// Everything given back: the budget's own bytes, not a
			// response's, are what is held now.
			waitFor(t, 5*time.Second, "budget given back", func() bool { return p.Stats().BufferedBytes == left })
		})
	}
}

// TestResponseBudgetNoDeadlock: connections whose group requests hold the
// whole budget until their responses are read, with responses as large as
// the requests. Were responses to wait for the budget, each would wait for
// bytes only the requests awaiting them hold; every exchange must finish.
func TestResponseBudgetNoDeadlock(t *testing.T) {
	broker := startFakeBroker(t, "127.0.0.1:0")
	cfg := fakeConfig(broker.addr())
	cfg.MaxObservedFrameSize = 64 << 10
	cfg.MaxBufferedBytes = 128 << 10 // two requests
	cfg.FrameReadTimeout = 20 * time.Second
	p := startProxy(t, cfg, nil)
	const conns, rounds = 16, 4
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	start := time.Now()
	for i := range conns {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c, err := net.Dial("tcp", p.Addr().String())
			if err != nil {
				errs <- err
				return
			}
			defer c.Close()
			c.SetDeadline(time.Now().Add(15 * time.Second))
			rng := rand.New(rand.NewPCG(uint64(i), 9))
			for r := range int32(rounds) {
				// JoinGroup, 60 KiB each way.
				if _, err := c.Write(testRequest(rng, 11, r, 60<<10, 0, 60<<10)); err != nil {
					errs <- err
					return
				}
				if _, err := readTestFrame(c); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a connection did not finish its exchanges: %v", err)
	}
	st := p.Stats()
	t.Logf("%d exchanges of 60 KiB each way in %v through a 128 KiB budget: %d responses streamed unobserved, %d request waits",
		conns*rounds, time.Since(start).Round(time.Millisecond), st.UnobservedFrames, st.BufferWaits)
	waitFor(t, 5*time.Second, "budget given back", func() bool { return p.Stats().BufferedBytes == 0 })
}
