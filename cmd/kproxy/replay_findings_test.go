//go:build integration

package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/internal/synth"
)

// TestReplayStormFindings runs a storm through `kproxy serve` with a
// journal: a rolling restart beside a member that stays (a storm of
// rebalances with serve's --storm-rebalances 2 --storm-window 3s), then
// that member heartbeats until the storm is over. `kproxy replay --format text` of the journal
// must print, after the storm's end, the findings block serve logged in
// its timeline, byte for byte; --findings=false and jsonl print none.
func TestReplayStormFindings(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(t.TempDir(), "journal")
	cfg.StormRebalances, cfg.StormWindow = 2, 3*time.Second
	core, logs := observer.New(zapcore.InfoLevel)
	s, stop := startServerLog(t, cfg, serveHooks{}, zap.New(core))

	addr := s.proxy.Addr().String()
	keeper := startDiagMember(t, addr, "g", "sf-keeper", []string{"t"})
	keeper.groupMeta(t)
	runRollingRestart(t, addr)
	time.Sleep(5 * time.Second) // the keeper's heartbeats carry the clock past the storm window
	keeper.stop()
	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}

	var served []string
	for _, e := range logs.FilterLoggerName("timeline").All() {
		if strings.Contains(e.Message, " findings after the storm:") {
			served = append(served, e.Message)
		}
	}
	if len(served) == 0 {
		t.Fatal("serve logged no findings block; want one after the storm")
	}

	run := func(o replayOptions) string {
		t.Helper()
		o.journalWindow = journalWindow{stormRebalances: cfg.StormRebalances, stormWindow: cfg.StormWindow}
		var out, errOut bytes.Buffer
		if err := replay(context.Background(), []string{cfg.Journal}, o, &out, &errOut); err != nil {
			t.Fatalf("replay: %v\n%s", err, errOut.String())
		}
		return out.String()
	}
	text := run(replayOptions{format: "text"})
	lines := strings.Split(text, "\n")
	var replayed []string
	for i, line := range lines {
		if !strings.Contains(line, " findings after the storm:") {
			continue
		}
		if i == 0 || !strings.Contains(lines[i-1], " storm over: ") {
			t.Errorf("findings block not right after a storm's end:\n%s", strings.Join(lines[max(i-1, 0):i+1], "\n"))
		}
		block := []string{line}
		for _, l := range lines[i+1:] {
			if !strings.HasPrefix(l, "    ") {
				break
			}
			block = append(block, l)
		}
		replayed = append(replayed, strings.Join(block, "\n"))
	}
	if strings.Join(replayed, "\n--\n") != strings.Join(served, "\n--\n") {
		t.Errorf("replayed findings blocks differ from serve's\nreplay:\n%s\nserve:\n%s\nreplay text:\n%s",
			strings.Join(replayed, "\n--\n"), strings.Join(served, "\n--\n"), text)
	}
	off := run(replayOptions{format: "text", noFindings: true})
	if strings.Contains(off, "findings after the storm") || !strings.Contains(off, " storm over: ") {
		t.Errorf("--findings=false: want the storm's end and no findings block:\n%s", off)
	}
	if jl := run(replayOptions{format: "jsonl"}); strings.Contains(jl, "findings after the storm") {
		t.Errorf("jsonl has a findings block:\n%s", jl)
	}
}

// TestReplayStormFindingsGolden replays a generated rebalance-heavy journal
// (synth, fixed seed and size, so the same journal every run) with storms
// of two rebalances within a minute: the findings blocks, each after its
// storm's end, are compared whole with a golden file; the same journal
// gives the same bytes twice; and the output without the blocks is
// exactly --findings=false's.
func TestReplayStormFindingsGolden(t *testing.T) {
	dir := t.TempDir()
	opts := synth.Options{Seed: 2, Groups: 20, MaxMembers: 8, Mix: synth.RebalanceHeavy}
	if _, err := synth.Write(synth.New(opts), synth.WriteOptions{Dir: dir, Exchanges: 20000}); err != nil {
		t.Fatal(err)
	}
	run := func(noFindings bool) []byte {
		t.Helper()
		o := replayOptions{format: "text", noFindings: noFindings,
			journalWindow: journalWindow{stormRebalances: 2, stormWindow: time.Minute}}
		var out, errOut bytes.Buffer
		if err := replay(context.Background(), []string{dir}, o, &out, &errOut); err != nil {
			t.Fatalf("replay: %v\n%s", err, errOut.String())
		}
		return out.Bytes()
	}
	text := run(false)
	if again := run(false); !bytes.Equal(again, text) {
		t.Fatal("two replays of the same journal differ")
	}
	// A block is its header and the indented lines after it: the next
	// entry starts with its time.
	var blocks, rest []string
	lines := strings.Split(string(text), "\n")
	afterStorm := false
	for i := 0; i < len(lines); i++ {
		if !strings.Contains(lines[i], " findings after the storm:") {
			rest = append(rest, lines[i])
			afterStorm = strings.Contains(lines[i], " storm over: ")
			continue
		}
		// Storms ending at one exchange (or at the end) have their blocks
		// one after the other.
		if !afterStorm {
			t.Errorf("findings block not right after a storm's end:\n%s", strings.Join(lines[max(i-2, 0):i+1], "\n"))
		}
		blocks = append(blocks, lines[i])
		for i+1 < len(lines) && strings.HasPrefix(lines[i+1], "    ") {
			i++
			blocks = append(blocks, lines[i])
		}
		afterStorm = true
	}
	if len(blocks) == 0 {
		t.Fatal("no findings block; want one after each storm")
	}
	if off := run(true); strings.Join(rest, "\n") != string(off) {
		t.Error("the text without its findings blocks differs from --findings=false's")
	}
	got := []byte(strings.Join(blocks, "\n") + "\n")
	golden := filepath.Join("testdata", "generated", "rebalance-heavy.storm-findings.golden")
	if *update {
		if err := os.WriteFile(golden, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(golden)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("findings blocks differ from %s (run go test -tags integration -update to refresh); got:\n%s", golden, got)
	}
}
