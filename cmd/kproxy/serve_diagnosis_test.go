//go:build integration && browser

package main

import (
	"encoding/json"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestServeDiagnosis runs the session-timeout scenario through `kproxy
// serve` with a journal and JSON logs, and checks the live diagnosis: the
// warning logged at warn level before the eviction, both at
// /api/diagnosis while serving, and, once stopped, the live findings
// byte for byte equal to `kproxy diagnose` on the journal.
func TestServeDiagnosis(t *testing.T) {
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(3, "t"), kfake.GroupMinSessionTimeout(100*time.Millisecond))
	cfg := testConfig(t, c.ListenAddrs()...)
	cfg.Journal = filepath.Join(t.TempDir(), "journal")
	cfg.LogFormat = "json"
	core, logs := observer.New(zapcore.WarnLevel)
	s, stop := startServerLog(t, cfg, serveHooks{}, zap.New(core))

	runSessionTimeout(t, s.proxy.Addr().String())
	base := "http://" + s.admin.Addr().String()
	var doc diagnose.Document
	if err := json.Unmarshal([]byte(httpGet(t, base+"/api/diagnosis")), &doc); err != nil {
		t.Fatalf("/api/diagnosis is not JSON: %v", err)
	}
	if got, want := kindsOf(doc.Findings), []diagnose.Kind{diagnose.SessionTimeoutWarning, diagnose.SessionTimeoutEviction}; !slices.Equal(got, want) {
		t.Errorf("/api/diagnosis kinds %v; want %v", got, want)
	}
	// The web page's group view carries the group's findings.
	if len(doc.Findings) > 0 {
		group := doc.Findings[0].Group
		var view struct {
			Findings []diagnose.Finding `json:"findings"`
		}
		if err := json.Unmarshal([]byte(httpGet(t, base+"/api/groups/"+url.PathEscape(group))), &view); err != nil {
			t.Fatalf("/api/groups/%s is not JSON: %v", group, err)
		}
		if got, want := kindsOf(view.Findings), kindsOf(doc.Findings); !slices.Equal(got, want) {
			t.Errorf("/api/groups/%s findings %v; want %v", group, got, want)
		}
		// The group list counts them, with the worst severity, in its
		// JSON and on the page.
		var rows []struct {
			Group         string `json:"group"`
			Findings      *int   `json:"findings"`
			WorstSeverity string `json:"worstSeverity"`
		}
		if err := json.Unmarshal([]byte(httpGet(t, base+"/api/groups")), &rows); err != nil {
			t.Fatalf("/api/groups is not JSON: %v", err)
		}
		if len(rows) != 1 || rows[0].Group != group || rows[0].Findings == nil || *rows[0].Findings != 2 || rows[0].WorstSeverity != "critical" {
			t.Errorf("/api/groups rows %+v; want %s with 2 findings, the worst critical", rows, group)
		}
		b := headless.Start(t, headless.Options{})
		b.Run(t, 20*time.Second, chromedp.Navigate(base+"/"))
		cell := `document.querySelector('tr[data-group=` + jsString(group) + `] td.findings')`
		b.WaitJS(t, "the group's row", `!!`+cell, 10*time.Second)
		if got := headless.Eval[string](t, b, cell+`.dataset.findings + ' ' + `+cell+`.dataset.worst + ' ' + `+cell+`.querySelector('.findings-badge.critical').textContent`); got != "2 critical 2" {
			t.Errorf("the list's findings cell says %q; want 2 critical 2", got)
		}
	}
	if err := stop(); err != nil {
		t.Fatalf("run() = %v; want nil", err)
	}

	var logged []string
	for _, e := range logs.FilterLoggerName("diagnosis").All() {
		if e.Level != zapcore.WarnLevel {
			t.Errorf("diagnosis logged at %s; want warn", e.Level)
		}
		kind, _ := e.ContextMap()["kind"].(string)
		logged = append(logged, kind)
	}
	if want := []string{string(diagnose.SessionTimeoutWarning), string(diagnose.SessionTimeoutEviction)}; !slices.Equal(logged, want) {
		t.Errorf("logged findings %v; want %v, in that order", logged, want)
	}

	sameAsJournal(t, s.obs.story.Findings(), cfg)

	// replay --format html carries the same findings on the group's page.
	page := filepath.Join(t.TempDir(), "report.html")
	if out, err := runKproxy(t, "replay", cfg.Journal, "--format", "html", "-o", page); err != nil {
		t.Fatalf("replay --format html: %v\n%s", err, out)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, _ := strings.Cut(string(b), `<script id="kproxy-data" type="application/json">`)
	data, _, _ := strings.Cut(rest, "</script>")
	var d struct {
		Groups []struct {
			Group    string             `json:"group"`
			Findings []diagnose.Finding `json:"findings"`
		} `json:"groups"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("the page's data: %v", err)
	}
	var inPage []diagnose.Finding
	for _, g := range d.Groups {
		inPage = append(inPage, g.Findings...)
	}
	if got, want := kindsOf(inPage), kindsOf(doc.Findings); !slices.Equal(got, want) {
		t.Errorf("replay --format html findings %v; want %v", got, want)
	}
}
