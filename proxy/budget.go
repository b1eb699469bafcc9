package proxy

import (
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// errBudgetTimeout ends a frame read that waited for the buffer budget
// until its deadline.
var errBudgetTimeout = errors.New("proxy: timed out waiting for buffer space (max buffered bytes)")

// budget bounds the bytes held by request frames read whole, across every
// connection (Config.MaxBufferedBytes). A connection takes bytes before it
// allocates them and gives them back when the exchange leaves it; when none
// are left it waits, so that reading from its client pauses instead of
// memory growing.
type budget struct {
	// waits counts the takes that had to wait (Stats.BufferWaits).
	waits atomic.Uint64

	mu   sync.Mutex
	left int64
	// freed is closed, and replaced, each time bytes are given back, to
	// wake the connections waiting.
	freed chan struct{}
}

func newBudget(n int64) *budget {
	return &budget{left: n, freed: make(chan struct{})}
}

// take takes n bytes, waiting for them until deadline or until stop is
// closed (the connection ended).
func (b *budget) take(n int64, deadline time.Time, stop <-chan struct{}) error {
	var timer *time.Timer
	for {
		b.mu.Lock()
		if b.left >= n {
			b.left -= n
			b.mu.Unlock()
			if timer != nil {
				timer.Stop()
			}
			return nil
		}
		freed := b.freed
		b.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(time.Until(deadline))
			b.waits.Add(1)
		}
		select {
		case <-freed:
		case <-timer.C:
			return errBudgetTimeout
		case <-stop:
			timer.Stop()
			return errStopped
		}
	}
}

// give gives back n bytes taken before.
func (b *budget) give(n int64) {
	if n == 0 {
		return
	}
	b.mu.Lock()
	b.left += n
	close(b.freed)
	b.freed = make(chan struct{})
	b.mu.Unlock()
}
