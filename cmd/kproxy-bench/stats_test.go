package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestMain lets the test binary serve as `kproxy-bench broker` and
// `kproxy-bench client`, which the harness starts from its own binary.
func TestMain(m *testing.M) {
	if runSubcommand(os.Args[1:]) {
		return
	}
	os.Exit(m.Run())
}

func TestStatCPU(t *testing.T) {
	for _, tc := range []struct {
		file string
		want time.Duration
		err  string
	}{
		{"stat-plain", (1234 + 567) * 10 * time.Millisecond, ""},
		{"stat-parens", (3 + 4) * 10 * time.Millisecond, ""}, // a command name holding ") ("
		{"stat-short", 0, "fields after the command name"},
		{"stat-noname", 0, "no command name"},
	} {
		t.Run(tc.file, func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join("testdata", "proc", tc.file))
			if err != nil {
				t.Fatal(err)
			}
			got, err := statCPU(b)
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("statCPU error %v; want one saying %q", err, tc.err)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Fatalf("statCPU = %v, %v; want %v", got, err, tc.want)
			}
		})
	}
}

func TestStatusRSS(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "proc", "status"))
	if err != nil {
		t.Fatal(err)
	}
	if rss, hwm := statusRSS(b); rss != 21816 || hwm != 22940 {
		t.Fatalf("statusRSS = %d, %d KiB; want 21816, 22940", rss, hwm)
	}
}

func TestPairDiffs(t *testing.T) {
	us := time.Microsecond
	lat := []time.Duration{1 * us, 2 * us, 3 * us, 10 * us, 20 * us, 30 * us} // two rounds of three
	if got := roundP50s(lat, 3); len(got) != 2 || got[0] != 2*us || got[1] != 20*us {
		t.Fatalf("roundP50s = %v; want [2µs 20µs]", got)
	}
	if got := pairDiffs([]time.Duration{30 * us, 25 * us, 40 * us}, []time.Duration{10 * us, 10 * us, 10 * us}); got != "20µs (15µs to 30µs)" {
		t.Errorf("pairDiffs = %q", got)
	}
	if got := pairDiffs(nil, nil); got != "-" {
		t.Errorf("pairDiffs(nil, nil) = %q; want -", got)
	}
}

func TestPairRatios(t *testing.T) {
	for _, tc := range []struct {
		a, b []float64
		want string
	}{
		{[]float64{90, 200, 50}, []float64{100, 100, 100}, "0.900 (0.500-2.000)"},
		{[]float64{1, 2}, []float64{1}, "1.000 (1.000-1.000)"}, // unpaired rounds are left out
		{nil, nil, "-"},
	} {
		if got := pairRatios(tc.a, tc.b); got != tc.want {
			t.Errorf("pairRatios(%v, %v) = %q; want %q", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestStatusSwitches(t *testing.T) {
	for _, tc := range []struct {
		file string
		want int64
	}{
		{"task-status", 1234 + 56},
		{"status", 0}, // no counts
	} {
		b, err := os.ReadFile(filepath.Join("testdata", "proc", tc.file))
		if err != nil {
			t.Fatal(err)
		}
		if got := statusSwitches(b); got != tc.want {
			t.Fatalf("statusSwitches(%s) = %d; want %d", tc.file, got, tc.want)
		}
	}
}

// TestProcCPU checks the process CPU clock against this process's own
// rusage, read before and after it: the same CPU time, rusage's counted in
// ticks.
func TestProcCPU(t *testing.T) {
	var sink uint64
	for i := range 20_000_000 {
		sink += uint64(i) * uint64(i)
	}
	_ = sink
	rusage := func() time.Duration {
		var ru syscall.Rusage
		if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
			t.Fatal(err)
		}
		return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	}
	before := rusage()
	got := procCPU(os.Getpid())
	after := rusage()
	const tick = 10 * time.Millisecond
	if got <= 0 || got < before-tick || got > after+tick {
		t.Fatalf("procCPU = %v; want between %v and %v (rusage before and after)", got, before, after)
	}
}
