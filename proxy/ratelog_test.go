package proxy

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// TestRateLog: a kind of line is logged at most once per interval, the
// next one logged carries how many were suppressed, and kinds are limited
// separately.
func TestRateLog(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	log := zap.New(core)
	r := rateLog{every: 100 * time.Millisecond}
	for range 5 {
		r.warn(log, "refused", "refused")
	}
	r.warn(log, "idle", "idle")
	time.Sleep(150 * time.Millisecond)
	r.warn(log, "refused", "refused")

	all := logs.All()
	if len(all) != 3 {
		t.Fatalf("%d lines; want 3: %v", len(all), all)
	}
	if _, ok := all[0].ContextMap()["suppressed"]; ok {
		t.Errorf("first line %v carries suppressed; want none", all[0].ContextMap())
	}
	if got := all[2].ContextMap()["suppressed"]; got != int64(4) {
		t.Errorf("suppressed %v; want 4", got)
	}
}
