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

// reportTLS compares the TLS modes with each other and with plaintext:
// throughput ratios, and CPU seconds per GiB moved (produced plus
// fetched; the whole process, so clients and kfake are in every column
// and the differences are kproxy's and TLS's).
func reportTLS(w io.Writer, results map[string]*result) {
	names := []string{"direct", "kproxy", "direct TLS", "kproxy TLS"}
	fmt.Fprintf(w, "\n%-24s", "TLS")
	for _, n := range names {
		fmt.Fprintf(w, " %12s", n)
	}
	fmt.Fprintln(w)
	line := func(label string, f func(r *result) float64, format string) {
		fmt.Fprintf(w, "%-24s", label)
		for _, n := range names {
			fmt.Fprintf(w, " "+format, f(results[n]))
		}
		fmt.Fprintln(w)
	}
	line("produce MB/s (median)", func(r *result) float64 { return median(r.produceMBps) }, "%12.1f")
	line("fetch MB/s (median)", func(r *result) float64 { return median(r.fetchMBps) }, "%12.1f")
	line("CPU s per GiB moved", func(r *result) float64 { return r.cpu.Seconds() / (r.moved / (1 << 30)) }, "%12.2f")
	ratio := func(label, num, den string) {
		n, d := results[num], results[den]
		fmt.Fprintf(w, "%-32s produce %6.1f%%  fetch %6.1f%%  CPU/GiB %5.2fx\n", label,
			100*median(n.produceMBps)/median(d.produceMBps), 100*median(n.fetchMBps)/median(d.fetchMBps),
			(n.cpu.Seconds()/n.moved)/(d.cpu.Seconds()/d.moved))
	}
	ratio("kproxy TLS / direct TLS", "kproxy TLS", "direct TLS")
	ratio("kproxy TLS / kproxy plaintext", "kproxy TLS", "kproxy")
	ratio("kproxy / direct (plaintext)", "kproxy", "direct")
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
