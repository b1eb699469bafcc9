//go:build integration

package main

import (
	"context"
	"io"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/demo"
)

// TestAdminHammeredWhileTrafficFlows runs the seed scenario through serve
// with a small queue (16 exchanges) while eight clients ask for the
// timeline, its text and the metrics as fast as they can: readers take
// snapshots and never hold up the pipeline, so nothing is dropped, and
// the final report has the scenario's generations.
func TestAdminHammeredWhileTrafficFlows(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.ObserverQueue = 16
	s, err := newServer(cfg, zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()

	base := "http://" + s.admin.Addr().String()
	stop := make(chan struct{})
	var requests atomic.Int64
	var wg sync.WaitGroup
	for i := range 8 {
		path := []string{"/api/timeline", "/timeline", "/metrics", "/api/timeline?limit=1000"}[i%4]
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				resp, err := http.Get(base + path)
				if err != nil {
					t.Error(err)
					return
				}
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					t.Errorf("%s: status %d", path, resp.StatusCode)
					return
				}
				requests.Add(1)
			}
		})
	}

	dctx, dcancel := context.WithTimeout(ctx, 30*time.Second)
	defer dcancel()
	err = demo.Run(dctx, s.proxy.Addr().String(), demo.Options{
		WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
		BJoinsAfter: 1500 * time.Millisecond, BothFor: 2 * time.Second,
	})
	close(stop)
	wg.Wait()
	cancel()
	if rerr := <-done; rerr != nil {
		t.Fatalf("run() = %v", rerr)
	}
	if err != nil {
		t.Fatalf("scenario: %v", err)
	}
	if n := requests.Load(); n < 100 {
		t.Errorf("%d admin requests answered; want the admin server hammered (at least 100)", n)
	}
	if d := s.proxy.Stats().ObserverDrops; d != 0 {
		t.Errorf("%d exchanges dropped while the admin server was hammered; want none", d)
	}
	g := findGroup(*s.obs.story.Report(), demo.Group)
	if g == nil || len(g.Generations) < 2 {
		t.Errorf("report of %s: %+v; want the scenario's two generations", demo.Group, g)
	}
	t.Logf("%d admin requests during the scenario", requests.Load())
}
