// Command kproxy-bench is kproxy's load harness. It measures produce and
// fetch throughput and produce latency direct to a kfake cluster and
// through kproxy, alternating rounds so both see the same machine, and
// prints the ratios.
//
// By default the broker (`kproxy-bench broker`, kfake), kproxy (the
// `kproxy serve` binary, built once) and the franz-go client of each phase
// (`kproxy-bench client`) run as three processes, as users run them, and
// it reports kproxy's CPU seconds per GiB of records produced and fetched
// (and per GiB forwarded, both phases together), its CPU per acks=all
// produce request, and its resident memory. Latency is each synchronous
// single-record produce (ProduceSync) timed on its own, on a connection
// opened by an untimed first call. -inprocess runs kfake, kproxy and the clients in this process
// instead, for profiling, and also measures memory per idle connection.
//
// Everything runs on loopback. Figures from a shared machine are noisy:
// compare the columns of one run, not runs with each other.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
)

func main() {
	if runSubcommand(os.Args[1:]) {
		return
	}
	var opts options
	var po procOptions
	var inprocess bool
	flag.IntVar(&opts.records, "records", 50000, "records produced and fetched per round")
	flag.IntVar(&opts.size, "size", 1024, "record value size in bytes")
	flag.IntVar(&opts.rounds, "rounds", 3, "rounds per mode, alternating direct and proxied")
	flag.IntVar(&opts.latencyN, "latency-requests", 2000, "sequential single-record produce requests per round for latency")
	flag.IntVar(&opts.idleConns, "idle-conns", 500, "idle connections opened to measure memory per connection")
	flag.BoolVar(&opts.noCompression, "no-compression", false, "produce uncompressed batches, so that the bytes on the wire are the records' (by default franz-go compresses with snappy, and the benchmark's zero-filled values shrink many times)")
	flag.BoolVar(&opts.tls, "tls", false, "measure TLS: direct to a TLS cluster, and through kproxy with TLS on both sides (in-process: besides plaintext; three processes: instead of it)")
	flag.BoolVar(&inprocess, "inprocess", false, "run kfake, kproxy and the clients in this process (for profiling), and measure memory per idle connection")
	flag.StringVar(&po.kproxy, "kproxy", "", "three processes: the kproxy binary to run; empty builds ./cmd/kproxy")
	flag.Func("compare", "three processes: NAME=PATH, another kproxy binary alternated with the first (repeatable)", func(s string) error {
		po.compare = append(po.compare, s)
		return nil
	})
	flag.Func("forwarder", "three processes: NAME=COMMAND, a plain TCP forwarder alternated with kproxy, the floor of what any proxy adds (repeatable): "+
		"a sh -c command that execs a forwarder listening on {listen} (or {listen_port}) and forwarding every connection to {upstream} "+
		"({upstream_host}, {upstream_port}); {self} is this binary (`exec {self} forward -listen {listen} -to {upstream}`, "+
		"an io.Copy pair per connection), {dir} the run's directory; its clients dial it for every broker", func(s string) error {
		po.forwarders = append(po.forwarders, s)
		return nil
	})
	flag.IntVar(&po.ports, "ports", 0, "three processes: take the loopback ports of the broker, the kproxies and the forwarders from this one up (0: any free port)")
	cpuProfile := flag.String("cpuprofile", "", "in-process: write a CPU profile of the run to this file")
	flag.BoolVar(&po.keepLogs, "keep-logs", false, "three processes: keep kproxy's logs and the run's files")
	flag.IntVar(&po.readers, "admin-readers", 0, "three processes: also run each kproxy's phases while this many clients read its admin API as fast as it answers (timeline JSON and text, groups, findings, metrics), as the way NAME+api, after -fill-groups consumer groups went through it")
	flag.IntVar(&po.fillGroups, "fill-groups", 200, "with -admin-readers: consumer groups joined and left five times each through every kproxy before the rounds, so that its timeline has something to serve")
	flag.Parse()
	run := run
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "kproxy-bench: cpu profile:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if !inprocess {
		run = func(ctx context.Context, opts options) error { return runProcesses(ctx, os.Stdout, opts, po) }
	}
	if err := run(context.Background(), opts); err != nil {
		fmt.Fprintln(os.Stderr, "kproxy-bench:", err)
		pprof.StopCPUProfile()
		os.Exit(1)
	}
}

// runSubcommand runs `kproxy-bench broker`, `kproxy-bench client` or
// `kproxy-bench forward`, the processes the harness starts, and reports
// whether args named one. It exits on error.
func runSubcommand(args []string) bool {
	if len(args) == 0 {
		return false
	}
	run, ok := map[string]func([]string) error{"broker": runBroker, "client": runClient, "forward": runForward}[args[0]]
	if !ok {
		return false
	}
	if err := run(args[1:]); err != nil {
		fmt.Fprintf(os.Stderr, "kproxy-bench %s: %v\n", args[0], err)
		os.Exit(1)
	}
	return true
}

type options struct {
	records, size, rounds, latencyN, idleConns int
	tls, noCompression                         bool
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
		if err := measureIdle(m, opts, results[m.name]); err != nil {
			return err
		}
	}
	if opts.tls {
		dir, err := os.MkdirTemp("", "kproxy-bench-tls-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		tctx, tstop := context.WithCancel(ctx)
		tlsModes, tdone, closeCluster, err := tlsModes(tctx, dir)
		if err != nil {
			tstop()
			return err
		}
		defer func() { tstop(); <-tdone; closeCluster() }()
		for _, m := range tlsModes {
			results[m.name] = &result{}
		}
		modes = append(modes, tlsModes...)
	}
	for round := 0; round < opts.rounds; round++ {
		for _, m := range modes {
			topic := fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(m.name, " ", "-"), round)
			if err := measureRound(ctx, m, topic, opts, results[m.name]); err != nil {
				return fmt.Errorf("%s round %d: %w", m.name, round, err)
			}
		}
	}
	report(os.Stdout, opts, results["direct"], results["kproxy"])
	if opts.tls {
		reportTLS(os.Stdout, results)
	}
	return nil
}

// measureIdle measures memory per idle connection of a plaintext mode.
func measureIdle(m mode, opts options, r *result) error {
	{
		per, err := idleConnMemory(m.seed, opts.idleConns)
		if err != nil {
			return fmt.Errorf("%s idle connections: %w", m.name, err)
		}
		r.idleBytes = per
	}
	return nil
}

// mode is one way of reaching the cluster.
type mode struct {
	name string
	seed string
	opts []kgo.Opt // the client's, for TLS
}

// result accumulates one mode's figures over all rounds.
type result struct {
	produceMBps []float64
	fetchMBps   []float64
	latencies   []time.Duration
	idleBytes   float64
	// cpu is this process's CPU time (user and system: clients, kproxy
	// and kfake together) while producing and fetching, and moved the
	// bytes produced and fetched meanwhile.
	cpu   time.Duration
	moved float64
}

func measureRound(ctx context.Context, m mode, topic string, opts options, r *result) error {
	bytes := float64(opts.records * opts.size)
	cpu := cpuTime()
	d, err := produce(ctx, m, topic, opts.records, opts.size, opts.noCompression)
	if err != nil {
		return err
	}
	r.produceMBps = append(r.produceMBps, bytes/d.Seconds()/1e6)
	d, err = fetch(ctx, m, topic, opts.records)
	if err != nil {
		return err
	}
	r.cpu += cpuTime() - cpu
	r.moved += 2 * bytes
	r.fetchMBps = append(r.fetchMBps, bytes/d.Seconds()/1e6)
	lat, err := produceLatency(ctx, m, topic+"-latency", opts.latencyN)
	if err != nil {
		return err
	}
	r.latencies = append(r.latencies, lat...)
	// kfake keeps every record in memory: drop the round's topics so that
	// long runs do not grow the heap.
	return deleteTopics(ctx, m, topic, topic+"-latency")
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
