package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestMetricsAfterSeed runs the shortened seed scenario through kproxy
// serve and reads /metrics: the group's two rebalances triggered by a
// member joining, A's commit during revocation (ok), its generation and
// the per-API counts of the exchanges kproxy observed.
func TestMetricsAfterSeed(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	s, err := newServer(testConfig(t, c.ListenAddrs()...), zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() { cancel(); <-done }()
	dctx, dcancel := context.WithTimeout(ctx, time.Minute)
	defer dcancel()
	if err := demo.Run(dctx, s.proxy.Addr().String(), shortDemo); err != nil {
		t.Fatalf("scenario: %v", err)
	}
	base := "http://" + s.admin.Addr().String()
	g := `group="` + demo.Group + `"`
	exact := map[string]float64{
		`kproxy_group_rebalances_total{` + g + `,trigger="member_joined"}`: 2,
		`kproxy_group_storm{` + g + `}`:                                    0,
		`kproxy_group_metrics_folded_groups_total`:                         0,
	}
	atLeastOne := []string{
		`kproxy_group_generation{` + g + `}`,
		`kproxy_group_rebalance_duration_seconds_count{` + g + `}`,
		`kproxy_requests_total{api="JoinGroup"}`,
		`kproxy_requests_total{api="SyncGroup"}`,
		`kproxy_requests_total{api="OffsetCommit"}`,
		`kproxy_request_duration_seconds_count{api="SyncGroup"}`,
		`kproxy_request_errors_total{api="JoinGroup",error="MEMBER_ID_REQUIRED"}`,
	}
	// The seed's rebalance (B joining) has one commit during revocation,
	// A's, ok; B leaving at the end may make another (in a generation or
	// the rebalance still pending): /metrics counts what the report has.
	okCommit := `kproxy_group_commits_during_revocation_total{` + g + `,result="ok"}`
	var (
		m                 map[string]float64
		ok, gen2, members int
		last              int32
		state             string
	)
	defer func() {
		if t.Failed() {
			t.Logf("last seen: %s", state)
		}
	}()
	waitFor(t, "/metrics to show both rebalances and the report's commits", func() bool {
		rep, _ := apiGroup(t, base)
		ok, gen2 = 0, 0
		if n := len(rep.Generations); n > 0 {
			members, last = len(rep.Generations[n-1].Members), rep.Generations[n-1].Generation
		}
		for _, gen := range rep.Generations {
			for _, c := range gen.CommitsDuringRevocation {
				if c.Result == "ok" {
					ok++
					if gen.Generation == 2 {
						gen2++
					}
				}
			}
		}
		if p := rep.PendingRebalance; p != nil {
			for _, c := range p.CommitsDuringRevocation {
				if c.Result == "ok" {
					ok++
				}
			}
		}
		m = parseMetrics(t, httpGet(t, base+"/metrics"))
		state = fmt.Sprintf("member_joined %v, ok commits %v (report %d), generation %v (report %d); report %s",
			m[`kproxy_group_rebalances_total{`+g+`,trigger="member_joined"}`], m[okCommit], ok,
			m[`kproxy_group_generation{`+g+`}`], last, httpGet(t, base+"/timeline"))
		return m[`kproxy_group_rebalances_total{`+g+`,trigger="member_joined"}`] == 2 && m[okCommit] == float64(ok)
	})
	// The group's gauges are its latest generation's, or, once the last
	// member has left, the empty generation's (the coordinator bumps it;
	// the report may not list it yet).
	if gen, n := m[`kproxy_group_generation{`+g+`}`], m[`kproxy_group_members{`+g+`}`]; !(gen == float64(last) && n == float64(members) || gen > float64(last) && n == 0) {
		t.Errorf("kproxy_group_generation %v, kproxy_group_members %v; want %d and %d, or a later, empty generation", gen, n, last, members)
	}
	if gen2 != 1 {
		t.Errorf("generation 2 has %d ok commits during revocation; want 1 (A's)", gen2)
	}
	for name, want := range exact {
		if got, ok := m[name]; !ok || got != want {
			t.Errorf("%s = %v (present %v); want %v", name, got, ok, want)
		}
	}
	for _, name := range atLeastOne {
		if got := m[name]; got < 1 {
			t.Errorf("%s = %v; want at least 1", name, got)
		}
	}
	if m[`kproxy_requests_total{api="JoinGroup"}`] < m[`kproxy_request_errors_total{api="JoinGroup",error="MEMBER_ID_REQUIRED"}`] {
		t.Errorf("fewer JoinGroups than JoinGroup errors: %v", m)
	}
	if got := m[`kproxy_group_generation{`+g+`}`]; got < 2 {
		t.Errorf("kproxy_group_generation = %v; want at least 2", got)
	}
}

// TestGroupMetricsCardinality counts 1,200 groups with the default bound
// of 1,000: the first 1,000 to appear by name, the rest under _other.
func TestGroupMetricsCardinality(t *testing.T) {
	m := newGroupMetrics(1000)
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	for i := range 1200 {
		group := fmt.Sprintf("group-%05d", i)
		m.Record(timeline.Entry{At: at, Group: group, Kind: timeline.KindStable, Generation: int32(1 + i%3),
			Text: "gen 1 stable", Stable: &timeline.StableFacts{Trigger: "member_joined", StopTheWorld: 12500 * time.Microsecond, Members: 2}})
		m.Record(timeline.Entry{At: at, Group: group, Kind: timeline.KindCommit, Generation: 2, Member: "m",
			Text:   "commit during revocation m gen 1 t[0]=1 FAILED t[0] REBALANCE_IN_PROGRESS",
			Commit: &timeline.CommitFacts{DuringRevocation: true, Responded: true, Failed: true, Errors: []string{"REBALANCE_IN_PROGRESS"}}})
		m.Record(timeline.Entry{At: at, Group: group, Kind: timeline.KindCommit, Generation: 2, Member: "m",
			Text:   "commit m gen 1 t[0]=1 FAILED t[0] ILLEGAL_GENERATION", // not during a revocation
			Commit: &timeline.CommitFacts{Responded: true, Failed: true, Errors: []string{"ILLEGAL_GENERATION"}}})
		if i%2 == 0 {
			m.Record(timeline.Entry{At: at, Group: group, Kind: timeline.KindStorm, Generation: 1})
		}
	}
	// A group under _other empties: _other's members drop by its two, and
	// it is forgotten (groups made per run must not grow memory).
	m.Record(timeline.Entry{At: at, Group: "group-01001", Kind: timeline.KindGroupEmpty, Generation: 4})
	if n := len(m.other); n != 199 {
		t.Errorf("%d groups remembered under _other; want 199 (the empty one forgotten)", n)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	got := parseMetrics(t, scrape(t, reg))
	labels := map[string]bool{}
	groupLabel := regexp.MustCompile(`group="([^"]*)"`)
	for name := range got {
		if sm := groupLabel.FindStringSubmatch(name); sm != nil {
			labels[sm[1]] = true
		}
	}
	if len(labels) != 1001 {
		t.Errorf("%d group labels; want 1001 (1,000 groups and _other)", len(labels))
	}
	for _, want := range []string{"group-00000", "group-00999", otherGroup} {
		if !labels[want] {
			t.Errorf("no metrics for group %s", want)
		}
	}
	if labels["group-01000"] {
		t.Errorf("group-01000 has its own metrics; want it under %s", otherGroup)
	}
	for name, want := range map[string]float64{
		"kproxy_group_metrics_folded_groups_total":                                                    200,
		`kproxy_group_rebalances_total{group="_other",trigger="member_joined"}`:                       200,
		`kproxy_group_members{group="_other"}`:                                                        398,
		`kproxy_group_generation{group="_other"}`:                                                     4,
		`kproxy_group_storm{group="_other"}`:                                                          100,
		`kproxy_group_commits_during_revocation_total{group="_other",result="REBALANCE_IN_PROGRESS"}`: 200,
		`kproxy_group_rebalance_duration_seconds_count{group="_other"}`:                               200,
		`kproxy_group_rebalances_total{group="group-00042",trigger="member_joined"}`:                  1,
		`kproxy_group_rebalance_duration_seconds_bucket{group="group-00042",le="0.05"}`:               1,
		`kproxy_group_generation{group="group-00042"}`:                                                1,
		`kproxy_group_members{group="group-00042"}`:                                                   2,
		`kproxy_group_storm{group="group-00042"}`:                                                     1,
		`kproxy_group_storm{group="group-00043"}`:                                                     0,
	} {
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (present %v); want %v", name, v, ok, want)
		}
	}
	for name := range got {
		if strings.Contains(name, "ILLEGAL_GENERATION") {
			t.Errorf("%s: a failed commit outside a revocation was counted as one during it", name)
		}
	}
}

// exportedMetrics is the name of every metric family kproxy's /metrics
// can expose, from the collectors' descriptions.
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	src := adminSources{
		proxy:    func() proxy.Stats { return proxy.Stats{} },
		pipeline: func() pipeline.Stats { return pipeline.Stats{} },
		journal:  func() journal.Stats { return journal.Stats{} },
	}
	ch := make(chan *prometheus.Desc, 1024)
	for _, c := range []prometheus.Collector{
		newStatsCollector(proxyMetrics, src.proxy), newStatsCollector(pipelineMetrics, src.pipeline),
		newStatsCollector(journalMetrics, src.journal), newAPIMetrics(), newGroupMetrics(1),
	} {
		c.Describe(ch)
	}
	close(ch)
	fq := regexp.MustCompile(`fqName: "([^"]+)"`)
	out := map[string]bool{}
	for d := range ch {
		if m := fq.FindStringSubmatch(d.String()); m != nil {
			out[m[1]] = true
		}
	}
	return out
}

// TestGrafanaDashboard parses deploy/grafana/kproxy.json and checks that
// every kproxy metric its queries name is one kproxy exports.
func TestGrafanaDashboard(t *testing.T) {
	b, err := os.ReadFile("../../deploy/grafana/kproxy.json")
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Title  string `json:"title"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("deploy/grafana/kproxy.json: %v", err)
	}
	exported := exportedMetrics(t)
	name := regexp.MustCompile(`\bkproxy_[a-z_]+`)
	var used []string
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			for _, n := range name.FindAllString(tg.Expr, -1) {
				fam := n
				for _, suffix := range []string{"_bucket", "_sum", "_count"} {
					if base, ok := strings.CutSuffix(n, suffix); ok && exported[base] {
						fam = base
					}
				}
				if !exported[fam] {
					t.Errorf("panel %q queries %s, which kproxy does not export", p.Title, n)
				}
				used = append(used, fam)
			}
		}
	}
	for _, want := range []string{"kproxy_group_rebalances_total", "kproxy_group_rebalance_duration_seconds", "kproxy_requests_total"} {
		if !slices.Contains(used, want) {
			t.Errorf("the dashboard does not chart %s", want)
		}
	}
}
