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

// budget bounds the bytes held by frames read whole, requests and
// responses, across every connection (Config.MaxBufferedBytes). A
// connection takes bytes before it allocates them and gives them back when
// the exchange leaves it. When none are left a request waits, so that
// reading from its client pauses instead of memory growing; a response
// never waits (see takeResponse), so that the bytes requests hold until
// their responses are read always come back.
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

// tryTake takes n bytes if they are left, without waiting.
func (b *budget) tryTake(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.left < n {
		return false
	}
	b.left -= n
	return true
}

// overdraw takes n bytes whether or not they are left: what is left may go
// below zero, and requests then wait until it is back above their size.
func (b *budget) overdraw(n int64) {
	b.mu.Lock()
	b.left -= n
	b.mu.Unlock()
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
