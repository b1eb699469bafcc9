package proxy

import (
	"sync"
	"time"
)

// pending is a request forwarded upstream and waiting for its response.
type pending struct {
	corrID   int32
	key      int16
	version  int16
	clientID string
	at       time.Time
	request  []byte // the whole request frame when observed, else nil
	// held is the buffer budget request holds, given back once the
	// exchange leaves the connection (nil: none).
	held *hold
	// oversized marks a request of interest too large to observe
	// (MaxObservedFrameSize), streamed instead.
	oversized bool
	// sasl marks a SaslHandshake v0 request and the bare tokens after
	// it, and mechanism is the handshake's (saslv0.go).
	sasl      saslKind
	mechanism string
	// internal, when not nil, marks kproxy's own request (upstream SASL
	// re-authentication, reauth.go): its response goes there, not to
	// the client.
	internal chan []byte
}

// inflight is a connection's FIFO of pending requests. Kafka answers the
// requests of one connection in order, so the response pump only ever
// looks at the head, and pops it once the response is forwarded. The
// request pump pushes before it writes the request, so a response can
// never arrive for a request not yet queued.
type inflight struct {
	mu   sync.Mutex
	q    []pending
	head int
	// empty is broadcast when the queue empties (waitEmpty).
	empty sync.Cond
}

func (f *inflight) push(p pending) {
	f.mu.Lock()
	f.q = append(f.q, p)
	f.mu.Unlock()
}

// peek returns the oldest pending request.
func (f *inflight) peek() (pending, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head == len(f.q) {
		return pending{}, false
	}
	return f.q[f.head], true
}

// pop removes the oldest pending request.
func (f *inflight) pop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.head == len(f.q) {
		return
	}
	f.q[f.head] = pending{}
	f.head++
	if f.head == len(f.q) {
		// Empty: reuse the array from the start.
		f.q, f.head = f.q[:0], 0
		f.empty.Broadcast()
	}
}

// waitEmpty waits until no request is pending: every one was answered,
// or, when the connection ended, drained.
func (f *inflight) waitEmpty() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.empty.L = &f.mu
	for f.head != len(f.q) {
		f.empty.Wait()
	}
}

func (f *inflight) len() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.q) - f.head
}

// drain removes and returns every pending request.
func (f *inflight) drain() []pending {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := append([]pending(nil), f.q[f.head:]...)
	f.q, f.head = nil, 0
	f.empty.Broadcast()
	return out
}
