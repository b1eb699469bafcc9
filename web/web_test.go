package web

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/diagnose"
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

// snapshotOf is a Source always giving r's snapshot.
func snapshotOf(r *timeline.Report) Source {
	s := timeline.SnapshotOf(r, time.Time{})
	return func() *timeline.Snapshot { return s }
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
	h := NewHandler(snapshotOf(r), nil)
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
		{"a group's request errors", "/api/groups/test_group_1", 200, "application/json", `"requestErrors":[]`},
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

// TestWriteHTML checks that the report page is self-contained: no
// reference to another file or host, and data that cannot close its
// script element.
func TestWriteHTML(t *testing.T) {
	r := seedReport(t)
	r.Groups[0].Group = "</script><script>alert(1)</script>"
	var b strings.Builder
	if err := WriteHTML(&b, r, nil, nil); err != nil {
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

func TestRequestErrors(t *testing.T) {
	at := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	entry := func(group string, kind timeline.Kind, sec int) timeline.Entry {
		return timeline.Entry{At: at.Add(time.Duration(sec) * time.Second), Group: group, Kind: kind, Member: "m",
			Text: "Heartbeat from m failed: ILLEGAL_GENERATION", Failure: &timeline.FailureFacts{API: "Heartbeat", Error: "ILLEGAL_GENERATION"}}
	}
	tests := []struct {
		name     string
		perGroup int
		groups   int
		entries  []timeline.Entry
		want     map[string]int // group → errors kept
	}{
		{"errors and fencings are kept, other entries not", 10, 10,
			[]timeline.Entry{entry("g", timeline.KindError, 1), entry("g", timeline.KindFenced, 2), entry("g", timeline.KindCommit, 3)},
			map[string]int{"g": 2}},
		{"the latest per group", 2, 10,
			[]timeline.Entry{entry("g", timeline.KindError, 1), entry("g", timeline.KindError, 2), entry("g", timeline.KindError, 3)},
			map[string]int{"g": 2}},
		{"the group with the oldest latest error is forgotten", 10, 2,
			[]timeline.Entry{entry("a", timeline.KindError, 5), entry("b", timeline.KindError, 1), entry("c", timeline.KindError, 6)},
			map[string]int{"a": 1, "b": 0, "c": 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewRequestErrors(tt.perGroup, tt.groups)
			for _, e := range tt.entries {
				r.Record(e)
			}
			for g, want := range tt.want {
				if got := r.Group(g); len(got) != want {
					t.Errorf("group %s: %d errors %+v; want %d", g, len(got), got, want)
				}
			}
		})
	}
	r := NewRequestErrors(2, 0)
	for i := range 3 {
		r.Record(entry("g", timeline.KindError, i))
	}
	got := r.Group("g")
	if got[0].At != at.Add(time.Second).Format(time.RFC3339Nano) || got[0].API != "Heartbeat" || got[0].Error != "ILLEGAL_GENERATION" {
		t.Errorf("kept %+v; want the last two, with api and error", got)
	}
	var nilErrs *RequestErrors
	if nilErrs.Group("g") != nil {
		t.Error("a nil RequestErrors has errors")
	}
}

// TestGroupIDInPath serves a group whose id holds a slash and a space:
// escaped in the path, it is one segment.
func TestGroupIDInPath(t *testing.T) {
	r := &timeline.Report{Groups: []timeline.GroupReport{{Group: "a/b c"}}}
	h := NewHandler(snapshotOf(r), nil)
	if code, _, body := get(t, h, "/api/groups/a%2Fb%20c"); code != 200 || !strings.Contains(body, `"group":"a/b c"`) {
		t.Errorf("GET /api/groups/a%%2Fb%%20c: %d %s; want the group", code, body)
	}
	if code, _, _ := get(t, h, "/groups/a%2Fb%20c"); code != 200 {
		t.Errorf("GET /groups/a%%2Fb%%20c: %d; want the page", code)
	}
}

// TestHistoryFrom serves a snapshot whose history retention has cut: the
// group's JSON and both endpoints' Kproxy-History-From header say from
// when it is whole; without a cut, neither is there.
func TestHistoryFrom(t *testing.T) {
	r := seedReport(t)
	horizon := time.Date(2026, 3, 15, 14, 0, 0, 500, time.UTC)
	for _, tc := range []struct {
		name    string
		horizon time.Time
		want    string
	}{
		{"history cut", horizon, "2026-03-15T14:00:00.0000005Z"},
		{"history whole", time.Time{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := timeline.SnapshotOf(r, tc.horizon)
			h := NewHandler(func() *timeline.Snapshot { return s }, nil)
			for _, path := range []string{"/api/groups", "/api/groups/test_group_1"} {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, httptest.NewRequest("GET", path, nil))
				if got := rec.Header().Get("Kproxy-History-From"); got != tc.want {
					t.Errorf("GET %s: Kproxy-History-From %q; want %q", path, got, tc.want)
				}
			}
			_, _, body := get(t, h, "/api/groups/test_group_1")
			var v struct {
				HistoryFrom *string `json:"historyFrom"`
			}
			if err := json.Unmarshal([]byte(body), &v); err != nil {
				t.Fatal(err)
			}
			if got := v.HistoryFrom; tc.want == "" && got != nil || tc.want != "" && (got == nil || *got != tc.want) {
				t.Errorf("historyFrom %v; want %q (absent when empty)", got, tc.want)
			}
		})
	}
}

// TestGroupViewJSON checks that /api/groups/{group}, which adds the
// request errors to the report's JSON as the snapshot keeps it, serves
// what encoding the group's view writes.
func TestGroupViewJSON(t *testing.T) {
	r := seedReport(t)
	errs := NewRequestErrors(0, 0)
	errs.Record(timeline.Entry{At: time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC), Group: "test_group_1", Kind: timeline.KindError,
		Generation: 1, Member: "m", Text: "Heartbeat from m failed: ILLEGAL_GENERATION",
		Failure: &timeline.FailureFacts{API: "Heartbeat", Error: "ILLEGAL_GENERATION"}})
	h := NewHandler(snapshotOf(r), errs)
	code, _, body := get(t, h, "/api/groups/test_group_1")
	want, err := json.Marshal(h.view(&r.Groups[0]))
	if err != nil {
		t.Fatal(err)
	}
	if code != 200 || body != string(want)+"\n" {
		t.Errorf("GET /api/groups/test_group_1: %d\n%s\nwant 200\n%s", code, body, want)
	}
	if !strings.Contains(body, `"api":"Heartbeat"`) {
		t.Errorf("the view lacks the request error: %s", body)
	}
}

// TestGroupListFindings checks the rows of /api/groups: without a
// diagnosis they carry no findings count; with one (WithCounts),
// each group's count and worst severity, 0 and none for a group without
// findings; and a page written by WriteHTML carries the same rows.
func TestGroupListFindings(t *testing.T) {
	r := seedReport(t)
	quiet := r.Groups[0]
	quiet.Group = "quiet_group"
	r.Groups = append([]timeline.GroupReport{quiet}, r.Groups...) // sorted by id, as a report is
	finding := func(kind diagnose.Kind, sev diagnose.Severity) diagnose.Finding {
		return diagnose.Finding{ID: string(kind) + "/test_group_1", Kind: kind, Group: "test_group_1", Severity: sev}
	}
	type row struct {
		Group         string            `json:"group"`
		Findings      *int              `json:"findings"`
		WorstSeverity diagnose.Severity `json:"worstSeverity"`
	}
	n := func(i int) *int { return &i }
	tests := []struct {
		name     string
		findings []diagnose.Finding // nil: no diagnosis
		want     []row
	}{
		{"no diagnosis", nil, []row{{"quiet_group", nil, ""}, {"test_group_1", nil, ""}}},
		{"nothing found", []diagnose.Finding{}, []row{{"quiet_group", n(0), ""}, {"test_group_1", n(0), ""}}},
		{"one warning", []diagnose.Finding{finding(diagnose.HeartbeatTooSlow, diagnose.Warning)},
			[]row{{"quiet_group", n(0), ""}, {"test_group_1", n(1), diagnose.Warning}}},
		{"the worst of three", []diagnose.Finding{finding(diagnose.EagerLargeGroup, diagnose.Info), finding(diagnose.RebalanceLoop, diagnose.Critical),
			finding(diagnose.MixedAssignors, diagnose.Warning)},
			[]row{{"quiet_group", n(0), ""}, {"test_group_1", n(3), diagnose.Critical}}},
		{"infos only", []diagnose.Finding{finding(diagnose.EagerLargeGroup, diagnose.Info), finding(diagnose.MemberWithoutPartitions, diagnose.Info)},
			[]row{{"quiet_group", n(0), ""}, {"test_group_1", n(2), diagnose.Info}}},
	}
	decode := func(t *testing.T, b []byte) []row {
		t.Helper()
		var rows []row
		if err := json.Unmarshal(b, &rows); err != nil {
			t.Fatalf("rows: %v: %s", err, b)
		}
		return rows
	}
	equal := func(a, b []row) bool {
		return slices.EqualFunc(a, b, func(x, y row) bool {
			return x.Group == y.Group && x.WorstSeverity == y.WorstSeverity && (x.Findings == nil) == (y.Findings == nil) &&
				(x.Findings == nil || *x.Findings == *y.Findings)
		})
	}
	show := func(rows []row) string {
		b, _ := json.Marshal(rows)
		return string(b)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := NewHandler(snapshotOf(r), nil)
			if tt.findings != nil {
				h.WithCounts(func() map[string]diagnose.FindingCount { return diagnose.CountFindings(tt.findings) })
			}
			code, _, body := get(t, h, "/api/groups")
			if got := decode(t, []byte(body)); code != 200 || !equal(got, tt.want) {
				t.Errorf("GET /api/groups: %d %s; want 200 %s", code, show(got), show(tt.want))
			}
			if tt.findings == nil && strings.Contains(body, `"findings"`) {
				t.Errorf("without a diagnosis the rows name findings: %s", body)
			}
			var b strings.Builder
			if err := WriteHTML(&b, r, nil, tt.findings); err != nil {
				t.Fatal(err)
			}
			const open = `<script id="kproxy-data" type="application/json">`
			page := b.String()
			data := page[strings.Index(page, open)+len(open):]
			var fd struct {
				Summaries json.RawMessage `json:"summaries"`
			}
			if err := json.Unmarshal([]byte(data[:strings.Index(data, "</script>")]), &fd); err != nil {
				t.Fatal(err)
			}
			if got := decode(t, fd.Summaries); !equal(got, tt.want) {
				t.Errorf("the page's rows %s; want %s", show(got), show(tt.want))
			}
		})
	}
}

// TestGroupViewOwnerBusy: a group's view whose report the timeline's
// owner does not render in time is a 503 saying so; the list, read from
// the snapshot, is served all the same.
func TestGroupViewOwnerBusy(t *testing.T) {
	l := timeline.NewLive(timeline.Config{}, timeline.Retention{})
	at := time.Date(2026, 3, 15, 14, 2, 0, 0, time.UTC)
	l.AddEvents([]decode.Event{{At: at, RespondedAt: at, Group: "g", Heartbeat: &decode.Heartbeat{MemberID: "m-1", Generation: 1}}})
	l.Publish()
	l.SetOwner(func(ctx context.Context, fn func()) error { return context.DeadlineExceeded })
	h := NewHandler(l.Snapshot, nil)
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/groups/g", nil))
	if rec.Code != http.StatusServiceUnavailable || !strings.Contains(rec.Body.String(), "did not render") {
		t.Errorf("group view with the owner busy: %d %s; want 503", rec.Code, rec.Body)
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/groups", nil))
	if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"group":"g"`) {
		t.Errorf("group list with the owner busy: %d %s", rec.Code, rec.Body)
	}
}
