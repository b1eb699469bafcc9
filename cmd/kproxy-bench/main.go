// Command kproxy-bench is kproxy's load harness. It starts an in-process
// kfake cluster and an in-process kproxy in front of it, then measures
// produce and fetch throughput, produce latency and memory per idle
// connection, direct to the cluster and through kproxy, alternating rounds
// so both see the same machine, and prints the ratios.
//
// Everything runs on loopback. Figures from a shared machine are noisy:
// compare the two columns of one run, not runs with each other.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
)

func main() {
	var opts options
	flag.IntVar(&opts.records, "records", 50000, "records produced and fetched per round")
	flag.IntVar(&opts.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&opts.rounds, "rounds", 3, "rounds per mode, alternating direct and proxied")
	flag.IntVar(&opts.latencyN, "latency-requests", 2000, "sequential single-record produce requests per round for latency")
	flag.IntVar(&opts.idleConns, "idle-conns", 500, "idle connections opened to measure memory per connection")
	flag.Parse()
	if err := run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "kproxy-bench:", err)
		os.Exit(1)
	}
}

type options struct {
	records, size, rounds, latencyN, idleConns int
}

func run(ctx context.Context, opts options) error {
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation(), kfake.DefaultNumPartitions(3))
	if err != nil {
		return fmt.Errorf("start kfake: %w", err)
	}
	defer cluster.Close()

	p, err := proxy.New(proxy.Config{
		Listen:    "127.0.0.1:0",
		Upstreams: cluster.ListenAddrs(),
	}, zap.NewNop())
	if err != nil {
		return fmt.Errorf("start kproxy: %w", err)
	}
	// The pipeline decodes what the proxy observes, as serve's does.
	piped := make(chan error, 1)
	go func() { piped <- pipeline.New(pipeline.Config{}).Run(context.Background(), p.Queue()) }() // ends with the queue
	pctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p.Run(pctx) }()
	defer func() { stop(); <-done; <-piped }()

	modes := []mode{
		{name: "direct", seed: cluster.ListenAddrs()[0]},
		{name: "kproxy", seed: p.Addr().String()},
	}
	results := map[string]*result{"direct": {}, "kproxy": {}}
	// Memory first, while the heap holds no produced data yet.
	for _, m := range modes {
		per, err := idleConnMemory(m.seed, opts.idleConns)
		if err != nil {
			return fmt.Errorf("%s idle connections: %w", m.name, err)
		}
		results[m.name].idleBytes = per
	}
	for round := 0; round < opts.rounds; round++ {
		for _, m := range modes {
			topic := fmt.Sprintf("bench-%s-%d", m.name, round)
			if err := measureRound(ctx, m, topic, opts, results[m.name]); err != nil {
				return fmt.Errorf("%s round %d: %w", m.name, round, err)
			}
		}
	}
	report(os.Stdout, opts, results["direct"], results["kproxy"])
	return nil
}

// mode is one way of reaching the cluster.
type mode struct {
	name string
	seed string
}

// result accumulates one mode's figures over all rounds.
type result struct {
	produceMBps []float64
	fetchMBps   []float64
	latencies   []time.Duration
	idleBytes   float64
}

func measureRound(ctx context.Context, m mode, topic string, opts options, r *result) error {
	bytes := float64(opts.records * opts.size)
	d, err := produce(ctx, m.seed, topic, opts.records, opts.size)
	if err != nil {
		return err
	}
	r.produceMBps = append(r.produceMBps, bytes/d.Seconds()/1e6)
	d, err = fetch(ctx, m.seed, topic, opts.records)
	if err != nil {
		return err
	}
	r.fetchMBps = append(r.fetchMBps, bytes/d.Seconds()/1e6)
	lat, err := produceLatency(ctx, m.seed, topic+"-latency", opts.latencyN)
	if err != nil {
		return err
	}
	r.latencies = append(r.latencies, lat...)
	return nil
}
