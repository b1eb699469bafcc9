package synth

import (
	"testing"
	"time"
)

// BenchmarkTraffic generates the exchanges of the traffic kproxy-journalgen
// -live runs for serve's memory (realistic mix, 2,000 groups, heartbeats
// every 30 s, 100 short-lived groups): the harness's own share of such a
// run.
func BenchmarkTraffic(b *testing.B) {
	tr := New(Options{Seed: 1, Heartbeat: 30 * time.Second, Jobs: 100})
	b.ReportAllocs()
	for b.Loop() {
		tr.Next()
	}
}
