package main

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
)

// TestMetricsCoverStats fails when proxy.Stats, pipeline.Stats or
// journal.Stats gains a field that /metrics does not expose, or when two
// metrics read the same field.
func TestMetricsCoverStats(t *testing.T) {
	t.Run("proxy", func(t *testing.T) { checkCoverage(t, proxyMetrics) })
	t.Run("pipeline", func(t *testing.T) { checkCoverage(t, pipelineMetrics) })
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

func TestWriteMetrics(t *testing.T) {
	tests := []struct {
		name    string
		journal *journal.Stats
		want    map[string]float64
		samples int
	}{
		{"without a journal", nil,
			map[string]float64{"kproxy_connections_open": 3, "kproxy_connections_total": 12345678901,
				"kproxy_malformed_frames_total": 5},
			len(proxyMetrics) + len(pipelineMetrics)},
		{"with a journal", &journal.Stats{Written: 7, Bytes: 4096, Dropped: 2},
			map[string]float64{"kproxy_connections_open": 3, "kproxy_journal_records_written_total": 7,
				"kproxy_journal_bytes_written_total": 4096, "kproxy_journal_dropped_total": 2,
				"kproxy_journal_write_failed": 0},
			len(proxyMetrics) + len(pipelineMetrics) + len(journalMetrics)},
		{"with a failed journal", &journal.Stats{Err: errors.New("disk full")},
			map[string]float64{"kproxy_journal_write_failed": 1},
			len(proxyMetrics) + len(pipelineMetrics) + len(journalMetrics)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var b bytes.Buffer
			if err := writeMetrics(&b, proxy.Stats{ConnectionsOpen: 3, ConnectionsTotal: 12345678901},
				pipeline.Stats{Undecoded: 5}, tt.journal); err != nil {
				t.Fatal(err)
			}
			m := parseMetrics(t, b.String())
			if len(m) != tt.samples {
				t.Errorf("%d samples; want %d", len(m), tt.samples)
			}
			for name, want := range tt.want {
				if got, ok := m[name]; !ok || got != want {
					t.Errorf("%s = %v (present %v); want %v", name, got, ok, want)
				}
			}
			for _, want := range []string{"# TYPE kproxy_connections_open gauge\n", "# TYPE kproxy_connections_total counter\n"} {
				if !strings.Contains(b.String(), want) {
					t.Errorf("metrics lack %q", want)
				}
			}
		})
	}
}
