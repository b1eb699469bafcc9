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
// little costs little. When h is not nil, every allocation is first taken
// from its budget (and the buffers it replaces given back); the caller
// gives back what h holds once the frame is no longer needed.
func readFrame(br *bufio.Reader, prefix [4]byte, size int32, h *hold) ([]byte, error) {
	total := 4 + int(size)
	n := min(total, growStep)
	if err := h.take(int64(n)); err != nil {
		return nil, err
	}
	buf := make([]byte, 4, n)
	copy(buf, prefix[:])
	for len(buf) < total {
		if len(buf) == cap(buf) {
			// Give back before taking, so that a frame never needs
			// more than its own size of the budget; the old buffer
			// is garbage once copied.
			n := min(total, 2*cap(buf))
			h.give(int64(cap(buf)))
			if err := h.take(int64(n)); err != nil {
				return nil, err
			}
			grown := make([]byte, len(buf), n)
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

// hold is what one request frame holds of the buffer budget while it is
// read, forwarded and waits for its response. A nil *hold takes nothing:
// frames read from brokers are not budgeted.
type hold struct {
	b        *budget
	n        int64
	deadline time.Time
	stop     <-chan struct{}
	// waited is set when a take had to wait for the budget.
	waited bool
}

func (h *hold) take(n int64) error {
	if h == nil {
		return nil
	}
	waited, err := h.b.take(n, h.deadline, h.stop)
	h.waited = h.waited || waited
	if err != nil {
		return err
	}
	h.n += n
	return nil
}

func (h *hold) give(n int64) {
	if h == nil {
		return
	}
	h.n -= n
	h.b.give(n)
}

// release gives back everything h holds.
func (h *hold) release() {
	if h != nil {
		h.give(h.n)
	}
}
