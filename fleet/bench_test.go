package fleet

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// BenchmarkPipelineWithPublisher measures what publishing adds to the
// pipeline's work per exchange: the generator's realistic traffic decoded
// (the pipeline's own work) with and without the Publisher handing each
// exchange to a kfake cluster, the waits for the cluster untimed. The
// client compresses and sends on its own goroutines, which compete for
// the CPU all the same. Run the two side by side and compare:
// go test -run x -bench PipelineWithPublisher -count 6 ./fleet
func BenchmarkPipelineWithPublisher(b *testing.B) {
	const n, flushEvery = 20000, 50000
	tr := synth.New(synth.Options{Seed: 1, Groups: 200, MaxMembers: 12})
	xs := make([]*decode.Exchange, n)
	for i := range xs {
		xs[i] = tr.Next()
	}
	for _, publish := range []bool{false, true} {
		name := "decode"
		if publish {
			name = "decode+publish"
		}
		b.Run(name, func(b *testing.B) {
			var p *Publisher
			if publish {
				c := startCluster(b)
				var err error
				p, err = NewPublisher(PublisherConfig{Topic: testTopic, Instance: "zone-a",
					Client: []kgo.Opt{kgo.SeedBrokers(c.ListenAddrs()...)}, MaxBufferedRecords: flushEvery,
					MaxBufferedBytes: 256 << 20}, zap.NewNop())
				if err != nil {
					b.Fatal(err)
				}
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if err := EnsureTopic(ctx, p.cl, testTopic, 12, 0); err != nil {
					b.Fatal(err)
				}
				cancel()
				defer p.Close(10 * time.Second)
			}
			dec := decode.NewDecoder()
			var events []decode.Event
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				x := xs[i%n]
				events, _ = dec.DecodeAppend(events[:0], x)
				if p != nil {
					p.AddDecoded(&decode.Decoded{X: x, Events: events})
					if i%flushEvery == flushEvery-1 {
						// Within the buffer, untimed: what is measured is the
						// pipeline goroutine's work (encoding, handing to the
						// client), not waiting for the cluster.
						b.StopTimer()
						p.cl.Flush(context.Background()) //nolint:errcheck // a benchmark
						b.StartTimer()
					}
				}
			}
			b.StopTimer()
			if p != nil && p.Stats().Dropped > 0 {
				b.Errorf("%d dropped", p.Stats().Dropped)
			}
		})
	}
}
