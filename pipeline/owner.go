package pipeline

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
)

// Owner runs functions for readers on other goroutines on the goroutine
// that owns a pipeline's consumers, as kfake's admin(fn): while Run runs,
// on Run's goroutine between two exchanges (after the events read so far
// have been handed on); once Run has returned, on the reader's goroutine,
// one at a time, as whoever holds the consumers then (the end of serve,
// which settles the story) does through Do too. A reader thus reads the
// consumers' state in order with the exchanges, and nothing in them is
// locked.
//
// The pipeline never waits for a reader: a function queued is run when
// its turn comes, unless its reader has given up by then (its context is
// done), and a reader that gives up while its function runs leaves it to
// finish. The zero value is ready to use.
type Owner struct {
	mu      sync.Mutex
	running bool // Run runs: functions are queued for it
	queue   []*ask
	wake    func() // wakes Run waiting for its source (Waker); nil none
	// queued is set while queue holds functions: Run looks at it after
	// every exchange, without locking.
	queued atomic.Bool
	// alone is held (capacity 1) while no Run runs and a function runs
	// on its reader's goroutine, and by Run as it starts and stops.
	alone chan struct{}
	once  sync.Once
}

// ask is a function queued to the owner and how its reader learns it ran.
type ask struct {
	ctx  context.Context
	fn   func()
	done chan struct{} // closed once fn has run or was skipped
}

// Waker is a Source whose Next, waiting for exchanges, can be made to
// return at once: with a nil exchange and a nil error, as for a tick, but
// without moving the time Tick says (a TickSource). The pipeline then runs
// the functions queued to its Owner. The proxy's queue is one; with
// another source, a queued function waits for the next exchange or tick.
type Waker interface {
	Source
	Wake()
}

func (o *Owner) init() { o.once.Do(func() { o.alone = make(chan struct{}, 1) }) }

// Do runs fn on the owner (see Owner) and returns once it has run, or with
// ctx's error once ctx is done: fn then runs later or not at all, and must
// not touch what the caller reads after Do returns.
func (o *Owner) Do(ctx context.Context, fn func()) error {
	o.init()
	for {
		o.mu.Lock()
		if o.running {
			a := &ask{ctx: ctx, fn: fn, done: make(chan struct{})}
			o.queue = append(o.queue, a)
			o.queued.Store(true)
			wake := o.wake
			o.mu.Unlock()
			if wake != nil {
				wake()
			}
			select {
			case <-a.done:
				return nil
			case <-ctx.Done():
				return fmt.Errorf("pipeline: waiting for the owner: %w", ctx.Err())
			}
		}
		o.mu.Unlock()
		select {
		case o.alone <- struct{}{}:
		case <-ctx.Done():
			return fmt.Errorf("pipeline: waiting for the owner: %w", ctx.Err())
		}
		o.mu.Lock()
		running := o.running
		o.mu.Unlock()
		if running { // Run started meanwhile: queue fn to it
			<-o.alone
			continue
		}
		if err := ctx.Err(); err != nil {
			<-o.alone
			return fmt.Errorf("pipeline: waiting for the owner: %w", err)
		}
		fn()
		<-o.alone
		return nil
	}
}

// start makes Run, on the calling goroutine, the owner; wake wakes it
// waiting for its source (nil: none).
func (o *Owner) start(wake func()) {
	o.init()
	o.alone <- struct{}{} // waits for a function running alone
	o.mu.Lock()
	o.running, o.wake = true, wake
	o.mu.Unlock()
	<-o.alone
}

// stop ends Run's ownership: the functions still queued run first.
func (o *Owner) stop() {
	o.alone <- struct{}{}
	o.mu.Lock()
	o.running, o.wake = false, nil
	o.mu.Unlock()
	o.serve()
	<-o.alone
}

// serve runs the functions queued, in order, skipping those whose reader
// has given up.
func (o *Owner) serve() {
	o.mu.Lock()
	q := o.queue
	o.queue = nil
	o.queued.Store(false)
	o.mu.Unlock()
	for _, a := range q {
		if a.ctx.Err() == nil {
			a.fn()
		}
		close(a.done)
	}
}
