package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap/zaptest"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// shortDemo is the seed scenario shortened for tests.
var shortDemo = demo.Options{
	WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
	BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
}

// journaledProxy is a kproxy in front of a cluster with a journal and a
// live timeline, as `kproxy serve --journal` runs it.
type journaledProxy struct {
	proxy *proxy.Proxy
	jw    *journal.Writer
	live  *timeline.Live
	dir   string
	stop  func()
}

func startJournaledProxy(t *testing.T, upstreams []string) *journaledProxy {
	t.Helper()
	log := zaptest.NewLogger(t)
	jp := &journaledProxy{dir: t.TempDir(), live: timeline.NewLive(timeline.Config{}, timeline.DefaultRetention)}
	var err error
	jp.jw, err = journal.Open(jp.dir, journal.Options{KproxyVersion: "test"}, log)
	if err != nil {
		t.Fatal(err)
	}
	jp.proxy, err = proxy.New(proxy.Config{
		Listen: "127.0.0.1:0", Upstreams: upstreams,
		BrokerListeners: map[int32]string{0: "127.0.0.1:0"},
	}, log)
	if err != nil {
		t.Fatal(err)
	}
	pl := pipeline.New(pipeline.Config{Log: log,
		Exchanges: []pipeline.ExchangeConsumer{jp.jw}, Events: []pipeline.EventConsumer{jp.live}})
	piped := make(chan error, 1)
	go func() { piped <- pl.Run(context.Background(), jp.proxy.Queue()) }() // ends with the proxy's queue
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- jp.proxy.Run(ctx) }()
	jp.stop = func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("proxy: %v", err)
		}
		if err := <-piped; err != nil {
			t.Errorf("pipeline: %v", err)
		}
		if err := jp.jw.Close(); err != nil {
			t.Errorf("journal: %v", err)
		}
	}
	return jp
}

// liveJSON stops jp and returns its live report as JSON.
func (jp *journaledProxy) liveJSON(t *testing.T) []byte {
	t.Helper()
	jp.stop()
	var buf bytes.Buffer
	jp.live.Close(time.Time{})
	if err := timeline.WriteJSON(&buf, jp.live.Report()); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func replayJSON(t *testing.T, paths ...string) []byte {
	t.Helper()
	var out, errOut bytes.Buffer
	if err := replay(context.Background(), paths, replayOptions{format: "json"}, &out, &errOut); err != nil {
		t.Fatalf("replay: %v\n%s", err, errOut.String())
	}
	if errOut.Len() > 0 {
		t.Errorf("replay warned: %s", errOut.String())
	}
	return out.Bytes()
}

// TestReplayEqualsLive runs the seed scenario through a journaling kproxy
// and checks that replaying the journal tells exactly the live story.
func TestReplayEqualsLive(t *testing.T) {
	cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	jp := startJournaledProxy(t, cluster.ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := demo.Run(ctx, jp.proxy.Addr().String(), shortDemo); err != nil {
		t.Fatal(err)
	}
	live := jp.liveJSON(t)
	replayed := replayJSON(t, jp.dir)
	if !bytes.Equal(live, replayed) {
		t.Fatalf("replay differs from live\nlive:\n%s\nreplay:\n%s", live, replayed)
	}
	gens := seedGenerations(t, live)
	if len(gens) < 2 {
		t.Fatalf("got %d generations of %s; want at least 2 (A alone, then A and B)", len(gens), demo.Group)
	}
}

// TestReplayMergesTwoProxies records consumer A through one kproxy and
// consumer B through another, in front of the same cluster, and checks that
// replaying both journals together tells one story with both members.
func TestReplayMergesTwoProxies(t *testing.T) {
	cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	p1 := startJournaledProxy(t, cluster.ListenAddrs())
	p2 := startJournaledProxy(t, cluster.ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	opts := shortDemo
	opts.SeedB = p2.proxy.Addr().String()
	if err := demo.Run(ctx, p1.proxy.Addr().String(), opts); err != nil {
		t.Fatal(err)
	}
	p1.stop()
	p2.stop()

	gens := seedGenerations(t, replayJSON(t, p1.dir, p2.dir))
	var both *reportGeneration
	for i := range gens {
		if len(gens[i].Members) == 2 {
			both = &gens[i]
		}
	}
	if both == nil {
		t.Fatalf("no generation with both members in the merged timeline: %+v", gens)
	}
	got := map[string]map[string][]int32{}
	for _, m := range both.Members {
		got[m.ClientID] = m.Assignment
	}
	if a, b := got["consumer-A"][demo.Topic], got["consumer-B"][demo.Topic]; len(a) != 2 || len(b) != 1 || b[0] != 2 {
		t.Errorf("merged gen %d assignments: A %v, B %v; want A [0 1], B [2]", both.Generation, a, b)
	}
	if len(both.Commits) == 0 {
		t.Errorf("merged gen %d shows no commit during revocation; A's went through the other kproxy", both.Generation)
	}
}

// reportGeneration is the part of the timeline's JSON these tests read.
type reportGeneration struct {
	Generation int32 `json:"generation"`
	Members    []struct {
		ClientID   string             `json:"clientId"`
		Assignment map[string][]int32 `json:"assignment"`
	} `json:"members"`
	Commits []json.RawMessage `json:"commitsDuringRevocation"`
}

func seedGenerations(t *testing.T, report []byte) []reportGeneration {
	t.Helper()
	var r struct {
		Groups []struct {
			Group       string             `json:"group"`
			Generations []reportGeneration `json:"generations"`
		} `json:"groups"`
	}
	if err := json.Unmarshal(report, &r); err != nil {
		t.Fatalf("report is not JSON: %v", err)
	}
	for _, g := range r.Groups {
		if g.Group == demo.Group {
			return g.Generations
		}
	}
	t.Fatalf("report has no group %s", demo.Group)
	return nil
}

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// seedSample is the journal shipped with the repository, recorded by
// `kproxy demo --journal`.
const seedSample = "../../testdata/journals/seed-rebalance"

// TestReplaySeedSample replays the shipped journal in each format and
// compares with golden files, then checks the facts the seed scenario is
// about, so a golden file refreshed by mistake cannot hide their loss.
func TestReplaySeedSample(t *testing.T) {
	for _, format := range []string{"text", "json", "jsonl"} {
		t.Run(format, func(t *testing.T) {
			var out, errOut bytes.Buffer
			if err := replay(context.Background(), []string{seedSample}, replayOptions{format: format}, &out, &errOut); err != nil {
				t.Fatalf("replay: %v\n%s", err, errOut.String())
			}
			golden := filepath.Join("testdata", "seed-rebalance."+format)
			if *update {
				if err := os.WriteFile(golden, out.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(out.Bytes(), want) {
				t.Errorf("replay --format %s differs from %s (run go test -update to refresh):\n%s", format, golden, out.String())
			}
		})
	}

	gens := seedGenerations(t, replayJSON(t, seedSample))
	var found bool
	for _, g := range gens {
		owned := map[string][]int32{}
		for _, m := range g.Members {
			owned[m.ClientID] = m.Assignment[demo.Topic]
		}
		if fmt.Sprint(owned["consumer-A"]) == "[0 1]" && fmt.Sprint(owned["consumer-B"]) == "[2]" {
			found = true
			if len(g.Commits) == 0 {
				t.Errorf("gen %d: no commit during revocation; consumer A commits in its revocation callback", g.Generation)
			}
		}
	}
	if !found || fmt.Sprint(gens[0].Members[0].Assignment[demo.Topic]) != "[0 1 2]" {
		t.Errorf("the sample does not show A owning 0,1,2 then A 0,1 and B 2: %+v", gens)
	}
}

// TestReplayClosesAtLastEvent checks that replay settles the timeline as of
// the last group event, as the live proxy does, not as of a later exchange
// that carries no event (ApiVersions): the seed journal cut before its
// LeaveGroups, then an ApiVersions exchange five minutes later, would
// otherwise show consumer sessions expired in replay only.
func TestReplayClosesAtLastEvent(t *testing.T) {
	r, err := journal.OpenReader(seedSample)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var kept []*decode.Exchange
	var apiVersions *decode.Exchange
	for {
		x, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if x.APIKey == 13 { // LeaveGroup: the consumers are stopping
			break
		}
		if x.APIKey == 18 {
			apiVersions = x
		}
		kept = append(kept, x)
	}
	if apiVersions == nil || len(kept) == 0 {
		t.Fatal("the seed journal lacks an ApiVersions exchange before its LeaveGroups")
	}
	late := *apiVersions
	later := 5 * time.Minute
	late.RequestAt = kept[len(kept)-1].ResponseAt.Add(later)
	late.ResponseAt = late.RequestAt.Add(time.Millisecond)
	kept = append(kept, &late)

	// What the live proxy reports for this traffic when it stops.
	live := timeline.New(timeline.Config{})
	pl := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{live}})
	if err := pl.Run(context.Background(), pipeline.Slice(kept)); err != nil {
		t.Fatal(err)
	}
	live.Close(time.Time{})
	var want bytes.Buffer
	if err := timeline.WriteJSON(&want, live.Report()); err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	jw, err := journal.Open(dir, journal.Options{KproxyVersion: "test"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range kept {
		jw.Append(x)
	}
	if err := jw.Close(); err != nil {
		t.Fatal(err)
	}
	if got := replayJSON(t, dir); !bytes.Equal(got, want.Bytes()) {
		t.Errorf("replay settles differently from the live proxy\nlive:\n%s\nreplay:\n%s", want.Bytes(), got)
	}
}

// TestReplayStormFlags checks that replay takes serve's storm settings, so
// that the same settings tell the same storms, and refuses bad ones.
func TestReplayStormFlags(t *testing.T) {
	out, err := runKproxy(t, "replay", seedSample)
	if err != nil || strings.Contains(out, " storm: ") {
		t.Fatalf("default settings: err %v, storm line present: %v", err, strings.Contains(out, " storm: "))
	}
	out, err = runKproxy(t, "replay", seedSample, "--storm-rebalances", "2", "--storm-window", "1m")
	if err != nil || !strings.Contains(out, " storm: 2 rebalances") {
		t.Errorf("--storm-rebalances 2: err %v; want a storm of 2 rebalances in:\n%s", err, out)
	}
	for _, args := range [][]string{
		{"--storm-rebalances", "1"},
		{"--storm-window", "0s"},
	} {
		_, err := runKproxy(t, append([]string{"replay", seedSample}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]) {
			t.Errorf("replay %v: err %v; want an error naming %s", args, err, args[0])
		}
	}
}

// TestReplayIgnoresFetchRecords: the seed scenario's consumers fetch
// through kproxy, so its journal holds Fetch requests (for the
// diagnosis); replaying a copy without them tells exactly the same story.
func TestReplayIgnoresFetchRecords(t *testing.T) {
	cluster := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	jp := startJournaledProxy(t, cluster.ListenAddrs())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := demo.Run(ctx, jp.proxy.Addr().String(), shortDemo); err != nil {
		t.Fatal(err)
	}
	jp.stop()

	r, err := journal.OpenReader(jp.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	dir := t.TempDir()
	w, err := journal.Open(dir, journal.Options{KproxyVersion: "test"}, zaptest.NewLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	fetches := 0
	for {
		x, err := r.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if x.APIKey == 1 {
			fetches++
			continue
		}
		w.Append(x)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if fetches == 0 {
		t.Fatal("the journal holds no Fetch request; want the consumers' fetches")
	}
	with, without := replayJSON(t, jp.dir), replayJSON(t, dir)
	if !bytes.Equal(with, without) {
		t.Fatalf("replay with %d Fetch records differs from replay without\nwith:\n%s\nwithout:\n%s", fetches, with, without)
	}
}
