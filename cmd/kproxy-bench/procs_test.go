//go:build integration

package main

import (
	"bytes"
	"context"
	"strconv"
	"strings"
	"testing"
)

// TestThreeProcesses runs the harness as users do, on tiny rounds: the
// broker, the kproxy it builds and each phase's client as processes, the
// kproxy's phases again with two readers of its admin API, and the
// smallest forwarder's. It checks that every figure was taken, never what
// it is.
func TestThreeProcesses(t *testing.T) {
	if testing.Short() {
		t.Skip("builds kproxy and starts processes")
	}
	var out bytes.Buffer
	opts := options{records: 2000, size: 100, rounds: 2, latencyN: 20, noCompression: true}
	if err := runProcesses(context.Background(), &out, opts, procOptions{readers: 2, fillGroups: 5,
		forwarders: []string{"copy=exec {self} forward -listen {listen} -to {upstream}"}}); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	report := out.String()
	for _, row := range []string{"produce MB/s (median)", "fetch MB/s (median)", "produce acks=all p50",
		"kproxy CPU s/GiB produced", "kproxy CPU s/GiB fetched", "kproxy CPU s/GiB forwarded",
		"kproxy CPU µs / acks=all req", "kproxy RSS (end / peak) MiB"} {
		line := lineOf(report, row)
		if line == "" {
			t.Fatalf("report has no %q row:\n%s", row, report)
		}
		// direct, kproxy, kproxy+api, copy: kproxy+api always has a
		// figure; copy has one but for the bytes it forwarded.
		f := strings.Fields(strings.TrimPrefix(line, row))
		if len(f) < 4 || f[len(f)-2] == "-" {
			t.Errorf("row %q has no kproxy+api figure: %q", row, line)
		}
		if row != "kproxy CPU s/GiB forwarded" && (len(f) < 4 || f[len(f)-1] == "-") {
			t.Errorf("row %q has no figure for the forwarder: %q", row, line)
		}
	}
	// direct and kproxy had no readers; kproxy+api's were answered.
	f := strings.Fields(strings.TrimPrefix(lineOf(report, "admin API requests answered"), "admin API requests answered"))
	if len(f) != 6 || f[0] != "-" || f[1] != "-" || f[5] != "-" {
		t.Errorf("admin API requests answered: want -, -, a count for kproxy+api and -, got %q\n%s", f, report)
	} else if n, err := strconv.Atoi(f[2]); err != nil || n == 0 {
		t.Errorf("admin API requests answered: kproxy+api's is %q, want a count above 0\n%s", f[2], report)
	}
	for _, ratios := range []string{"kproxy         produce ", "kproxy+api     produce ", "copy           produce "} {
		if !strings.Contains(report, ratios) {
			t.Errorf("report has no %q ratios:\n%s", ratios, report)
		}
	}
}

func lineOf(report, prefix string) string {
	for _, l := range strings.Split(report, "\n") {
		if strings.HasPrefix(l, prefix) {
			return l
		}
	}
	return ""
}
