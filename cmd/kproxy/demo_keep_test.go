//go:build integration

package main

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/demo"
)

// TestDemoKeep runs the shortened demo with --keep: it prints the web
// page's address, stays up after the scenario serving the page, the group
// and its metrics by name, and ends cleanly when interrupted.
func TestDemoKeep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- runDemo(ctx, &out, &errOut, demoFlags{admin: "127.0.0.1:0", keep: true}, shortDemo)
	}()
	waitFor(t, "the demo to stay up after its scenario", func() bool {
		return strings.Contains(out.String(), "stays up (--keep)")
	})
	m := regexp.MustCompile(`kproxy demo: web page at (http://127\.0\.0\.1:\d+)/groups/` + demo.Group).FindStringSubmatch(out.String())
	if m == nil {
		t.Fatalf("the demo did not print its web page's address:\n%s", out.String())
	}
	base := m[1]
	if page := httpGet(t, base+"/groups/"+demo.Group); !strings.Contains(page, `<main id="app">`) {
		t.Errorf("/groups/%s is not the page:\n%s", demo.Group, page)
	}
	if g, ok := apiGroup(t, base); !ok || len(g.Generations) < 2 {
		t.Errorf("/api/groups/%s: found %v, %d generations; want the seed's", demo.Group, ok, len(g.Generations))
	}
	metrics := parseMetrics(t, httpGet(t, base+"/metrics"))
	if got := metrics[`kproxy_group_rebalances_total{group="`+demo.Group+`",trigger="member_joined"}`]; got != 2 {
		t.Errorf("the demo's metrics count %v rebalances of %s triggered by a member joining; want 2", got, demo.Group)
	}
	if got := metrics[`kproxy_requests_total{api="JoinGroup"}`]; got < 2 {
		t.Errorf("the demo's metrics count %v JoinGroups; want at least 2", got)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("demo after Ctrl-C: %v\n%s", err, errOut.String())
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the demo did not stop when interrupted")
	}
}
