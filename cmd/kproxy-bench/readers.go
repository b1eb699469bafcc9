package main

import (
	"io"
	"net/http"
	"sync"
	"sync/atomic"
)

// readerPaths are what the admin readers ask for, in turn: the timeline
// as JSON (the largest page) and as text, the groups, the findings and
// the metrics, as a Kafka UI, an operator's browser and a scraper do.
var readerPaths = []string{"/api/timeline?limit=1000", "/timeline", "/api/groups", "/api/diagnosis", "/metrics"}

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
				if err != nil {
					r.failures.Add(1)
					continue
				}
				n, _ := io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					r.failures.Add(1)
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
