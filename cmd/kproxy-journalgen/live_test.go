package main

import (
	"bytes"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
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
	for _, c := range []struct {
		args []string
		flag string
	}{
		{[]string{"-live", "1m", "-settle", "1h"}, "-settle 1h0m0s"},
		{[]string{"-live", "1m", "-settle", "-1s"}, "-settle -1s"},
		{[]string{"-live", "1m", "-settle", "1s", "-settle-rate", "0"}, "-settle-rate 0"},
		{[]string{"-live", "1m", "-settle", "1s", "-settle-rate", "NaN"}, "-settle-rate NaN"},
		{[]string{"-live", "1m", "-settle-rate", "100"}, "-settle-rate is read only with -settle"},
	} {
		if err := run(c.args, &bytes.Buffer{}); err == nil || !strings.Contains(err.Error(), c.flag) {
			t.Errorf("run %v: %v, want an error naming %s", c.args, err, c.flag)
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

// TestLiveSettle checks that -settle prints, at each line, the memory at
// full speed before the settled stretch and what the stretch fed, and
// tells the same story as the run at full speed.
func TestLiveSettle(t *testing.T) {
	args := []string{"-live", "40m", "-live-every", "20m", "-groups", "8", "-members", "6", "-diagnosis",
		"-heartbeat", "30s", "-jobs", "3"}
	settled := append(args, "-settle", "5m", "-settle-rate", "5000")
	var out bytes.Buffer
	if err := run(settled, &out); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(out.String(), "before the last 5m0s, at full speed: rss "); n != 2 {
		t.Errorf("%d lines of the memory before settling, want 2:\n%s", n, out.String())
	}
	if n := strings.Count(out.String(), "the last 5m0s: "); n != 2 || !strings.Contains(out.String(), " MB allocated a second") {
		t.Errorf("%d lines of what the settled stretches fed, want 2:\n%s", n, out.String())
	}
	if fast, slow := liveStory(t, args), liveStory(t, settled); strings.Join(fast, "\n") != strings.Join(slow, "\n") {
		t.Errorf("at full speed:\n%s\nsettled:\n%s", strings.Join(fast, "\n"), strings.Join(slow, "\n"))
	}
}

// TestSpanSourcePace checks the pace on a clock of its own: 5,000
// exchanges at 1,000 a second take 5 s, and after a stall of a second
// those behind their time go at once, so that they still take 5 s in all.
func TestSpanSourcePace(t *testing.T) {
	for _, stall := range []bool{false, true} {
		ch := make(chan []*decode.Exchange, 50)
		start := time.Unix(1700000000, 0)
		for i := range 50 {
			b := make([]*decode.Exchange, 100)
			for j := range b {
				b[j] = &decode.Exchange{ResponseAt: start.Add(time.Duration(i*100+j) * time.Millisecond)}
			}
			ch <- b
		}
		clock, slept := start, time.Duration(0)
		s := &spanSource{batches: ch, upTo: time.Hour, now: func() time.Time { return clock },
			sleep: func(d time.Duration) { clock = clock.Add(d); slept += d }}
		s.pace(1000)
		for i := range 5000 {
			if stall && i == 1000 {
				clock = clock.Add(time.Second) // the pipeline held up for a second
			}
			if _, _, err := s.Next(); err != nil {
				t.Fatal(err)
			}
		}
		want := 5 * time.Second
		if stall {
			want -= time.Second
		}
		if took := clock.Sub(start); took < 5*time.Second-10*time.Millisecond || took > 5*time.Second || slept > want {
			t.Errorf("stall %v: 5,000 exchanges at 1,000 a second took %s, %s of it asleep; want 5 s, at most %s asleep",
				stall, took, slept, want)
		}
	}
}
