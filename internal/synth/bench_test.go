package synth

import (
	"runtime"
	"testing"
	"time"
)

// liveOptions is the traffic kproxy-journalgen -live runs for serve's
// memory: realistic mix, 2,000 groups, heartbeats every 30 s, 100
// short-lived groups.
var liveOptions = Options{Seed: 1, Heartbeat: 30 * time.Second, Jobs: 100}

// BenchmarkTraffic generates the exchanges of liveOptions: the harness's
// own share of a -live run's CPU and allocation.
func BenchmarkTraffic(b *testing.B) {
	tr := New(liveOptions)
	b.ReportAllocs()
	for b.Loop() {
		tr.Next()
	}
}

// BenchmarkTrafficHeld runs liveOptions' traffic for an hour of traffic
// time and reports the heap the Traffic then holds (MB-held): the
// generator's own share of a -live run's live heap.
func BenchmarkTrafficHeld(b *testing.B) {
	var ms runtime.MemStats
	for b.Loop() {
		tr := New(liveOptions)
		first := tr.Next().CompletedAt()
		for tr.Next().CompletedAt().Sub(first) < time.Hour {
		}
		runtime.GC()
		runtime.ReadMemStats(&ms)
		held := ms.HeapAlloc
		runtime.KeepAlive(tr)
		tr = nil
		runtime.GC()
		runtime.ReadMemStats(&ms)
		b.ReportMetric(float64(held-ms.HeapAlloc)/(1<<20), "MB-held")
	}
}
