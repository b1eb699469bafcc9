package pipeline

import (
	"context"
	"errors"
	"io"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// wakingSource hands out the exchanges sent on xs until it is closed, and
// returns at once when woken (Waker).
type wakingSource struct {
	xs    chan *decode.Exchange
	woken chan struct{}
}

func newWakingSource() *wakingSource {
	return &wakingSource{xs: make(chan *decode.Exchange), woken: make(chan struct{}, 1)}
}

func (s *wakingSource) Next() (*decode.Exchange, uint64, error) {
	select {
	case x, ok := <-s.xs:
		if !ok {
			return nil, 0, io.EOF
		}
		return x, 0, nil
	case <-s.woken:
		return nil, 0, nil
	}
}

func (s *wakingSource) Wake() {
	select {
	case s.woken <- struct{}{}:
	default:
	}
}

// countingConsumer counts the exchanges appended, and blocks in Append
// while hold is set, until release is closed.
type countingConsumer struct {
	n       int // owned by the pipeline's goroutine
	hold    atomic.Bool
	holding chan struct{} // closed when Append starts holding
	release chan struct{}
}

func (c *countingConsumer) Append(*decode.Exchange) {
	c.n++
	if c.hold.Load() {
		close(c.holding)
		<-c.release
	}
}

func (c *countingConsumer) Dropped(uint64, time.Time) {}

// TestOwnerAsks: a function asked of a running pipeline's owner runs on
// its goroutine in order with the exchanges (it sees every exchange
// handed out before it was asked, with the source waiting for more); a
// reader that gives up returns at once and leaves the pipeline going on,
// its function never run; once the pipeline has stopped, asks run on the
// reader's goroutine, after everything the pipeline handed on.
func TestOwnerAsks(t *testing.T) {
	src := newWakingSource()
	c := &countingConsumer{holding: make(chan struct{}), release: make(chan struct{})}
	o := &Owner{}
	pl := New(Config{Exchanges: []ExchangeConsumer{c}, Owner: o})
	ran := make(chan error, 1)
	go func() { ran <- pl.Run(context.Background(), src) }()

	ask := func(ctx context.Context) (int, error) {
		n := -1
		err := o.Do(ctx, func() { n = c.n })
		return n, err
	}
	bg := context.Background()
	for i := 1; i <= 3; i++ {
		src.xs <- heartbeat(int32(i), 0, i)
		// The source is waiting for the next exchange: the ask wakes it.
		if n, err := ask(bg); err != nil || n != i {
			t.Fatalf("after %d exchanges, the owner saw %d (%v)", i, n, err)
		}
	}

	// The pipeline is busy with an exchange: a reader that gives up
	// returns, and its function is skipped.
	c.hold.Store(true)
	src.xs <- heartbeat(4, 0, 4)
	<-c.holding
	c.hold.Store(false)
	ctx, cancel := context.WithTimeout(bg, 50*time.Millisecond)
	skipped := true
	err := o.Do(ctx, func() { skipped = false })
	cancel()
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a reader that gave up: %v; want its deadline", err)
	}
	close(c.release)
	src.xs <- heartbeat(5, 0, 5)
	if n, err := ask(bg); err != nil || n != 5 {
		t.Fatalf("after the reader gave up, the owner saw %d exchanges (%v); want 5", n, err)
	}
	if !skipped {
		t.Error("the function of a reader that gave up ran")
	}

	close(src.xs)
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
	c.n = 100 // the caller owns the consumers now
	if n, err := ask(bg); err != nil || n != 100 {
		t.Fatalf("after the pipeline stopped: %d (%v); want 100", n, err)
	}
	ctx, cancel = context.WithCancel(bg)
	cancel()
	if err := o.Do(ctx, func() {}); !errors.Is(err, context.Canceled) {
		t.Errorf("a cancelled reader after the pipeline stopped: %v; want context.Canceled", err)
	}
}

// TestOwnerAsksBeforeStop: functions asked while the pipeline hands on its
// last exchanges are run, by the pipeline or after it, never lost.
func TestOwnerAsksBeforeStop(t *testing.T) {
	xs := make([]*decode.Exchange, 2000)
	for i := range xs {
		xs[i] = heartbeat(int32(i), 0, i)
	}
	c := &countingConsumer{}
	o := &Owner{}
	pl := New(Config{Exchanges: []ExchangeConsumer{c}, Owner: o})
	ran := make(chan error, 1)
	go func() { ran <- pl.Run(context.Background(), Slice(xs)) }()
	last := 0
	for range 50 {
		n := -1
		if err := o.Do(context.Background(), func() { n = c.n }); err != nil {
			t.Fatal(err)
		}
		if n < last {
			t.Fatalf("the owner saw %d exchanges after %d", n, last)
		}
		last = n
	}
	if err := <-ran; err != nil {
		t.Fatal(err)
	}
}
