package main

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// readerPaths are what the admin readers ask for, in turn: the timeline
// as JSON and the findings (the largest pages), the timeline as text, the
// groups and the metrics, as a Kafka UI, an operator's browser and a
// scraper do.
var readerPaths = []string{"/api/timeline?limit=1000", "/timeline", "/api/groups", "/api/diagnosis?limit=1000", "/metrics"}

// failurePause is how long a reader waits after a failed request, so that
// a dead admin server is not asked again in a busy loop.
const failurePause = 10 * time.Millisecond

// readers are n clients reading a kproxy's admin API as fast as it
// answers, from start until stop.
type readers struct {
	stopped  chan struct{}
	wg       sync.WaitGroup
	requests atomic.Int64
	bytes    atomic.Int64
	failures atomic.Int64
}

// startReaders starts n readers of the admin server at addr.
func startReaders(addr string, n int) *readers {
	r := &readers{stopped: make(chan struct{})}
	for i := range n {
		r.wg.Go(func() {
			for j := i; ; j++ {
				select {
				case <-r.stopped:
					return
				default:
				}
				resp, err := http.Get("http://" + addr + readerPaths[j%len(readerPaths)])
				var n int64
				if err == nil {
					n, _ = io.Copy(io.Discard, resp.Body)
					resp.Body.Close()
				}
				if err != nil || resp.StatusCode != http.StatusOK {
					r.failures.Add(1)
					select {
					case <-r.stopped:
					case <-time.After(failurePause):
					}
					continue
				}
				r.requests.Add(1)
				r.bytes.Add(n)
			}
		})
	}
	return r
}

// stop stops the readers and waits for their requests in flight.
func (r *readers) stop() {
	close(r.stopped)
	r.wg.Wait()
}
