package main

import (
	"bytes"
	"context"
	"encoding/json"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/diagnose"
)

// TestServeDiagnosis runs the session-timeout scenario through `kproxy
// serve` with a journal and JSON logs, and checks the live diagnosis: the
// warning logged at warn level before the eviction, both at
// /api/diagnosis while serving, and, once stopped, the live findings
// byte for byte equal to `kproxy diagnose` on the journal.
func TestServeDiagnosis(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(t.TempDir(), "journal")
	cfg.LogFormat = "json"
	core, logs := observer.New(zapcore.WarnLevel)
	s, err := newServer(cfg, zap.New(core))
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	stopped := false
	defer func() {
		if !stopped {
			cancel()
			<-done
		}
	}()

	runSessionTimeout(t, s.proxy.Addr().String())
	base := "http://" + s.admin.Addr().String()
	var doc diagnose.Document
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/diagnosis")), &doc); err != nil {
		t.Fatalf("/api/diagnosis is not JSON: %v", err)
	}
	if got, want := kindsOf(doc.Findings), []diagnose.Kind{diagnose.SessionTimeoutWarning, diagnose.SessionTimeoutEviction}; !slices.Equal(got, want) {
		t.Errorf("/api/diagnosis kinds %v; want %v", got, want)
	}
	cancel()
	stopped = true
	if err := <-done; err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}

	var logged []string
	for _, e := range logs.FilterLoggerName("diagnosis").All() {
		if e.Level != zapcore.WarnLevel {
			t.Errorf("diagnosis logged at %s; want warn", e.Level)
		}
		kind, _ := e.ContextMap()["kind"].(string)
		logged = append(logged, kind)
	}
	if want := []string{string(diagnose.SessionTimeoutWarning), string(diagnose.SessionTimeoutEviction)}; !slices.Equal(logged, want) {
		t.Errorf("logged findings %v; want %v, in that order", logged, want)
	}

	var live bytes.Buffer
	if err := diagnose.WriteJSON(&live, s.obs.diagnosis.Findings()); err != nil {
		t.Fatal(err)
	}
	var replayed, errOut bytes.Buffer
	if err := runDiagnose(context.Background(), []string{cfg.Journal}, diagnoseOptions{format: "json",
		journalWindow: journalWindow{stormRebalances: cfg.StormRebalances, stormWindow: cfg.StormWindow}}, &replayed, &errOut); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, errOut.String())
	}
	if !bytes.Equal(live.Bytes(), replayed.Bytes()) {
		t.Errorf("live findings differ from the journal's\nlive:\n%s\njournal:\n%s", live.String(), replayed.String())
	}
}
