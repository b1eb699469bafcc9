package proxy

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
)

var _ pipeline.ExchangeConsumer = (*journal.Writer)(nil)

// dropRecorder is a pipeline consumer of exchanges that writes down, in
// order, each exchange (by correlation id) and each drop notice.
type dropRecorder struct {
	mu  sync.Mutex
	seq []string
	sum uint64
}

func (r *dropRecorder) Append(x *decode.Exchange) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq = append(r.seq, fmt.Sprintf("x%d", x.CorrelationID))
}

func (r *dropRecorder) Dropped(n uint64, _ time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.seq = append(r.seq, fmt.Sprintf("drop%d", n))
	r.sum += n
}

// TestDropsReachTheJournal: with the pipeline stuck and a queue of one,
// exchanges are dropped; the pipeline's consumers of exchanges (a recorder
// and a journal) are told, in order, before the next exchange delivered; the journal read back
// counts exactly the proxy's drops; and the drops are logged.
func TestDropsReachTheJournal(t *testing.T) {
	const requests = 20
	broker := startFakeBroker(t, "127.0.0.1:0")
	dir := t.TempDir()
	w, err := journal.Open(dir, journal.Options{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	rec := &dropRecorder{}
	stuck := &blockingConsumer{release: make(chan struct{})}
	cfg := fakeConfig(broker.addr())
	cfg.ObserverQueue = 1
	log, logs := observedLogger()
	p := newProxy(t, cfg, log)
	p.dropLogEvery = 20 * time.Millisecond
	pl := pipeline.New(pipeline.Config{Exchanges: []pipeline.ExchangeConsumer{w, rec, stuck}})
	piped := make(chan error, 1)
	go func() { piped <- pl.Run(context.Background(), p.Queue()) }() // ends with the queue, after Run
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx) }()
	var stopOnce sync.Once
	var runErr error
	stop := func() error {
		stopOnce.Do(func() {
			cancel()
			runErr = errors.Join(<-done, <-piped)
		})
		return runErr
	}
	defer stop()

	c := dial(t, p.Addr().String())
	rng := rand.New(rand.NewPCG(7, 7))
	heartbeat := func(corr int32) {
		t.Helper()
		if _, err := c.Write(testRequest(rng, 12, corr, 16, 0, 32)); err != nil {
			t.Fatal(err)
		}
		if _, err := readTestFrame(c); err != nil {
			t.Fatalf("round trip %d: %v", corr, err)
		}
	}
	for corr := range int32(requests) {
		heartbeat(corr)
	}
	drops := p.Stats().ObserverDrops
	if drops < requests-2 {
		t.Fatalf("observer drops %d; want at least %d (queue of 1, one exchange in Append)", drops, requests-2)
	}
	waitFor(t, 10*time.Second, "the drops to be logged", func() bool {
		for _, e := range logs.FilterMessageSnippet("observer queue full").All() {
			if e.ContextMap()["dropped_total"] == drops {
				return true
			}
		}
		return false
	})
	close(stuck.release)
	waitFor(t, 10*time.Second, "the queue to drain", func() bool { return stuck.seen.Load() == requests-int64(drops) })
	heartbeat(requests) // queued after the drops: the notice comes first
	waitFor(t, 10*time.Second, "the last exchange to be observed", func() bool { return stuck.seen.Load() == requests+1-int64(drops) })

	rec.mu.Lock()
	seq := append([]string(nil), rec.seq...)
	rec.mu.Unlock()
	wantTail := []string{fmt.Sprintf("drop%d", drops), fmt.Sprintf("x%d", requests)}
	if len(seq) < 2 || seq[len(seq)-2] != wantTail[0] || seq[len(seq)-1] != wantTail[1] {
		t.Fatalf("observer saw %v; want it to end with %v", seq, wantTail)
	}

	if err := stop(); err != nil { // the last drop notice, if any, is delivered before the pipeline ends
		t.Fatal(err)
	}
	if rec.sum != drops {
		t.Errorf("consumer told of %d drops; proxy counted %d", rec.sum, drops)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	r, err := journal.OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var n uint64
	for {
		if _, err := r.Next(); err != nil {
			break
		}
		n++
	}
	rs := r.Stats()
	if rs.Dropped != drops || n+rs.Dropped != requests+1 {
		t.Errorf("journal holds %d exchanges and %d dropped; want %d dropped, %d in all", n, rs.Dropped, drops, requests+1)
	}
}
