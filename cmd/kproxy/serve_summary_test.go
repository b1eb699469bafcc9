package main

import (
	"testing"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
)

// TestLogStopped: serve's exit summary carries the proxy's observer drops
// and malformed frames, and is a warning when exchanges were dropped.
func TestLogStopped(t *testing.T) {
	tests := []struct {
		name     string
		stats    proxy.Stats
		pipeline pipeline.Stats
		level    zapcore.Level
	}{
		{"clean", proxy.Stats{ConnectionsTotal: 4}, pipeline.Stats{Undecoded: 2}, zapcore.InfoLevel},
		{"drops", proxy.Stats{ConnectionsTotal: 4, ObserverDrops: 9}, pipeline.Stats{Undecoded: 1}, zapcore.WarnLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.InfoLevel)
			logStopped(zap.New(core), tt.stats, tt.pipeline)
			all := logs.FilterMessageSnippet("kproxy stopped").All()
			if len(all) != 1 {
				t.Fatalf("%d summary lines; want 1", len(all))
			}
			e := all[0]
			m := e.ContextMap()
			if e.Level != tt.level || m["observer_drops"] != tt.stats.ObserverDrops ||
				m["malformed_frames"] != tt.pipeline.Undecoded || m["connections_served"] != tt.stats.ConnectionsTotal {
				t.Errorf("summary %v %v; want level %v and the stats %+v", e.Level, m, tt.level, tt.stats)
			}
		})
	}
}
