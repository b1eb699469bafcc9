package proxy

import (
	"io"
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Queue is the proxy's queue of raw exchanges of interest (decode.Observed),
// bounded in exchanges (ObserverQueue) and bytes (ObserverQueueBytes). The
// traffic path never waits for it: an exchange that does not fit is
// dropped and counted (Stats.ObserverDrops), and its reader learns of the
// drops in order, with the next exchange. It has one reader, the
// pipeline; get it with Proxy.Queue.
//
// Exchanges leave in the order they were queued. A Fetch request (an
// exchange without a response, queued as a consumer polls, several times a
// second per consumer) does not wake the reader: it waits for the next
// exchange that does, or for lazyDelay at most. Waking the reader is a
// thread woken in the Go scheduler, and for a consumer fetching at full
// speed that costs more than observing its Fetch does.
type Queue struct {
	stats *counters

	mu    sync.Mutex
	ring  []queued // capacity ObserverQueue
	head  int      // index of the oldest in ring
	n     int      // how many ring holds
	ended bool     // no exchange will be queued any more
	// lazy is set while a timer is due to wake the reader for exchanges
	// queued without waking it.
	lazy  bool
	timer *time.Timer
	// wake tells the reader, waiting in Next, that there is something to
	// read (capacity 1: one signal stands for any number).
	wake chan struct{}
	// asked makes the reader, waiting in Next, return at once (Wake).
	asked chan struct{}

	// Owned by the reader:
	// noted is how many drops the reader was told about.
	noted uint64
	// held is the bytes of the exchange handed out last: they count
	// against ObserverQueueBytes until the reader asks for the next, so
	// that a stuck reader holds the queue to its bound.
	held int64
	// idle fires when the queue has been empty for tickEvery, and tickAt
	// is the time of the last tick (see Tick).
	idle   *time.Timer
	tickAt time.Time
}

// tickEvery is how long the queue stays empty before Next returns a tick
// (pipeline.TickSource), and tickSlack how far behind the wall clock a
// tick's time stays: longer than a connection takes between stamping an
// exchange's completion and queueing it, so that no exchange queued after
// a tick completed before it.
const (
	tickEvery = time.Second
	tickSlack = 100 * time.Millisecond
)

// lazyDelay is the longest an exchange queued without waking the reader
// waits to be read: the stories are told from exchanges' own times, so it
// delays what serve shows by at most this, and changes none of it.
const lazyDelay = 100 * time.Millisecond

// queued is an exchange waiting in the queue, with the number of
// exchanges dropped before it was queued.
type queued struct {
	x     *decode.Exchange
	drops uint64
}

// newQueue returns an empty queue of capacity n exchanges.
func newQueue(n int, stats *counters) *Queue {
	q := &Queue{stats: stats, ring: make([]queued, max(n, 1)), wake: make(chan struct{}, 1), asked: make(chan struct{}, 1)}
	q.timer = time.AfterFunc(time.Hour, q.lazyWake)
	q.timer.Stop()
	return q
}

// Next waits for the next exchange and returns it with the number of
// exchanges dropped since the previous call, before it. When none has
// come for tickEvery it returns a nil exchange and a nil error: a tick
// (see Tick). Once Run has
// stopped every connection and the queue is empty, it returns io.EOF with
// the drops not reported yet. Exchanges are never reused nor modified
// after they are handed out: a reader may keep them. Next must not be
// called from two goroutines at once.
func (q *Queue) Next() (*decode.Exchange, uint64, error) {
	q.stats.queuedBytes.Add(-q.held)
	q.held = 0
	for {
		q.mu.Lock()
		if q.n > 0 {
			it := q.ring[q.head]
			q.ring[q.head] = queued{}
			q.head = (q.head + 1) % len(q.ring)
			q.n--
			q.mu.Unlock()
			q.held = exchangeBytes(it.x)
			return it.x, q.drops(it.drops), nil
		}
		ended := q.ended
		q.mu.Unlock()
		if ended {
			return nil, q.drops(q.stats.observerDrops.Load()), io.EOF
		}
		if q.idle == nil {
			q.idle = time.NewTimer(tickEvery)
		} else {
			q.idle.Reset(tickEvery)
		}
		select {
		case <-q.wake:
		case now := <-q.idle.C:
			q.tickAt = now.Add(-tickSlack)
			return nil, 0, nil
		case <-q.asked:
			return nil, 0, nil // Tick stays as it was: not a tick
		}
	}
}

// Wake makes Next, waiting for exchanges, return at once with a nil
// exchange and the time of the last tick (pipeline.Waker): the pipeline
// then runs what readers asked of it.
func (q *Queue) Wake() {
	select {
	case q.asked <- struct{}{}:
	default:
	}
}

// Tick is the time of the tick Next last returned: every exchange that
// completed before it has been handed out.
func (q *Queue) Tick() time.Time { return q.tickAt }

// drops returns the drops up to the total upTo not reported yet.
func (q *Queue) drops(upTo uint64) uint64 {
	if upTo <= q.noted {
		return 0
	}
	n := upTo - q.noted
	q.noted = upTo
	return n
}

// offer queues an exchange, or counts it dropped when the queue is full,
// in exchanges or in bytes: traffic never waits for the reader. A
// request-only exchange (a Fetch request) does not wake the reader (see
// Queue).
func (q *Queue) offer(x *decode.Exchange, maxBytes int64) {
	n := exchangeBytes(x)
	if before := q.stats.queuedBytes.Add(n) - n; before > 0 && before+n > maxBytes {
		q.stats.queuedBytes.Add(-n)
		q.stats.observerDrops.Add(1)
		return
	}
	lazy := decode.RequestOnly(x.APIKey)
	q.mu.Lock()
	if q.n == len(q.ring) {
		q.mu.Unlock()
		q.stats.queuedBytes.Add(-n)
		q.stats.observerDrops.Add(1)
		return
	}
	q.ring[(q.head+q.n)%len(q.ring)] = queued{x: x, drops: q.stats.observerDrops.Load()}
	q.n++
	arm := lazy && !q.lazy
	if arm {
		q.lazy = true
	}
	q.mu.Unlock()
	if arm {
		q.timer.Reset(lazyDelay)
	}
	if !lazy {
		q.signal()
	}
}

// lazyWake wakes the reader for the exchanges queued without waking it.
func (q *Queue) lazyWake() {
	q.mu.Lock()
	q.lazy = false
	q.mu.Unlock()
	q.signal()
}

// signal wakes the reader if it waits, or tells it not to.
func (q *Queue) signal() {
	select {
	case q.wake <- struct{}{}:
	default:
	}
}

// end says that no exchange will be queued any more: the reader gets
// those queued, then io.EOF.
func (q *Queue) end() {
	q.mu.Lock()
	q.ended = true
	q.mu.Unlock()
	q.timer.Stop()
	q.signal()
}

// exchangeBytes is what an exchange holds in the queue.
func exchangeBytes(x *decode.Exchange) int64 { return int64(len(x.Request) + len(x.Response)) }
