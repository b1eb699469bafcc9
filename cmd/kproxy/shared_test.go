package main

import (
	"encoding/json"
	"net/http"
	"testing"

	"github.com/kproxy-dev/kproxy/demo"
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
