package proxy

import (
	"bufio"
	"errors"
	"io"
	"time"
)

// growStep is the most readFrame allocates before bytes arrive to fill
// it: its first buffer, and the smallest growth after.
const growStep = 64 << 10

// readFrame reads a whole frame of size bytes after its prefix and returns
// it with the prefix in front. It never allocates from the declared size:
// the buffer starts at growStep and at most doubles each time the bytes
// that arrived fill it, so a peer that declares a large frame and sends
// little costs little.
func readFrame(br *bufio.Reader, prefix [4]byte, size int32) ([]byte, error) {
	total := 4 + int(size)
	buf := make([]byte, 4, min(total, growStep))
	copy(buf, prefix[:])
	for len(buf) < total {
		if len(buf) == cap(buf) {
			grown := make([]byte, len(buf), min(total, 2*cap(buf)))
			copy(grown, buf)
			buf = grown
		}
		m, err := br.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+m]
		if err != nil && len(buf) < total {
			if errors.Is(err, io.EOF) {
				err = io.ErrUnexpectedEOF
			}
			return nil, err
		}
	}
	return buf, nil
}

// hold is what one request frame holds of the buffer budget, from before
// it is read until its exchange leaves the connection. A nil *hold holds
// nothing.
//
// A frame takes its whole size at once, before reading its body, even
// though its buffer grows only as bytes arrive: frames taking the budget
// bit by bit as they grow could each hold a part and all wait for more,
// none finishing until their read timeouts.
type hold struct {
	b *budget
	n int64
}

// takeHold takes n bytes of b for one frame, waiting until deadline or
// until stop is closed.
func takeHold(b *budget, n int64, deadline time.Time, stop <-chan struct{}) (*hold, error) {
	if err := b.take(n, deadline, stop); err != nil {
		return nil, err
	}
	return &hold{b: b, n: n}, nil
}

// takeResponse takes n bytes of b for a response frame read whole, without
// ever waiting: a response waiting for budget could wait for bytes that
// only the requests awaiting responses hold, on this connection and
// others, and none would move. When must is set (a response kproxy
// rewrites, which it cannot forward before it has it whole) the bytes are
// taken even if that overdraws the budget, so that requests pause until the
// response is gone; otherwise, when the bytes are not there, it returns
// false and the response is streamed unobserved.
func takeResponse(b *budget, n int64, must bool) (*hold, bool) {
	if must {
		b.overdraw(n)
		return &hold{b: b, n: n}, true
	}
	if !b.tryTake(n) {
		return nil, false
	}
	return &hold{b: b, n: n}, true
}

// release gives back what h holds.
func (h *hold) release() {
	if h != nil && h.n > 0 {
		h.b.give(h.n)
		h.n = 0
	}
}
