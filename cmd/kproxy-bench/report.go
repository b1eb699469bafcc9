package main

import (
	"fmt"
	"io"
	"slices"
	"time"
)

func report(w io.Writer, opts options, direct, proxied *result) {
	fmt.Fprintf(w, "kproxy-bench: %d rounds, %d records of %d B per round, %d latency probes per round, %d idle connections\n\n",
		opts.rounds, opts.records, opts.size, opts.latencyN, opts.idleConns)
	fmt.Fprintf(w, "%-24s %12s %12s %8s\n", "", "direct", "kproxy", "ratio")
	row := func(name string, d, p float64, unit string) {
		fmt.Fprintf(w, "%-24s %10.1f%-2s %10.1f%-2s %7.1f%%\n", name, d, unit, p, unit, 100*p/d)
	}
	row("produce MB/s (median)", median(direct.produceMBps), median(proxied.produceMBps), "")
	row("fetch MB/s (median)", median(direct.fetchMBps), median(proxied.fetchMBps), "")
	dp50, dp99 := percentile(direct.latencies, 50), percentile(direct.latencies, 99)
	pp50, pp99 := percentile(proxied.latencies, 50), percentile(proxied.latencies, 99)
	fmt.Fprintf(w, "%-24s %12s %12s %8s\n", "produce latency p50", dp50, pp50, pp50-dp50)
	fmt.Fprintf(w, "%-24s %12s %12s %8s\n", "produce latency p99", dp99, pp99, pp99-dp99)
	fmt.Fprintf(w, "%-24s %10.0f B %10.0f B\n", "memory / idle conn", direct.idleBytes, proxied.idleBytes)
	fmt.Fprintf(w, "\nkproxy's own memory per idle connection: %.1f KiB (kproxy column minus direct column)\n",
		(proxied.idleBytes-direct.idleBytes)/1024)
	fmt.Fprintf(w, "added latency: p50 %v, p99 %v\n", pp50-dp50, pp99-dp99)
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

func percentile(ds []time.Duration, p int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	i := (len(s)*p + 99) / 100
	if i > 0 {
		i--
	}
	return s[i].Round(time.Microsecond)
}
