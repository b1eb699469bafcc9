package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/internal/testkafka"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestServeJournalAndTimeline runs a short seed scenario through `kproxy
// serve` with a journal, a report and JSON logs, and checks everything the
// timeline and the journal produce: /api/timeline and /timeline while
// serving, the journal metrics, the timeline log lines, the journal's files
// and records, and the report written at the end.
func TestServeJournalAndTimeline(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	dir := t.TempDir()
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(dir, "journal")
	cfg.Report = filepath.Join(dir, "report.json")
	cfg.LogFormat = "json"
	core, logs := observer.New(zapcore.InfoLevel)
	s, stop := startServerLog(t, cfg, serveHooks{}, zap.New(core))

	dctx, dcancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer dcancel()
	demoDone := make(chan error, 1)
	go func() {
		demoDone <- demo.Run(dctx, s.proxy.Addr().String(), demo.Options{
			WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
			BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
		})
	}()

	// While the scenario runs, the admin server shows the timeline so far.
	base := "http://" + s.admin.Addr().String()
	waitFor(t, "/api/timeline to show the group's first generation", func() bool {
		var r timeline.Report
		if err := json.Unmarshal([]byte(httpGet(t, base+"/api/timeline")), &r); err != nil {
			t.Fatalf("/api/timeline is not JSON: %v", err)
		}
		g := findGroup(r, demo.Group)
		return g != nil && len(g.Generations) > 0
	})
	if text := httpGet(t, base+"/timeline"); !strings.Contains(text, demo.Group) {
		t.Errorf("/timeline lacks %s:\n%s", demo.Group, text)
	}
	if err := <-demoDone; err != nil {
		t.Fatalf("scenario: %v", err)
	}
	waitFor(t, "journal records in /metrics", func() bool {
		return parseMetrics(t, httpGet(t, base+"/metrics"))["kproxy_journal_records_written_total"] > 0
	})
	m := parseMetrics(t, httpGet(t, base+"/metrics"))
	if m["kproxy_journal_bytes_written_total"] <= 0 || m["kproxy_journal_dropped_total"] != 0 || m["kproxy_journal_write_failed"] != 0 {
		t.Errorf("journal metrics: bytes %v, dropped %v, failed %v; want bytes > 0, no drops, no failure",
			m["kproxy_journal_bytes_written_total"], m["kproxy_journal_dropped_total"], m["kproxy_journal_write_failed"])
	}

	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}

	t.Run("timeline log lines", func(t *testing.T) {
		entries := logs.FilterLoggerName("timeline").All()
		kinds := map[string]bool{}
		for _, e := range entries {
			f := e.ContextMap()
			if f["group"] != demo.Group || e.Message == "" || strings.Contains(e.Message, "\n") {
				t.Errorf("timeline line %q with fields %v; want group %s and a one-line message", e.Message, f, demo.Group)
			}
			kind, _ := f["kind"].(string)
			kinds[kind] = true
		}
		for _, k := range []timeline.Kind{timeline.KindRebalanceStarted, timeline.KindPlan, timeline.KindStable} {
			if !kinds[string(k)] {
				t.Errorf("no timeline line of kind %s among %d lines (kinds %v)", k, len(entries), kinds)
			}
		}
	})
	t.Run("journal", func(t *testing.T) { checkJournal(t, cfg.Journal) })
	t.Run("report", func(t *testing.T) { checkReport(t, cfg.Report) })
}

// checkJournal checks the journal directory's and segments' modes and that
// the scenario's group exchanges were recorded.
func checkJournal(t *testing.T, dir string) {
	t.Helper()
	checkMode(t, dir, 0o700|os.ModeDir)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatalf("journal %s is empty", dir)
	}
	for _, f := range files {
		checkMode(t, filepath.Join(dir, f.Name()), 0o600)
	}
	r, err := journal.OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	apis := map[int16]int{}
	for {
		x, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("read journal: %v", err)
		}
		apis[x.APIKey]++
	}
	const joinGroup, syncGroup, offsetCommit = 11, 14, 8
	if apis[joinGroup] < 2 || apis[syncGroup] < 2 || apis[offsetCommit] < 1 {
		t.Errorf("journal holds %v exchanges per api key; want JoinGroup and SyncGroup from both members and commits", apis)
	}
}

// checkReport checks the report file: mode 0600, the JSON report, and the
// seed scenario's generation with A on partitions 0 and 1 and B on 2.
func checkReport(t *testing.T, path string) {
	t.Helper()
	checkMode(t, path, 0o600)
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r timeline.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	g := findGroup(r, demo.Group)
	if g == nil {
		t.Fatalf("report lacks group %s:\n%s", demo.Group, b)
	}
	want := map[string][]int32{"consumer-A": {0, 1}, "consumer-B": {2}}
	for _, gen := range g.Generations {
		got := map[string][]int32{}
		for _, m := range gen.Members {
			got[m.ClientID] = m.Assignment[demo.Topic]
		}
		if reflect.DeepEqual(got, want) {
			return
		}
	}
	t.Errorf("no generation of %s assigns %v; report:\n%s", demo.Group, want, b)
}

func findGroup(r timeline.Report, group string) *timeline.GroupReport {
	i := slices.IndexFunc(r.Groups, func(g timeline.GroupReport) bool { return g.Group == group })
	if i < 0 {
		return nil
	}
	return &r.Groups[i]
}

func checkMode(t *testing.T, path string, want os.FileMode) {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode() & (os.ModeDir | os.ModePerm); got != want {
		t.Errorf("%s has mode %v; want %v", path, got, want)
	}
}

// waitFor polls cond until it holds, for at most 20 seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testkafka.WaitFor(t, 20*time.Second, what, cond)
}

func TestTimelineLogger(t *testing.T) {
	e := timeline.Entry{
		At: time.Date(2024, 5, 1, 14, 2, 19, 880e6, time.UTC), Group: "g1", Kind: timeline.KindStable,
		Generation: 2, Member: "m-1", Text: "gen 2 stable: stop-the-world 8.68 s",
		Detail: []string{"members: 2", "moved: 2 partitions"},
		Fields: map[string]any{"stop_the_world_ms": 8680.0},
	}
	tests := []struct {
		format     string
		wantMsg    string
		wantFields []string
	}{
		{"console", strings.Join(e.Lines(), "\n"), nil},
		{"json", e.Text, []string{"group", "kind", "at", "generation", "member_id", "stop_the_world_ms", "detail"}},
	}
	for _, tt := range tests {
		t.Run(tt.format, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			timelineLogger(zap.New(core).Named("timeline"), tt.format)(e)
			all := logs.All()
			if len(all) != 1 {
				t.Fatalf("%d log entries; want 1", len(all))
			}
			got := all[0]
			if got.Message != tt.wantMsg || got.LoggerName != "timeline" || got.Level != zapcore.InfoLevel {
				t.Errorf("entry %q (logger %q, level %v); want %q from logger timeline at info",
					got.Message, got.LoggerName, got.Level, tt.wantMsg)
			}
			var keys []string
			for _, f := range got.Context {
				keys = append(keys, f.Key)
			}
			if !slices.Equal(keys, tt.wantFields) {
				t.Errorf("fields %v; want %v", keys, tt.wantFields)
			}
		})
	}
	if want := "14:02:19.880 g1 gen 2 stable: stop-the-world 8.68 s\n    members: 2\n    moved: 2 partitions"; tests[0].wantMsg != want {
		t.Errorf("console message %q; want %q", tests[0].wantMsg, want)
	}
}

func TestServeSetupErrors(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name       string
		journal    string
		report     string
		wantPrefix string
	}{
		{"journal is a file", file, "", "serve: journal: open " + file + ": "},
		{"report directory missing", "", filepath.Join(dir, "missing", "r.json"),
			"report: " + filepath.Join(dir, "missing", "r.json") + ": cannot create files in its directory: "},
		{"report is a directory", "", dir, "report: " + dir + " is a directory; want a file path"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := testConfig(t, "127.0.0.1:1")
			cfg.Journal, cfg.Report = tt.journal, tt.report
			_, err := newServer(cfg, zap.NewNop())
			if err == nil || !strings.HasPrefix(err.Error(), tt.wantPrefix) {
				t.Fatalf("newServer() error = %v; want prefix %q", err, tt.wantPrefix)
			}
			// Nothing was left listening.
			for _, addr := range []string{cfg.Listen} {
				ln, err := net.Listen("tcp", addr)
				if err != nil {
					t.Fatalf("%s still in use after the failure: %v", addr, err)
				}
				ln.Close()
			}
		})
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("%s holds %d entries after the failures; want only the test's file (no probe left behind)", dir, len(entries))
	}
}
