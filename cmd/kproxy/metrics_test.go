package main

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/proxy"
)

// TestMetricsCoverStats fails when proxy.Stats gains a field that /metrics
// does not expose, or when two metrics read the same field.
func TestMetricsCoverStats(t *testing.T) {
	var s proxy.Stats
	v := reflect.ValueOf(&s).Elem()
	// Field i holds i+1, so each metric's value names the field it reads.
	for i := 0; i < v.NumField(); i++ {
		switch f := v.Field(i); f.Kind() {
		case reflect.Int64:
			f.SetInt(int64(i + 1))
		case reflect.Uint64:
			f.SetUint(uint64(i + 1))
		default:
			t.Fatalf("proxy.Stats.%s is a %s; teach metrics.go about it", v.Type().Field(i).Name, f.Kind())
		}
	}
	read := map[float64]string{}
	for _, m := range metrics {
		val := m.value(s)
		if other, dup := read[val]; dup {
			t.Errorf("%s and %s read the same field", m.name, other)
		}
		read[val] = m.name
	}
	for i := 0; i < v.NumField(); i++ {
		if _, ok := read[float64(i+1)]; !ok {
			t.Errorf("proxy.Stats.%s has no metric", v.Type().Field(i).Name)
		}
	}
}

func TestWriteMetrics(t *testing.T) {
	var b bytes.Buffer
	if err := writeMetrics(&b, proxy.Stats{ConnectionsOpen: 3, ConnectionsTotal: 12345678901}); err != nil {
		t.Fatal(err)
	}
	m := parseMetrics(t, b.String())
	if len(m) != len(metrics) {
		t.Errorf("%d samples; want %d", len(m), len(metrics))
	}
	for name, want := range map[string]float64{"kproxy_connections_open": 3, "kproxy_connections_total": 12345678901} {
		if m[name] != want {
			t.Errorf("%s = %v; want %v", name, m[name], want)
		}
	}
	for _, want := range []string{"# TYPE kproxy_connections_open gauge\n", "# TYPE kproxy_connections_total counter\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q", want)
		}
	}
}
