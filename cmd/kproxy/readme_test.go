package main

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// TestReadmeShowsTheProduct keeps the top of the README true: its text
// timeline sample is lines of the seed journal's replay golden, in order
// (TestReplaySeedSample keeps that golden true), and the screenshot it
// shows exists (TestWebReportFile -update takes it).
func TestReadmeShowsTheProduct(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	const marker = "<!-- sample of cmd/kproxy/testdata/seed-rebalance.text; TestReadmeShowsTheProduct keeps it true -->\n```\n"
	_, rest, ok := strings.Cut(string(readme), marker)
	if !ok {
		t.Fatalf("README lacks the timeline sample after %q", marker)
	}
	sample, _, ok := strings.Cut(rest, "```\n")
	if !ok || strings.TrimSpace(sample) == "" {
		t.Fatal("the README's timeline sample is empty or unterminated")
	}
	golden, err := os.ReadFile("testdata/seed-rebalance.text")
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(golden), "\n")
	at := 0
	for _, want := range strings.Split(strings.TrimSuffix(sample, "\n"), "\n") {
		found := false
		for ; at < len(lines); at++ {
			if lines[at] == want {
				found, at = true, at+1
				break
			}
		}
		if !found {
			t.Errorf("README sample line is not in testdata/seed-rebalance.text (in order):\n%s", want)
			return
		}
	}
	const shot = "docs/img/group.png"
	if !strings.Contains(string(readme), "]("+shot+")") {
		t.Errorf("README does not show %s", shot)
	}
	png, err := os.ReadFile("../../" + shot)
	if err != nil {
		t.Fatalf("%v (go test -tags browser ./cmd/kproxy -run TestWebReportFile -update takes it)", err)
	}
	if !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("%s is not a PNG", shot)
	}
}
