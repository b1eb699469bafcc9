package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kproxy-dev/kproxy/config"
	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
)

// The helpers here serve tests of both lanes: the untagged files that
// `go test ./...` runs and the files behind the integration and browser
// build tags (docs/testing.md).

// apiGroup is /api/groups/{demo.Group}; ok is false while it is 404.
func apiGroup(t *testing.T, base string) (g timeline.GroupReport, ok bool) {
	t.Helper()
	resp, err := http.Get(base + "/api/groups/" + demo.Group)
	if err != nil {
		t.Fatalf("GET /api/groups/%s: %v", demo.Group, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotFound {
		return g, false
	}
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /api/groups/%s: %s", demo.Group, resp.Status)
	}
	if err := json.NewDecoder(resp.Body).Decode(&g); err != nil {
		t.Fatalf("GET /api/groups/%s: %v", demo.Group, err)
	}
	return g, true
}

// fleetTopic is the events topic of the fleet tests.
const fleetTopic = "kproxy-events"

// diagMember is a consumer polling in its own goroutine until stopped.
type diagMember struct {
	cl     *kgo.Client
	cancel context.CancelFunc
	done   chan struct{}
	polled atomic.Int64 // records the poll loop has received
}

// startDiagMember starts a consumer of group on topics through addr.
func startDiagMember(t *testing.T, addr, group, clientID string, topics []string, opts ...kgo.Opt) *diagMember {
	t.Helper()
	opts = append([]kgo.Opt{kgo.SeedBrokers(addr), kgo.ConsumerGroup(group), kgo.ConsumeTopics(topics...),
		kgo.ClientID(clientID), kgo.HeartbeatInterval(300 * time.Millisecond), kgo.SessionTimeout(3 * time.Second),
		kgo.RebalanceTimeout(5 * time.Second), kgo.FetchMaxWait(200 * time.Millisecond)}, opts...)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	m := &diagMember{cl: cl, cancel: cancel, done: make(chan struct{})}
	go func() { // ends when stop cancels ctx
		defer close(m.done)
		for ctx.Err() == nil {
			m.polled.Add(int64(m.cl.PollFetches(ctx).NumRecords()))
		}
	}()
	t.Cleanup(m.stop)
	return m
}

// stop ends the poll loop and closes the client (a dynamic member leaves
// the group; a static one does not).
func (m *diagMember) stop() {
	if m.cancel == nil {
		return
	}
	m.cancel()
	<-m.done
	m.cl.Close()
	m.cancel = nil
}

// groupMeta waits until m is in a generation and returns its member id
// and generation.
func (m *diagMember) groupMeta(t *testing.T) (string, int32) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for time.Now().Before(deadline) {
		if id, gen := m.cl.GroupMetadata(); id != "" && gen > 0 {
			return id, gen
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the member never joined")
	return "", 0
}

// sameAsJournal fails t unless live, the findings serve told with cfg, are
// byte for byte those `kproxy diagnose` finds in its journal.
func sameAsJournal(t *testing.T, live []diagnose.Finding, cfg config.Config) {
	t.Helper()
	var told bytes.Buffer
	if err := diagnose.WriteJSON(&told, live); err != nil {
		t.Fatal(err)
	}
	var replayed, errOut bytes.Buffer
	if err := runDiagnose(context.Background(), []string{cfg.Journal}, diagnoseOptions{format: "json",
		journalWindow: journalWindow{stormRebalances: cfg.StormRebalances, stormWindow: cfg.StormWindow}}, &replayed, &errOut); err != nil {
		t.Fatalf("diagnose: %v\n%s", err, errOut.String())
	}
	if !bytes.Equal(told.Bytes(), replayed.Bytes()) {
		t.Errorf("live findings differ from the journal's\nlive:\n%s\njournal:\n%s", told.String(), replayed.String())
	}
}
