package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
)

// TestAdminSlowReaders: three connections that ask for every finding
// and never read the answer hold up neither a Prometheus scrape nor another
// reader of the API: a turn covers rendering only, and the answer waits in
// its own connection.
func TestAdminSlowReaders(t *testing.T) {
	_, live := retainedTimeline(t, timeline.Retention{})
	many := make([]diagnose.Finding, 40000) // about 10 MB of JSON
	for i := range many {
		many[i] = diagnose.Finding{Group: fmt.Sprintf("group-%d", i), Kind: "rebalance_loop", Explanation: strings.Repeat("x", 200)}
	}
	base := startAdmin(t, adminSources{timeline: live.Snapshot,
		diagnosis: func(q timeline.Query) ([]diagnose.Finding, string) {
			if q.Limit == 1 {
				return many[:1], ""
			}
			return many, ""
		}})
	size := bodySize(t, base+"/api/diagnosis")
	if size < 8<<20 {
		t.Fatalf("/api/diagnosis is %d bytes; the test needs more than the socket buffers hold", size)
	}
	addr := strings.TrimPrefix(base, "http://")
	for range 3 {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		c.(*net.TCPConn).SetReadBuffer(4 << 10)
		fmt.Fprintf(c, "GET /api/diagnosis HTTP/1.1\r\nHost: %s\r\n\r\n", addr)
	}
	time.Sleep(500 * time.Millisecond) // let them take their turns and stall
	for _, path := range []string{"/metrics", "/api/groups", "/api/diagnosis?limit=1"} {
		done := make(chan error, 1)
		go func() { _, err := bodySizeErr(base + path); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s beside slow readers: %v", path, err)
			}
		case <-time.After(20 * time.Second):
			t.Fatalf("%s held up by readers that do not read", path)
		}
	}
}

func bodySize(t *testing.T, url string) int {
	t.Helper()
	n, err := bodySizeErr(url)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

func bodySizeErr(url string) (int, error) {
	resp, err := http.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(io.Discard, resp.Body)
	if err == nil && resp.StatusCode != http.StatusOK {
		err = fmt.Errorf("status %s", resp.Status)
	}
	return int(n), err
}

// TestAdminWaitingForTheOwner: a reader of a group's view waiting for the
// timeline's owner to render it (here an owner that never comes to it)
// holds up neither a Prometheus scrape nor the probes, and stops waiting
// when it goes away; the owner then skips its render.
func TestAdminWaitingForTheOwner(t *testing.T) {
	_, live := retainedTimeline(t, timeline.Retention{})
	asked := make(chan struct{}, 1)
	live.SetOwner(func(ctx context.Context, fn func()) error {
		asked <- struct{}{}
		<-ctx.Done() // the owner is busy for longer than the reader waits
		return ctx.Err()
	})
	base := startAdmin(t, adminSources{timeline: live.Snapshot})
	group := live.Snapshot().IDs()[0]
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	view := make(chan error, 1)
	go func() {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/groups/"+group, nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			resp.Body.Close()
			err = fmt.Errorf("status %s", resp.Status)
		}
		view <- err
	}()
	<-asked
	for _, path := range []string{"/metrics", "/healthz", "/readyz"} {
		done := make(chan error, 1)
		go func() { _, err := bodySizeErr(base + path); done <- err }()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("%s beside a reader waiting for the owner: %v", path, err)
			}
		case <-time.After(5 * time.Second):
			t.Fatalf("%s held up by a reader waiting for the owner", path)
		}
	}
	cancel()
	select {
	case err := <-view:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("the reader that went away: %v; want its cancellation", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the reader that went away is still waiting")
	}
}
