package proxy

import (
	"io"

	"github.com/kproxy-dev/kproxy/decode"
)

// Queue is the proxy's queue of raw exchanges of interest (decode.Observed),
// bounded in exchanges (ObserverQueue) and bytes (ObserverQueueBytes). The
// traffic path never waits for it: an exchange that does not fit is
// dropped and counted (Stats.ObserverDrops), and its reader learns of the
// drops in order, with the next exchange. It has one reader, the
// pipeline; get it with Proxy.Queue.
type Queue struct {
	ch    chan queued
	stats *counters
	// noted is how many drops the reader was told about.
	noted uint64
	// held is the bytes of the exchange handed out last: they count
	// against ObserverQueueBytes until the reader asks for the next, so
	// that a stuck reader holds the queue to its bound.
	held int64
}

// queued is an exchange waiting in the queue, with the number of
// exchanges dropped before it was queued.
type queued struct {
	x     *decode.Exchange
	drops uint64
}

// Next waits for the next exchange and returns it with the number of
// exchanges dropped since the previous call, before it. Once Run has
// stopped every connection and the queue is empty, it returns io.EOF with
// the drops not reported yet. Exchanges are never reused nor modified
// after they are handed out: a reader may keep them. Next must not be
// called from two goroutines at once.
func (q *Queue) Next() (*decode.Exchange, uint64, error) {
	q.stats.queuedBytes.Add(-q.held)
	q.held = 0
	it, ok := <-q.ch
	if !ok {
		return nil, q.drops(q.stats.observerDrops.Load()), io.EOF
	}
	q.held = exchangeBytes(it.x)
	return it.x, q.drops(it.drops), nil
}

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
// in exchanges or in bytes: traffic never waits for the reader.
func (q *Queue) offer(x *decode.Exchange, maxBytes int64) {
	n := exchangeBytes(x)
	if before := q.stats.queuedBytes.Add(n) - n; before > 0 && before+n > maxBytes {
		q.stats.queuedBytes.Add(-n)
		q.stats.observerDrops.Add(1)
		return
	}
	select {
	case q.ch <- queued{x: x, drops: q.stats.observerDrops.Load()}:
	default:
		q.stats.queuedBytes.Add(-n)
		q.stats.observerDrops.Add(1)
	}
}

// exchangeBytes is what an exchange holds in the queue.
func exchangeBytes(x *decode.Exchange) int64 { return int64(len(x.Request) + len(x.Response)) }
