//go:build e2e

package e2e

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
)

// TestFleetLoad is issue 14's load test, run by e2e/fleet-load.sh and never
// by run.sh (it takes minutes): kproxy-journalgen publish simulates
// E2E_FLEET_INSTANCES (20) kproxy instances, each its own fleet.Publisher
// and client, publishing E2E_FLEET_FOR (60 s) of the realistic traffic of
// E2E_FLEET_GROUPS (2,000) groups, paced at real time, to the events topic
// on the e2e broker. A kproxy with --fleet-topic follows the topic
// meanwhile: its lag (the topic's end offsets less the records it has
// read) is sampled every 5 s, and it must have read everything within 60 s
// of the last record, with nothing lost or left out. Then `kproxy replay
// --from-topic` reads the whole topic once more, timed, and a second view
// started on the whole topic catches up with it, timed: the rate a live
// view can follow, whatever the publishers here managed. The replayed story
// must tell each generation the traffic started once, as stable. The figures are
// printed and kept in fleet-load.txt in the run directory; docs/fleet.md
// quotes them.
func TestFleetLoad(t *testing.T) {
	topic := envOr("E2E_FLEET_TOPIC", "kproxy_events_load")
	instances := envOr("E2E_FLEET_INSTANCES", "20")
	groups := envOr("E2E_FLEET_GROUPS", "2000")
	span := envOr("E2E_FLEET_FOR", "60s")
	spanD, err := time.ParseDuration(span)
	if err != nil {
		t.Fatalf("E2E_FLEET_FOR %q: %v", span, err)
	}
	var report bytes.Buffer
	note := func(format string, args ...any) {
		t.Helper()
		t.Logf(format, args...)
		fmt.Fprintf(&report, format+"\n", args...)
	}
	deleteTopic(t, topic)
	gen := filepath.Join(binDir, "kproxy-journalgen")
	build := exec.Command("go", "build", "-o", gen, "../cmd/kproxy-journalgen")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build kproxy-journalgen: %v\n%s", err, out)
	}

	pub := startProc(t, "publish", nil, gen, "publish", "-brokers", brokerAddr, "-topic", topic,
		"-instances", instances, "-groups", groups, "-for", span)
	waitTopic(t, topic)
	view := startFleetKproxy(t, 0, "kp-view", "--fleet-topic", topic, "--admin", proxyAdmin)
	pid := view.proc.cmd.Process.Pid

	adm := admin(t)
	end := func() int64 {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		offs, err := adm.ListEndOffsets(ctx, topic)
		if err != nil {
			t.Fatalf("end offsets of %s: %v", topic, err)
		}
		var n int64
		offs.Each(func(o kadm.ListedOffset) { n += o.Offset })
		return n
	}
	read := func() int64 { return int64(scrape(t, proxyAdmin)["kproxy_fleet_records_total"]) }
	start := time.Now()
	note("%8s %10s %10s %8s %8s %8s", "wall", "published", "read", "lag", "cpu_s", "rss_mib")
	var maxLag int64
	for !pub.waitExit(5 * time.Second) {
		e, r := end(), read()
		maxLag = max(maxLag, e-r)
		note("%8s %10d %10d %8d %8.1f %8.0f", time.Since(start).Round(time.Second), e, r, e-r, cpuSeconds(t, pid), rssMiB(t, pid))
		if time.Since(start) > 10*spanD+2*time.Minute {
			t.Fatalf("publishing %s of traffic takes more than %s", span, 10*spanD+2*time.Minute)
		}
	}
	pub.waitDone(0)
	published := time.Since(start)
	total := end()
	var drained time.Duration
	for {
		r := read()
		if r >= total {
			drained = time.Since(start) - published
			break
		}
		if time.Since(start)-published > time.Minute {
			t.Fatalf("kproxy --fleet-topic has read %d of %d records a minute after the last was published", r, total)
		}
		time.Sleep(200 * time.Millisecond)
	}
	m := scrape(t, proxyAdmin)
	viewCPU, viewRSS := cpuSeconds(t, pid), rssMiB(t, pid)
	out, _ := os.ReadFile(filepath.Join(runDir(t), "publish.out"))
	note("%s", strings.TrimSpace(string(out)))
	note("publishing took %s of wall time; the --fleet-topic view's largest lag while sampled: %d records; it read the last of %d records %s after publishing ended",
		published.Round(time.Second), maxLag, total, drained.Round(100*time.Millisecond))
	note("view: %.1f CPU s in all (%.1f µs per record), RSS %.0f MiB, instances %v, lost %v, late %v",
		viewCPU, viewCPU*1e6/float64(total), viewRSS, m["kproxy_fleet_instances"], m["kproxy_fleet_lost_total"], m["kproxy_fleet_late_total"])
	if m["kproxy_fleet_lost_total"] != 0 || m["kproxy_fleet_late_total"] != 0 {
		t.Errorf("the view lost %v exchanges and left %v records out; want none", m["kproxy_fleet_lost_total"], m["kproxy_fleet_late_total"])
	}
	if strings.Contains(string(out), "dropped") && !strings.Contains(string(out), "dropped 0 exchanges") {
		t.Errorf("the publishers dropped exchanges: %s", out)
	}
	view.stop()

	// The merge consumer alone, over the whole topic.
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	text, err := os.Create(filepath.Join(runDir(t), "replay.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer text.Close()
	var stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, kproxyBin(), "replay", "--from-topic", topic, "--brokers", brokerAddr, "--format", "text")
	cmd.Stdout, cmd.Stderr = text, &stderr
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("kproxy replay --from-topic: %v\n%s", err, stderr.String())
	}
	wall := time.Since(t0)
	cpu := (cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds()
	maxRSS := float64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) / 1024
	note("replay --from-topic: %d records in %s (%.0f records/s), %.1f CPU s (%.1f µs per record, %.0f records per CPU second), max RSS %.0f MiB",
		total, wall.Round(100*time.Millisecond), float64(total)/wall.Seconds(), cpu, cpu*1e6/float64(total), float64(total)/cpu, maxRSS)
	if s := strings.TrimSpace(stderr.String()); s != "" {
		note("replay's warnings: %s", s)
	}
	// Every generation the traffic started is told once, however many
	// instances saw its members: one "stable" line each.
	told, err := os.ReadFile(filepath.Join(runDir(t), "replay.txt"))
	if err != nil {
		t.Fatal(err)
	}
	started := regexp.MustCompile(`generations started: (\d+)`).FindSubmatch(out)
	if started == nil {
		t.Fatalf("publish printed no generations count:\n%s", out)
	}
	stable := bytes.Count(told, []byte(" stable: "))
	note("generations: %s started in the traffic, %d told stable by replay --from-topic", started[1], stable)
	if strconv.Itoa(stable) != string(started[1]) {
		t.Errorf("replay --from-topic tells %d generations stable; the traffic started %s", stable, started[1])
	}
	// A view started on the whole topic: how fast a live view catches up,
	// whatever the publishers managed.
	catch := startFleetKproxy(t, 0, "kp-view-late", "--fleet-topic", topic, "--admin", proxyAdmin)
	t0 = time.Now()
	cpu0 := cpuSeconds(t, catch.proc.cmd.Process.Pid)
	for read() < total {
		if time.Since(t0) > 5*time.Minute {
			t.Fatalf("a view started on the whole topic read %d of %d records in 5 minutes", read(), total)
		}
		time.Sleep(100 * time.Millisecond)
	}
	caught := time.Since(t0)
	cpu = cpuSeconds(t, catch.proc.cmd.Process.Pid) - cpu0
	note("a view started after publishing: caught up with the %d records in %s (%.0f records/s), %.1f CPU s (%.1f µs per record), RSS %.0f MiB",
		total, caught.Round(100*time.Millisecond), float64(total)/caught.Seconds(), cpu, cpu*1e6/float64(total), rssMiB(t, catch.proc.cmd.Process.Pid))
	catch.stop()
	if err := os.WriteFile(filepath.Join(runDir(t), "fleet-load.txt"), report.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// cpuSeconds is the CPU time (user and system) process pid has used, from
// /proc/PID/stat (clock ticks of 1/100 s).
func cpuSeconds(t *testing.T, pid int) float64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The command name (field 2) may hold spaces: count from its ')'.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	utime, _ := strconv.ParseFloat(f[11], 64)
	stime, _ := strconv.ParseFloat(f[12], 64)
	return (utime + stime) / 100
}
