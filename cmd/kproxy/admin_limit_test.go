package main

import (
	"io"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestAdminOneRequestAtATime: while one request renders (a findings
// request held inside the handler), a second waits for its turn rather
// than running beside it, and the probes still answer at once; once the
// first is let go, the second is served.
func TestAdminOneRequestAtATime(t *testing.T) {
	entered := make(chan struct{}, 2)
	release := make(chan struct{})
	var inside, most atomic.Int32
	base := startAdmin(t, adminSources{
		timeline: func() *timeline.Snapshot { return nil },
		diagnosis: func(timeline.Query) ([]diagnose.Finding, string) {
			n := inside.Add(1)
			defer inside.Add(-1)
			if n > most.Load() {
				most.Store(n)
			}
			entered <- struct{}{}
			<-release
			return nil, ""
		},
	})
	get := func(path string) <-chan int {
		done := make(chan int, 1)
		go func() {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Error(err)
				done <- 0
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			done <- resp.StatusCode
		}()
		return done
	}
	first := get("/api/diagnosis")
	<-entered
	second := get("/api/diagnosis")
	for _, probe := range []string{"/healthz", "/readyz"} {
		select {
		case code := <-get(probe):
			if code != http.StatusOK {
				t.Errorf("%s while a request renders: status %d", probe, code)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not answer while a request rendered", probe)
		}
	}
	select {
	case <-entered:
		t.Fatal("a second request ran beside the first")
	case <-second:
		t.Fatal("the second request was answered before the first finished")
	case <-time.After(200 * time.Millisecond): // waiting its turn, as wanted
	}
	close(release)
	for _, done := range []<-chan int{first, second} {
		if code := <-done; code != http.StatusOK {
			t.Errorf("status %d after the turn came", code)
		}
	}
	if most.Load() != 1 {
		t.Errorf("%d requests rendered at once; want 1", most.Load())
	}
}
