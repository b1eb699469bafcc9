package diagnose

import (
	"context"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// sliceSource hands out exchanges from a slice, then io.EOF.
type sliceSource struct {
	xs []*decode.Exchange
	i  int
}

func (s *sliceSource) Next() (*decode.Exchange, uint64, error) {
	if s.i == len(s.xs) {
		return nil, 0, io.EOF
	}
	s.i++
	return s.xs[s.i-1], 0, nil
}

// synthExchanges is n exchanges of internal/synth's realistic mix for
// groups groups.
func synthExchanges(groups, n int) []*decode.Exchange {
	tr := synth.New(synth.Options{Seed: 1, Groups: groups})
	xs := make([]*decode.Exchange, n)
	for i := range xs {
		xs[i] = tr.Next()
	}
	return xs
}

// feedServe runs xs through the pipeline as serve builds it, with the live
// diagnosis or without, closes it, and returns what must stay reachable
// for its memory to be measured.
func feedServe(b *testing.B, xs []*decode.Exchange, diagnosis bool) any {
	var cfg pipeline.Config
	var closeAt func(time.Time)
	var keep any
	if diagnosis {
		l := NewLive(timeline.Config{}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge}, func(Finding) {}, func(string, []Finding) {})
		cfg.Events, cfg.Decoded = []pipeline.EventConsumer{l}, []pipeline.DecodedConsumer{l}
		closeAt, keep = l.Close, l
	} else {
		tl := timeline.NewLive(timeline.Config{}, timeline.DefaultRetention)
		cfg.Events = []pipeline.EventConsumer{tl}
		closeAt, keep = tl.Close, tl
	}
	if err := pipeline.New(cfg).Run(context.Background(), &sliceSource{xs: xs}); err != nil {
		b.Fatal(err)
	}
	closeAt(time.Time{})
	return keep
}

// BenchmarkLiveCost is what the live diagnosis costs serve: each round
// feeds the same generated traffic (2,000 groups, 400,000 exchanges)
// through serve's pipeline without the diagnosis and with it, alternately,
// and reports the exchanges per second of each, their ratio
// (diagnosis-ratio: with / without) and the heap each holds once the
// traffic is in (retained-MB, after a garbage collection).
//
//	go test ./diagnose -run '^$' -bench BenchmarkLiveCost -benchtime 3x
func BenchmarkLiveCost(b *testing.B) {
	xs := synthExchanges(2000, 400_000)
	var took [2]time.Duration
	var kept [2]uint64
	for i := 0; b.Loop(); i++ {
		for j := range 2 {
			on := (i+j)%2 == 1 // alternate which goes first
			k := 0
			if on {
				k = 1
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			base := ms.HeapAlloc
			start := time.Now()
			keep := feedServe(b, xs, on)
			took[k] += time.Since(start)
			runtime.GC()
			runtime.ReadMemStats(&ms)
			kept[k] = max(kept[k], ms.HeapAlloc-min(ms.HeapAlloc, base))
			runtime.KeepAlive(keep)
		}
	}
	n := float64(len(xs)) * float64(b.N)
	b.ReportMetric(n/took[0].Seconds(), "off-exchanges/s")
	b.ReportMetric(n/took[1].Seconds(), "on-exchanges/s")
	b.ReportMetric(took[0].Seconds()/took[1].Seconds(), "diagnosis-ratio")
	b.ReportMetric(float64(kept[0])/1e6, "off-retained-MB")
	b.ReportMetric(float64(kept[1])/1e6, "on-retained-MB")
	b.ReportMetric(0, "ns/op")
}

// BenchmarkLive feeds generated traffic (200,000 exchanges of
// internal/synth) through the pipeline as serve builds it: the live
// timeline alone (diagnosis=off), or with the live diagnosis beside it
// (diagnosis=on), whose findings Live publishes as the exchanges reveal
// them. The traffic is the realistic mix of 200 groups (about the traffic
// of a few minutes), the rebalance-heavy mix of 200 groups (each
// rebalancing every 15 s to 2 minutes), and the rebalance-heavy mix of 20
// groups of up to 200 members (a rebalance moves hundreds of partitions,
// and each new owner's first Fetch settles a handover). It reports
// exchanges per second. Run it for two commits side by side (go test -c at
// each, rounds alternated) to compare them.
//
//	go test ./diagnose -run '^$' -bench BenchmarkLive -benchtime 3x
func BenchmarkLive(b *testing.B) {
	for _, tc := range []struct {
		name            string
		mix             synth.Mix
		groups, members int
	}{
		{"realistic", synth.Realistic, 200, 32},
		{"rebalancing", synth.RebalanceHeavy, 200, 32},
		{"rebalancing-large", synth.RebalanceHeavy, 20, 200},
	} {
		tr := synth.New(synth.Options{Seed: 1, Groups: tc.groups, MaxMembers: tc.members, Mix: tc.mix})
		xs := make([]*decode.Exchange, 200_000)
		for i := range xs {
			xs[i] = tr.Next()
		}
		for _, on := range []bool{false, true} {
			name := tc.name + "/diagnosis=off"
			if on {
				name = tc.name + "/diagnosis=on"
			}
			b.Run(name, func(b *testing.B) {
				b.ReportAllocs()
				start := time.Now()
				for b.Loop() {
					var cfg pipeline.Config
					var closeAt func(time.Time)
					if on {
						l := NewLive(timeline.Config{}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge}, func(Finding) {}, func(string, []Finding) {})
						cfg.Events, cfg.Decoded = []pipeline.EventConsumer{l}, []pipeline.DecodedConsumer{l}
						closeAt = l.Close
					} else {
						tl := timeline.NewLive(timeline.Config{}, timeline.DefaultRetention)
						cfg.Events = []pipeline.EventConsumer{tl}
						closeAt = tl.Close
					}
					if err := pipeline.New(cfg).Run(context.Background(), &sliceSource{xs: xs}); err != nil {
						b.Fatal(err)
					}
					closeAt(time.Time{})
				}
				b.ReportMetric(float64(len(xs))*float64(b.N)/time.Since(start).Seconds(), "exchanges/s")
			})
		}
	}
}
