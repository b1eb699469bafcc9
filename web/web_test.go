package web

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/kproxy-dev/kproxy/timeline"
)

// seedReport is the seed scenario's report, the timeline's golden file.
func seedReport(t testing.TB) *timeline.Report {
	t.Helper()
	b, err := os.ReadFile("../timeline/testdata/seed.json")
	if err != nil {
		t.Fatal(err)
	}
	var r timeline.Report
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatal(err)
	}
	return &r
}

func get(t *testing.T, h http.Handler, path string) (int, string, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, rec.Header().Get("Content-Type"), string(b)
}

func TestHandlerRoutes(t *testing.T) {
	r := seedReport(t)
	h := NewHandler(func() *timeline.Report { return r })
	tests := []struct {
		name, path string
		code       int
		ctype      string
		contains   string
	}{
		{"the list page", "/", 200, "text/html; charset=utf-8", `<script src="/assets/app.js"`},
		{"a group page", "/groups/test_group_1", 200, "text/html; charset=utf-8", `<main id="app">`},
		{"the script", "/assets/app.js", 200, "text/javascript; charset=utf-8", "function showGroup"},
		{"the style", "/assets/app.css", 200, "text/css; charset=utf-8", "#chart"},
		{"the summaries", "/api/groups", 200, "application/json", `"group":"test_group_1"`},
		{"a group's report", "/api/groups/test_group_1", 200, "application/json", `"generations":[`},
		{"an unknown group", "/api/groups/nope", 404, "text/plain; charset=utf-8", "no group nope"},
		{"an unknown page", "/nope", 404, "text/plain; charset=utf-8", "404"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, ctype, body := get(t, h, tt.path)
			if code != tt.code || ctype != tt.ctype || !strings.Contains(body, tt.contains) {
				t.Errorf("GET %s: %d %q, body contains %q: %v; want %d %q and true", tt.path, code, ctype, tt.contains,
					strings.Contains(body, tt.contains), tt.code, tt.ctype)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	seed := seedReport(t).Groups[0]
	pending := seed
	pending.PendingRebalance = &timeline.PendingReport{Generation: 3, StartedAt: seed.Generations[1].StableAt,
		Trigger: timeline.TriggerReport{Kind: "member_left"}}
	tests := []struct {
		name string
		g    timeline.GroupReport
		want GroupSummary
	}{
		{"the seed", seed, GroupSummary{Group: "test_group_1", GroupProtocol: "classic", Assignor: "range", State: "stable",
			Generation: 2, Members: 2, LastRebalance: seed.Generations[1].StartedAt, LastTrigger: "member_joined",
			RebalancesLastHour: 2, LastSeen: seed.LastSeen}},
		{"a rebalance under way", pending, GroupSummary{Group: "test_group_1", GroupProtocol: "classic", Assignor: "range",
			State: "rebalancing", Generation: 2, Members: 2, LastRebalance: seed.Generations[1].StableAt, LastTrigger: "member_left",
			RebalancesLastHour: 2, LastSeen: seed.LastSeen}},
		{"nothing seen yet", timeline.GroupReport{Group: "g"}, GroupSummary{Group: "g", State: "unknown"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Summarize(&tt.g)
			gb, _ := json.Marshal(got)
			wb, _ := json.Marshal(tt.want)
			if string(gb) != string(wb) {
				t.Errorf("got %s; want %s", gb, wb)
			}
		})
	}
}

// TestWriteHTML checks that the report page is self-contained: no
// reference to another file or host, and data that cannot close its
// script element.
func TestWriteHTML(t *testing.T) {
	r := seedReport(t)
	r.Groups[0].Group = "</script><script>alert(1)</script>"
	var b strings.Builder
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, bad := range []string{`src="`, `href="/assets`, "https://", "</script><script>alert"} {
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q", bad)
		}
	}
	for _, want := range []string{`<script id="kproxy-data" type="application/json">{"summaries":[`, "function showGroup", "#chart"} {
		if !strings.Contains(page, want) {
			t.Errorf("the page lacks %q", want)
		}
	}
}
