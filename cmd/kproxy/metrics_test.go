package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestMetricsCoverStats fails when proxy.Stats, pipeline.Stats,
// journal.Stats or capture.Stats gains a field that /metrics does not expose, or when two
// metrics read the same field.
func TestMetricsCoverStats(t *testing.T) {
	t.Run("proxy", func(t *testing.T) { checkCoverage(t, proxyMetrics) })
	t.Run("pipeline", func(t *testing.T) { checkCoverage(t, pipelineMetrics) })
	t.Run("journal", func(t *testing.T) { checkCoverage(t, journalMetrics) })
	t.Run("capture", func(t *testing.T) { checkCoverage(t, captureMetrics) })
}

// checkCoverage sets numeric field i of S to i+2, so that each metric's
// value names the field it reads; an error field is set to an error and
// must make exactly one metric read 1 (and 0 while it is nil).
func checkCoverage[S any](t *testing.T, ms []metric[S]) {
	t.Helper()
	var s, zero S
	v := reflect.ValueOf(&s).Elem()
	errType := reflect.TypeFor[error]()
	errField := -1
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch {
		case f.Kind() == reflect.Int || f.Kind() == reflect.Int64:
			f.SetInt(int64(i + 2))
		case f.Kind() == reflect.Uint64:
			f.SetUint(uint64(i + 2))
		case f.Type() == errType && errField < 0:
			f.Set(reflect.ValueOf(errors.New("disk full")))
			errField = i
		default:
			t.Fatalf("%s.%s is a %s; teach metrics.go about it", v.Type(), name, f.Type())
		}
	}
	read := map[int]string{}
	for _, m := range ms {
		field := int(m.value(s)) - 2
		if m.value(s) == 1 && errField >= 0 {
			field = errField
			if m.value(zero) != 0 {
				t.Errorf("%s = %v without an error; want 0", m.name, m.value(zero))
			}
		}
		if other, dup := read[field]; dup {
			t.Errorf("%s and %s read the same field", m.name, other)
		}
		read[field] = m.name
	}
	for i := 0; i < v.NumField(); i++ {
		if _, ok := read[i]; !ok {
			t.Errorf("%s.%s has no metric", v.Type(), v.Type().Field(i).Name)
		}
	}
}

// scrape is what /metrics serves for the registry reg, as text.
func scrape(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	rec := httptest.NewRecorder()
	promhttp.HandlerFor(reg, promhttp.HandlerOpts{}).ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("/metrics: %d %s", rec.Code, rec.Body.String())
	}
	return rec.Body.String()
}

// TestMetricsRegistry scrapes /metrics' registry: every metric of the
// proxy's, the pipeline's and (when on) the journal's stats is exposed with
// its value, with the Go and process collectors', and, once the pipeline
// has fed them, every per-API and per-group metric family.
func TestMetricsRegistry(t *testing.T) {
	ps := proxy.Stats{ConnectionsOpen: 3, ConnectionsTotal: 12345678901}
	pls := pipeline.Stats{Exchanges: 9, Undecoded: 5}
	tests := []struct {
		name    string
		journal *journal.Stats
		fed     bool // the per-API and per-group metrics were fed
		want    map[string]float64
		absent  []string
	}{
		{"without a journal", nil, false,
			map[string]float64{"kproxy_connections_open": 3, "kproxy_connections_total": 12345678901,
				"kproxy_observed_exchanges_total": 9, "kproxy_malformed_frames_total": 5},
			[]string{"kproxy_journal_records_written_total", "kproxy_requests_total"}},
		{"with a journal", &journal.Stats{Written: 7, Bytes: 4096, Dropped: 2}, false,
			map[string]float64{"kproxy_connections_open": 3, "kproxy_journal_records_written_total": 7,
				"kproxy_journal_bytes_written_total": 4096, "kproxy_journal_dropped_total": 2,
				"kproxy_journal_write_failed": 0},
			nil},
		{"with a failed journal", &journal.Stats{Err: errors.New("disk full")}, false,
			map[string]float64{"kproxy_journal_write_failed": 1},
			nil},
		{"with per-API and per-group metrics", &journal.Stats{}, true,
			map[string]float64{
				`kproxy_requests_total{api="JoinGroup"}`:                                  1,
				`kproxy_request_duration_seconds_count{api="JoinGroup"}`:                  1,
				`kproxy_request_errors_total{api="JoinGroup",error="MEMBER_ID_REQUIRED"}`: 1,
				`kproxy_group_rebalances_total{group="g",trigger="member_joined"}`:        1,
				`kproxy_group_rebalance_duration_seconds_count{group="g"}`:                1,
				`kproxy_group_generation{group="g"}`:                                      2,
				`kproxy_group_members{group="g"}`:                                         2,
				`kproxy_group_commits_during_revocation_total{group="g",result="ok"}`:     1,
				`kproxy_group_suspect_commits_total{group="g",reason="backwards"}`:        1,
				`kproxy_group_storm{group="g"}`:                                           0,
				`kproxy_group_metrics_folded_groups_total`:                                0,
				"kproxy_observed_exchanges_total":                                         9,
			},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := adminSources{proxy: func() proxy.Stats { return ps }, pipeline: func() pipeline.Stats { return pls }}
			want := [][]string{names(proxyMetrics), names(pipelineMetrics)}
			if tt.journal != nil {
				src.journal = func() journal.Stats { return *tt.journal }
				want = append(want, names(journalMetrics))
			}
			if tt.fed {
				src.apis, src.groups = fedAPIMetrics(), fedGroupMetrics()
				var all []string
				for name := range exportedMetrics(t) {
					all = append(all, name)
				}
				want = append(want, all)
			}
			text := scrape(t, newMetricsRegistry(src))
			m := parseMetrics(t, text)
			for name, want := range tt.want {
				if got, ok := m[name]; !ok || got != want {
					t.Errorf("%s = %v (present %v); want %v", name, got, ok, want)
				}
			}
			for _, name := range tt.absent {
				if hasFamily(m, name) {
					t.Errorf("%s is exposed; want it absent", name)
				}
			}
			for _, ms := range want {
				for _, name := range ms {
					if !hasFamily(m, name) {
						t.Errorf("%s is missing", name)
					}
				}
			}
			for _, want := range []string{"# TYPE kproxy_connections_open gauge\n", "# TYPE kproxy_connections_total counter\n",
				"# TYPE kproxy_malformed_frames_total counter\n", "\ngo_goroutines ", "\ngo_gc_heap_live_bytes ", "\nprocess_cpu_seconds_total "} {
				if !strings.Contains(text, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

// hasFamily says whether the samples m hold one of the metric family
// name: name itself, name{...}, or a histogram's name_bucket, _sum or
// _count.
func hasFamily(m map[string]float64, name string) bool {
	for sample := range m {
		base, _, _ := strings.Cut(sample, "{")
		for _, suffix := range []string{"", "_bucket", "_sum", "_count"} {
			if base == name+suffix {
				return true
			}
		}
	}
	return false
}

// fedAPIMetrics are per-API metrics fed as the pipeline feeds them: one
// JoinGroup exchange, answered MEMBER_ID_REQUIRED after 3 ms.
func fedAPIMetrics() *apiMetrics {
	m := newAPIMetrics()
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	m.Append(&decode.Exchange{APIKey: int16(kmsg.JoinGroup), RequestAt: at, ResponseAt: at.Add(3 * time.Millisecond)})
	m.AddEvents([]decode.Event{{APIKey: int16(kmsg.JoinGroup), Group: "g",
		JoinGroup: &decode.JoinGroup{ErrorCode: kerr.MemberIDRequired.Code}}})
	return m
}

// fedGroupMetrics are per-group metrics fed the entries of one group's
// rebalance: stable generation 2 of two members, a commit during its
// revocation, a suspect commit.
func fedGroupMetrics() *groupMetrics {
	m := newGroupMetrics(10)
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	m.Record(timeline.Entry{At: at, Group: "g", Kind: timeline.KindCommit, Generation: 1, Member: "a",
		Text: "commit during revocation a gen 1 t[0]=1", Commit: &timeline.CommitFacts{DuringRevocation: true, Responded: true}})
	m.Record(timeline.Entry{At: at, Group: "g", Kind: timeline.KindStable, Generation: 2,
		Stable: &timeline.StableFacts{Trigger: "member_joined", StopTheWorld: 12500 * time.Microsecond, Members: 2}})
	m.Record(timeline.Entry{At: at, Group: "g", Kind: timeline.KindSuspectCommit, Generation: 2, Member: "a",
		Suspect: &timeline.SuspectFacts{Reasons: []string{"backwards"}}})
	return m
}

func names[S any](ms []metric[S]) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.name)
	}
	return out
}

// TestAPIMetricsNoAllocations: once an API and error have been seen,
// counting more of them allocates nothing (the label children are cached,
// the error codes' buffer reused).
func TestAPIMetricsNoAllocations(t *testing.T) {
	m, x, evs := apiMetricsLoad()
	if n := testing.AllocsPerRun(100, func() {
		m.Append(x)
		m.AddEvents(evs)
	}); n != 0 {
		t.Errorf("%v allocations per exchange; want 0", n)
	}
}

// BenchmarkAPIMetrics counts one OffsetCommit exchange with a failed
// partition per iteration.
func BenchmarkAPIMetrics(b *testing.B) {
	m, x, evs := apiMetricsLoad()
	b.ReportAllocs()
	for b.Loop() {
		m.Append(x)
		m.AddEvents(evs)
	}
}

// apiMetricsLoad is per-API metrics with an OffsetCommit exchange and its
// event (one partition failed) counted once.
func apiMetricsLoad() (*apiMetrics, *decode.Exchange, []decode.Event) {
	m := newAPIMetrics()
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	x := &decode.Exchange{APIKey: int16(kmsg.OffsetCommit), RequestAt: at, ResponseAt: at.Add(2 * time.Millisecond)}
	evs := []decode.Event{{APIKey: int16(kmsg.OffsetCommit), Group: "g", OffsetCommit: &decode.OffsetCommit{
		Topics: []decode.CommitTopic{{Topic: "t", Partitions: []decode.CommitPartition{
			{Partition: 0}, {Partition: 1, ErrorCode: kerr.UnknownMemberID.Code}}}}}}}
	m.Append(x)
	m.AddEvents(evs)
	return m, x, evs
}
