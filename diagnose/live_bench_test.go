package diagnose

import (
	"context"
	"io"
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

// BenchmarkLive feeds generated traffic (internal/synth's realistic mix,
// 200 groups, 200,000 exchanges: about the traffic of a few minutes) through
// the pipeline as serve builds it: the live timeline alone
// (diagnosis=off), or with the live diagnosis beside it (diagnosis=on),
// whose findings Live publishes as the exchanges reveal them. It reports
// exchanges per second. Run it for two commits side by side (go test -c at
// each, rounds alternated) to compare them.
//
//	go test ./diagnose -run '^$' -bench BenchmarkLive -benchtime 3x
func BenchmarkLive(b *testing.B) {
	tr := synth.New(synth.Options{Seed: 1, Groups: 200})
	xs := make([]*decode.Exchange, 200_000)
	for i := range xs {
		xs[i] = tr.Next()
	}
	for _, on := range []bool{false, true} {
		name := "diagnosis=off"
		if on {
			name = "diagnosis=on"
		}
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				var cfg pipeline.Config
				var closeAt func(time.Time)
				if on {
					l := NewLive(timeline.Config{}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge}, func(Finding) {}, func(string, []Finding) {})
					cfg.Events, cfg.Decoded = []pipeline.EventConsumer{l.Timeline()}, []pipeline.DecodedConsumer{l}
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
