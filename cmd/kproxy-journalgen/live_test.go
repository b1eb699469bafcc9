package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestLiveRun runs -live on a few groups, with the diagnosis, slower
// heartbeats and short-lived groups, and checks that it prints a line per
// tick with the groups kept and those asleep, the runtime's
// memory, and the entries and findings counted; that -generator-only
// prints the exchanges generated and no groups; and that the settings it
// refuses name their flag.
func TestLiveRun(t *testing.T) {
	var out bytes.Buffer
	err := run([]string{"-live", "40m", "-live-every", "20m", "-groups", "8", "-members", "6", "-diagnosis",
		"-heartbeat", "30s", "-jobs", "3"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 9 || !strings.Contains(lines[0], "asleep_mb") {
		t.Fatalf("want a header and, per tick, a line, its memory, entries and findings; got:\n%s", out.String())
	}
	for i, tick := range []string{"20m0s", "40m0s"} {
		f := strings.Fields(lines[1+4*i])
		if len(f) != 10 || f[0] != tick {
			t.Errorf("line for %s: %q", tick, lines[1+4*i])
			continue
		}
		if !strings.Contains(lines[2+4*i], "memory: goal ") || !strings.Contains(lines[2+4*i], " released ") ||
			!strings.Contains(lines[2+4*i], " cpu ") {
			t.Errorf("%s: memory line %q", tick, lines[2+4*i])
		}
		// 8 groups and 3 job slots; a job whose run ended stays kept
		// (retention's 24 h) beside its slot's next run.
		if n, err := strconv.Atoi(f[3]); err != nil || n < 11 {
			t.Errorf("%s: %s groups kept, want at least 11", tick, f[3])
		}
		if !strings.Contains(lines[3+4*i], "entries: ") || !strings.Contains(lines[3+4*i], "stable ") ||
			strings.Contains(lines[3+4*i], "session_expired") {
			t.Errorf("%s: entries line %q: want stable generations and no session expiry", tick, lines[3+4*i])
		}
		if !strings.Contains(lines[4+4*i], "findings: ") || strings.Contains(lines[4+4*i], "heartbeat_too_slow") ||
			strings.Contains(lines[4+4*i], "timeouts_misordered") {
			t.Errorf("%s: findings line %q", tick, lines[4+4*i])
		}
	}
	out.Reset()
	err = run([]string{"-live", "20m", "-live-every", "20m", "-groups", "8", "-members", "6", "-heartbeat", "30s",
		"-generator-only"}, &out)
	if err != nil {
		t.Fatal(err)
	}
	lines = strings.Split(strings.TrimSpace(out.String()), "\n")
	if f := strings.Fields(lines[1]); len(lines) != 4 || len(f) != 10 || f[1] == "0" || f[2] != "0" || f[3] != "0" ||
		lines[3] != strings.Repeat(" ", 10)+" entries: none" {
		t.Errorf("-generator-only: want exchanges and no generation, group or entry; got:\n%s", out.String())
	}
	for _, args := range [][]string{
		{"-live", "1m", "-settle", "1h"},
		{"-live", "1m", "-settle", "1s", "-settle-rate", "0"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-settle") {
			t.Errorf("run %v: %v, want an error naming -settle", args, err)
		}
	}
	for _, args := range [][]string{
		{"-live", "1m", "-heartbeat", "3m"},
		{"-live", "1m", "-jobs", "-1"},
	} {
		if err := run(args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), "-heartbeat") {
			t.Errorf("run %v: %v, want an error naming -heartbeat and -jobs", args, err)
		}
	}
}

// TestLiveSettle checks that -settle feeds the last minutes before each
// line at the rate asked, prints the memory before them too, and tells
// the same story as the run at full speed.
func TestLiveSettle(t *testing.T) {
	args := []string{"-live", "40m", "-live-every", "20m", "-groups", "8", "-members", "6", "-diagnosis",
		"-heartbeat", "30s", "-jobs", "3"}
	var out bytes.Buffer
	start := time.Now()
	if err := run(append(args, "-settle", "5m", "-settle-rate", "2000"), &out); err != nil {
		t.Fatal(err)
	}
	// About 1,700 exchanges in each line's last 5 minutes: most of a second each at 2,000 a second.
	if el := time.Since(start); el < time.Second {
		t.Errorf("-settle 5m at 2,000 exchanges a second took %s, want more than a second for two lines", el)
	}
	if n := strings.Count(out.String(), "before the last 5m0s, at full speed: rss "); n != 2 {
		t.Errorf("%d lines of the memory before settling, want 2:\n%s", n, out.String())
	}
	fast, settled := liveStory(t, args), liveStory(t, append(args, "-settle", "5m", "-settle-rate", "1e6"))
	if strings.Join(fast, "\n") != strings.Join(settled, "\n") {
		t.Errorf("at full speed:\n%s\nsettled:\n%s", strings.Join(fast, "\n"), strings.Join(settled, "\n"))
	}
}
