package proxy

import (
	"errors"
	"io"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestQueueOrderWithFetch checks that Fetch requests, queued without
// waking the reader, still leave the queue in the order they came, are
// handed out with nothing after them (the lazy wake), and before the end.
func TestQueueOrderWithFetch(t *testing.T) {
	fetch := func(corr int32) *decode.Exchange {
		return &decode.Exchange{APIKey: int16(kmsg.Fetch), CorrelationID: corr, Request: []byte{1}}
	}
	join := func(corr int32) *decode.Exchange {
		return &decode.Exchange{APIKey: int16(kmsg.JoinGroup), CorrelationID: corr, Request: []byte{1},
			Response: []byte{2}, ResponseAt: time.Unix(1, 0)}
	}
	for _, tc := range []struct {
		name string
		in   []*decode.Exchange
		end  bool
	}{
		{"a Fetch alone", []*decode.Exchange{fetch(1)}, false},
		{"Fetches then a JoinGroup", []*decode.Exchange{fetch(1), fetch(2), join(3)}, false},
		{"interleaved", []*decode.Exchange{join(1), fetch(2), join(3), fetch(4), fetch(5)}, false},
		{"Fetches then the end", []*decode.Exchange{fetch(1), fetch(2)}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var stats counters
			q := newQueue(16, &stats)
			got := make(chan *decode.Exchange)
			done := make(chan error, 1)
			go func() {
				for {
					x, _, err := q.Next()
					if err != nil {
						done <- err
						return
					}
					if x != nil { // not a tick
						got <- x
					}
				}
			}()
			// Most likely the reader waits by now, so a Fetch alone is
			// handed out by the lazy wake (either way the order holds).
			time.Sleep(20 * time.Millisecond)
			for _, x := range tc.in {
				q.offer(x, 1<<20)
			}
			if tc.end {
				q.end()
			}
			for i, want := range tc.in {
				select {
				case x := <-got:
					if x != want {
						t.Fatalf("exchange %d: got correlation id %d, want %d", i, x.CorrelationID, want.CorrelationID)
					}
				case <-time.After(10 * time.Second):
					t.Fatalf("exchange %d (correlation id %d) never handed out", i, want.CorrelationID)
				}
			}
			if !tc.end {
				q.end()
			}
			if err := <-done; !errors.Is(err, io.EOF) {
				t.Fatalf("after the end: %v, want io.EOF", err)
			}
			if b := stats.queuedBytes.Load(); b != 0 {
				t.Fatalf("queued bytes after the end %d, want 0", b)
			}
		})
	}
}
