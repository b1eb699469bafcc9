package main

import (
	"sync"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// liveTimeline is the timeline engine fed live by the proxy. The proxy's
// observer goroutine calls Observe; Report may be called from elsewhere
// (the admin server) at the same time, so the engine sits behind a mutex.
type liveTimeline struct {
	mu     sync.Mutex
	engine *timeline.Engine
}

var _ proxy.Observer = (*liveTimeline)(nil)

// newLiveTimeline returns a live timeline with cfg; cfg.OnEntry is called
// on the proxy's observer goroutine with the engine locked.
func newLiveTimeline(cfg timeline.Config) *liveTimeline {
	return &liveTimeline{engine: timeline.New(cfg)}
}

// Observe feeds one exchange's events to the engine.
func (l *liveTimeline) Observe(x *decode.Exchange, events []decode.Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.engine.Observe(x, events)
}

// Report is the timeline so far.
func (l *liveTimeline) Report() *timeline.Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.engine.Report()
}

// Close settles what is pending as of the last event seen (not the wall
// clock, so that replaying the journal of the same traffic gives the same
// report) and returns the final report.
func (l *liveTimeline) Close() *timeline.Report {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.engine.Close(time.Time{})
	return l.engine.Report()
}
