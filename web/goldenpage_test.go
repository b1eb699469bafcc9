package web

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"testing"

	"github.com/kproxy-dev/kproxy/timeline"
)

// readGolden is the timeline's golden report of name
// (../timeline/testdata/NAME.json).
func readGolden(t *testing.T, name string) *timeline.Report {
	t.Helper()
	b, err := os.ReadFile("../timeline/testdata/" + name + ".json")
	if err != nil {
		t.Fatal(err)
	}
	var r timeline.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

// pageSource is where a test opens the page: base, then sep before a
// route ("groups/g").
type pageSource struct{ name, base, sep string }

// pageSources serves r and writes it as replay's HTML file: the two places
// the page is opened from, each to be checked the same way.
func pageSources(t *testing.T, r *timeline.Report) []pageSource {
	t.Helper()
	errs := NewRequestErrors(0, 0)
	srv := httptest.NewServer(NewHandler(snapshotOf(r), errs))
	t.Cleanup(srv.Close)
	file := t.TempDir() + "/report.html"
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r, errs, nil); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return []pageSource{{"served", srv.URL, "/"}, {"file", "file://" + file, "#/"}}
}
