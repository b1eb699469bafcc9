package proxy

import (
	"context"
	"math/rand/v2"
	"net"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// blockingConsumer is a pipeline consumer of exchanges that blocks in
// Append until released, and so stops the pipeline reading the queue.
type blockingConsumer struct {
	release chan struct{}
	seen    atomic.Int64
}

func (o *blockingConsumer) Append(*decode.Exchange) {
	<-o.release
	o.seen.Add(1)
}

func (o *blockingConsumer) Dropped(uint64, time.Time) {}

// TestSlowObserverNeverBlocksTraffic: with the queue's reader stuck and a queue
// of one, every round trip still completes; what does not fit is counted
// as dropped, and nothing is lost from the count.
func TestSlowObserverNeverBlocksTraffic(t *testing.T) {
	const requests = 20
	broker := startFakeBroker(t, "127.0.0.1:0")
	o := &blockingConsumer{release: make(chan struct{})}
	cfg := fakeConfig(broker.addr())
	cfg.ObserverQueue = 1
	p := newProxy(t, cfg, zap.NewNop())
	runPiped(t, p, pipeline.Config{Exchanges: []pipeline.ExchangeConsumer{o}})
	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(5, 5))
	for corr := range int32(requests) {
		if _, err := c.Write(testRequest(rng, 12, corr, 16, 0, 32)); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("round trip %d with the observer stuck: %v", corr, err)
		}
	}
	if drops := p.Stats().ObserverDrops; drops < requests-2 {
		t.Errorf("observer drops %d; want at least %d (queue of 1, one exchange in Append)", drops, requests-2)
	}
	close(o.release)
	waitFor(t, 10*time.Second, "observed plus dropped to account for every exchange", func() bool {
		return o.seen.Load()+int64(p.Stats().ObserverDrops) == requests
	})
}

// TestObserverQueueBytes: with the observer stuck, exchanges beyond
// ObserverQueueBytes are dropped even though the queue has room for them,
// except when the queue holds nothing; traffic goes on.
func TestObserverQueueBytes(t *testing.T) {
	const requests, pad = 10, 600
	broker := startFakeBroker(t, "127.0.0.1:0")
	o := &blockingConsumer{release: make(chan struct{})}
	cfg := fakeConfig(broker.addr())
	cfg.ObserverQueueBytes = 1 << 10 // one exchange of ~650 bytes, not two
	p := newProxy(t, cfg, zap.NewNop())
	// The queue's own reader, not the pipeline: the pipeline may ask for
	// the next exchange (giving back the first's bytes) before it hands
	// the first to a consumer, and let a second in.
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	read := make(chan struct{})
	go func() {
		defer close(read)
		for {
			x, _, err := p.Queue().Next()
			if err != nil {
				return
			}
			if x != nil { // not a tick
				o.Append(x)
			}
		}
	}()
	t.Cleanup(func() {
		select {
		case <-o.release:
		default:
			close(o.release) // the test failed before releasing the reader
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		<-read
	})
	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(6, 6))
	for corr := range int32(requests) {
		if _, err := c.Write(testRequest(rng, 12, corr, 16, 0, pad)); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("round trip %d with the observer stuck: %v", corr, err)
		}
	}
	if drops := p.Stats().ObserverDrops; drops != requests-1 {
		t.Errorf("observer drops %d; want %d (only the first exchange fits the bytes)", drops, requests-1)
	}
	close(o.release)
	waitFor(t, 10*time.Second, "the one queued exchange to be observed", func() bool { return o.seen.Load() == 1 })
	waitFor(t, 10*time.Second, "the queue's bytes to be released", func() bool { return p.stats.queuedBytes.Load() == 0 })
	if _, err := c.Write(testRequest(rng, 12, requests, 16, 0, pad)); err != nil {
		t.Fatal(err)
	}
	if _, err := readTestFrame(c); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, "an exchange observed once the queue is empty", func() bool { return o.seen.Load() == 2 })
}

// TestObservedBeforeTheClientReads: an exchange is queued before its
// response goes to the client, so that what the client does next, on any
// connection, is queued after it (the pipeline reads cause before effect).
// The client here never reads a response far larger than the sockets
// hold: the exchange must reach the queue all the same.
func TestObservedBeforeTheClientReads(t *testing.T) {
	const size = 16 << 20
	broker := startFakeBroker(t, "127.0.0.1:0")
	cfg := fakeConfig(broker.addr())
	cfg.MaxObservedFrameSize = 2 * size
	p := newProxy(t, cfg, zap.NewNop())
	seen := make(chan *decode.Exchange, 1)
	runPiped(t, p, pipeline.Config{Inspect: func(x *decode.Exchange, _ []decode.Event, _ error) {
		select {
		case seen <- x:
		default:
		}
	}})
	c := dial(t, p.Addr().String())
	if err := c.(*net.TCPConn).SetReadBuffer(4 << 10); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Write(testRequest(rand.New(rand.NewPCG(7, 7)), 12, 1, size, 0, 0)); err != nil {
		t.Fatal(err)
	}
	select {
	case x := <-seen:
		if x.CorrelationID != 1 || len(x.Response) != 4+size {
			t.Errorf("observed corr %d with a response of %d bytes; want corr 1, %d bytes", x.CorrelationID, len(x.Response), 4+size)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the exchange was not observed while its client had not read the response")
	}
}
