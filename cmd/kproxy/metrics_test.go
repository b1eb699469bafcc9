package main

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/proxy"
)

// TestMetricsCoverStats fails when proxy.Stats or journal.Stats gains a
// field that /metrics does not expose, or when two metrics read the same
// field.
func TestMetricsCoverStats(t *testing.T) {
	t.Run("proxy", func(t *testing.T) { checkCoverage(t, proxyMetrics) })
	t.Run("journal", func(t *testing.T) { checkCoverage(t, journalMetrics) })
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

func TestMetricsRegistry(t *testing.T) {
	ps := proxy.Stats{ConnectionsOpen: 3, ConnectionsTotal: 12345678901}
	tests := []struct {
		name    string
		journal *journal.Stats
		want    map[string]float64
		absent  []string
	}{
		{"without a journal", nil,
			map[string]float64{"kproxy_connections_open": 3, "kproxy_connections_total": 12345678901},
			[]string{"kproxy_journal_records_written_total"}},
		{"with a journal", &journal.Stats{Written: 7, Bytes: 4096, Dropped: 2},
			map[string]float64{"kproxy_connections_open": 3, "kproxy_journal_records_written_total": 7,
				"kproxy_journal_bytes_written_total": 4096, "kproxy_journal_dropped_total": 2,
				"kproxy_journal_write_failed": 0},
			nil},
		{"with a failed journal", &journal.Stats{Err: errors.New("disk full")},
			map[string]float64{"kproxy_journal_write_failed": 1},
			nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := adminSources{proxy: func() proxy.Stats { return ps }}
			if tt.journal != nil {
				src.journal = func() journal.Stats { return *tt.journal }
			}
			text := scrape(t, newMetricsRegistry(src))
			m := parseMetrics(t, text)
			for name, want := range tt.want {
				if got, ok := m[name]; !ok || got != want {
					t.Errorf("%s = %v (present %v); want %v", name, got, ok, want)
				}
			}
			for _, name := range tt.absent {
				if _, ok := m[name]; ok {
					t.Errorf("%s is exposed; want it absent", name)
				}
			}
			for _, ms := range [][]string{names(proxyMetrics)} {
				for _, name := range ms {
					if _, ok := m[name]; !ok {
						t.Errorf("%s is missing", name)
					}
				}
			}
			for _, want := range []string{"# TYPE kproxy_connections_open gauge\n", "# TYPE kproxy_connections_total counter\n",
				"\ngo_goroutines ", "\nprocess_cpu_seconds_total "} {
				if !strings.Contains(text, want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}

func names[S any](ms []metric[S]) []string {
	var out []string
	for _, m := range ms {
		out = append(out, m.name)
	}
	return out
}
