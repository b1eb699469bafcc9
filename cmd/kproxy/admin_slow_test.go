package main

import (
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
