package main

import (
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
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

// reportProcesses prints the three-process harness's figures: one column
// per way of reaching the broker, then each kproxy's ratios to direct,
// paired round by round (median and range of the pairs).
func reportProcesses(w io.Writer, opts options, names []string, rs map[string]*procResult) {
	variant := "plaintext"
	if opts.tls {
		variant = "TLS on both sides"
	}
	fmt.Fprintf(w, "kproxy-bench, three processes (%s): %d rounds, %d records of %d B per round (%s), %d latency probes per round\n\n",
		variant, opts.rounds, opts.records, opts.size, map[bool]string{true: "uncompressed", false: "snappy"}[opts.noCompression], opts.latencyN)
	fmt.Fprintf(w, "%-30s", "")
	for _, n := range names {
		fmt.Fprintf(w, " %14s", n)
	}
	fmt.Fprintln(w)
	line := func(label string, f func(r *procResult) string) {
		fmt.Fprintf(w, "%-30s", label)
		for _, n := range names {
			fmt.Fprintf(w, " %14s", f(rs[n]))
		}
		fmt.Fprintln(w)
	}
	perGiB := func(d time.Duration, bytes float64) string {
		if bytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", d.Seconds()/(bytes/(1<<30)))
	}
	line("produce MB/s (median)", func(r *procResult) string { return fmt.Sprintf("%.1f", median(r.produceMBps)) })
	line("fetch MB/s (median)", func(r *procResult) string { return fmt.Sprintf("%.1f", median(r.fetchMBps)) })
	line("produce acks=all p50", func(r *procResult) string { return percentile(r.latencies, 50).String() })
	line("produce acks=all p99", func(r *procResult) string { return percentile(r.latencies, 99).String() })
	line("kproxy CPU s/GiB produced", func(r *procResult) string { return perGiB(r.produceCPU, r.producedBytes) })
	line("kproxy CPU s/GiB fetched", func(r *procResult) string { return perGiB(r.fetchCPU, r.fetchedBytes) })
	line("kproxy CPU s/GiB forwarded", func(r *procResult) string { return perGiB(r.kproxyCPU, r.kproxyBytes) })
	line("kproxy CPU µs / acks=all req", func(r *procResult) string {
		if r.latencyCPU == 0 || len(r.latencies) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(r.latencyCPU.Nanoseconds())/1e3/float64(len(r.latencies)))
	})
	line("kproxy switches / acks=all req", func(r *procResult) string {
		if r.latencySwitches == 0 || len(r.latencies) == 0 {
			return "-"
		}
		return fmt.Sprintf("%.2f", float64(r.latencySwitches)/float64(len(r.latencies)))
	})
	line("kproxy switches /MiB fwd", func(r *procResult) string {
		if r.kproxyBytes == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f", float64(r.kproxySwitches)/(r.kproxyBytes/(1<<20)))
	})
	line("client CPU s/GiB of records", func(r *procResult) string { return perGiB(r.clientCPU, r.payload) })
	line("broker CPU s/GiB of records", func(r *procResult) string { return perGiB(r.brokerCPU, r.payload) })
	line("kproxy RSS (end / peak) MiB", func(r *procResult) string {
		if r.hwmKiB == 0 {
			return "-"
		}
		return fmt.Sprintf("%.1f / %.1f", float64(r.rssKiB)/1024, float64(r.hwmKiB)/1024)
	})
	if slices.ContainsFunc(names, func(n string) bool { return strings.HasSuffix(n, "+api") }) {
		line("admin API requests answered", func(r *procResult) string {
			if r.apiRequests == 0 && r.apiFailures == 0 {
				return "-"
			}
			return fmt.Sprintf("%d (%.0f MB)", r.apiRequests, float64(r.apiBytes)/1e6)
		})
		line("admin API requests failed", func(r *procResult) string { return strconv.FormatInt(r.apiFailures, 10) })
	}
	fmt.Fprintln(w, "\nratios to direct, paired round by round: median (min-max)")
	d := rs["direct"]
	for _, n := range names[1:] {
		r := rs[n]
		fmt.Fprintf(w, "%-14s produce %s  fetch %s  added p50 %v  p99 %v  kproxy CPU %s s/GiB (of records: produced %s, fetched %s)\n", n,
			pairRatios(r.produceMBps, d.produceMBps), pairRatios(r.fetchMBps, d.fetchMBps),
			percentile(r.latencies, 50)-percentile(d.latencies, 50), percentile(r.latencies, 99)-percentile(d.latencies, 99),
			perGiB(r.kproxyCPU, r.kproxyBytes), perGiB(r.produceCPU, r.producedBytes), perGiB(r.fetchCPU, r.fetchedBytes))
		fmt.Fprintf(w, "%-14s added p50 paired round by round %s\n", "", pairDiffs(roundP50s(r.latencies, opts.latencyN), roundP50s(d.latencies, opts.latencyN)))
	}
	if len(names) > 2 {
		fmt.Fprintf(w, "\nratios to %s, paired round by round: median (min-max)\n", names[1])
		b := rs[names[1]]
		for _, n := range names[2:] {
			r := rs[n]
			fmt.Fprintf(w, "%-14s produce %s  fetch %s  p50 %v  p99 %v\n", n,
				pairRatios(r.produceMBps, b.produceMBps), pairRatios(r.fetchMBps, b.fetchMBps),
				percentile(r.latencies, 50)-percentile(b.latencies, 50), percentile(r.latencies, 99)-percentile(b.latencies, 99))
			fmt.Fprintf(w, "%-14s p50 paired round by round %s\n", "", pairDiffs(roundP50s(r.latencies, opts.latencyN), roundP50s(b.latencies, opts.latencyN)))
			// Per GiB of records, which a forwarder (counting no bytes)
			// has too.
			fmt.Fprintf(w, "%-14s kproxy CPU/GiB %.3fx; paired phase by phase: produce %s  fetch %s\n", "",
				(r.kproxyCPU.Seconds()/(r.producedBytes+r.fetchedBytes))/(b.kproxyCPU.Seconds()/(b.producedBytes+b.fetchedBytes)),
				pairRatios(everyOther(r.phaseCPU, 0), everyOther(b.phaseCPU, 0)),
				pairRatios(everyOther(r.phaseCPU, 1), everyOther(b.phaseCPU, 1)))
		}
	}
}

// everyOther returns xs[from], xs[from+2], ...: the produce (0) or fetch
// (1) phases of procResult.phaseCPU.
func everyOther(xs []float64, from int) []float64 {
	var out []float64
	for i := from; i < len(xs); i += 2 {
		out = append(out, xs[i])
	}
	return out
}

// roundP50s returns the p50 of each round's n latencies (the latency
// phases append n each, in round order).
func roundP50s(ds []time.Duration, n int) []time.Duration {
	var out []time.Duration
	for i := 0; n > 0 && i+n <= len(ds); i += n {
		out = append(out, percentile(ds[i:i+n], 50))
	}
	return out
}

// pairDiffs formats the median and range of a[i]-b[i].
func pairDiffs(a, b []time.Duration) string {
	var ds []time.Duration
	for i := range min(len(a), len(b)) {
		ds = append(ds, a[i]-b[i])
	}
	if len(ds) == 0 {
		return "-"
	}
	slices.Sort(ds)
	return fmt.Sprintf("%v (%v to %v)", ds[len(ds)/2], ds[0], ds[len(ds)-1])
}

// pairRatios formats the median and range of a[i]/b[i].
func pairRatios(a, b []float64) string {
	var rs []float64
	for i := range min(len(a), len(b)) {
		rs = append(rs, a[i]/b[i])
	}
	s := slices.Clone(rs)
	slices.Sort(s)
	if len(s) == 0 {
		return "-"
	}
	return fmt.Sprintf("%.3f (%.3f-%.3f)", median(rs), s[0], s[len(s)-1])
}
