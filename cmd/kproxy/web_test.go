//go:build browser

package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/demo"
	"github.com/kproxy-dev/kproxy/internal/headless"
	"github.com/kproxy-dev/kproxy/timeline"
)

// screenshotDir holds the screenshots the page's tests take, as
// artefacts to look at (git-ignored).
const screenshotDir = "testdata/out"

// readmeScreenshot is the group page of the seed scenario that the README
// shows; TestWebReportFile rewrites it with -update.
const readmeScreenshot = "../../docs/img/group.png"

// pageLane is one lane of the group page as the DOM shows it.
type pageLane struct {
	Client  string            `json:"client"`
	Member  string            `json:"member"`
	Owned   map[string]string `json:"owned"`   // generation → partitions ("round_topic[0 1]")
	Commits []string          `json:"commits"` // the class of each commit marker
}

// lanesJS reads the lanes drawn on the group page.
const lanesJS = `JSON.stringify([...document.querySelectorAll('#chart g.lane')].map(l => ({
	client: l.dataset.client, member: l.dataset.member,
	owned: Object.fromEntries([...l.querySelectorAll('g.owned-seg')].map(s => [s.dataset.gen, s.dataset.partitions])),
	commits: [...l.querySelectorAll('circle.commit')].map(c => c.getAttribute('class'))})))`

// checkSeedGroupPage checks the seed scenario on the group page open in b:
// A's and B's lanes, the split A [0 1] / B [2] of generation 2 on the lanes
// and in its plan table, and A's commit during revocation as a marker on
// A's lane.
func checkSeedGroupPage(t *testing.T, b *headless.Browser) {
	t.Helper()
	var lanes []pageLane
	if err := json.Unmarshal([]byte(headless.Eval[string](t, b, lanesJS)), &lanes); err != nil {
		t.Fatal(err)
	}
	byClient := map[string]pageLane{}
	for _, l := range lanes {
		byClient[l.Client] = l
	}
	a, okA := byClient["consumer-A"]
	bl, okB := byClient["consumer-B"]
	if !okA || !okB {
		t.Fatalf("lanes %+v; want consumer-A's and consumer-B's", lanes)
	}
	if got, want := a.Owned["2"], demo.Topic+"[0 1]"; got != want {
		t.Errorf("consumer-A owns %q in generation 2; want %q (lane %+v)", got, want, a)
	}
	if got, want := bl.Owned["2"], demo.Topic+"[2]"; got != want {
		t.Errorf("consumer-B owns %q in generation 2; want %q (lane %+v)", got, want, bl)
	}
	if len(a.Commits) == 0 || a.Commits[0] != "commit ok" {
		t.Errorf("consumer-A's commit markers %q; want its commit during revocation, ok", a.Commits)
	}
	if len(bl.Commits) != 0 {
		t.Errorf("consumer-B's commit markers %q; want none", bl.Commits)
	}
	// Clicking generation 2's band shows its plan.
	click(t, b, `#chart .band[data-gen="2"] rect`)
	b.WaitJS(t, "generation 2's plan", `document.querySelector('#plan-title')?.dataset.gen === '2'`, 10*time.Second)
	plan := headless.Eval[map[string]string](t, b, `Object.fromEntries([...document.querySelectorAll('#plan tbody tr[data-member]')].map(r => [r.cells[0].textContent, r.querySelector('.assignment').textContent]))`)
	if plan["consumer-A"] != demo.Topic+"[0 1]" || plan["consumer-B"] != demo.Topic+"[2]" {
		t.Errorf("generation 2's plan table %v; want consumer-A %s[0 1], consumer-B %s[2]", plan, demo.Topic, demo.Topic)
	}
}

// TestWebPageLive loads the page from a live kproxy serve while the seed
// scenario runs: the list shows the group, the group page gets generation 2
// without a reload, and the seed's facts can be read from the DOM.
func TestWebPageLive(t *testing.T) {
	b := headless.Start(t, headless.Options{})
	c := startKfake(t, kfake.NumBrokers(1), kfake.SeedTopics(demo.Partitions, demo.Topic))
	s, err := newServer(testConfig(t, c.ListenAddrs()...), zap.NewNop())
	if err != nil {
		t.Fatalf("newServer: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.run(ctx) }()
	defer func() { cancel(); <-done }()

	dctx, dcancel := context.WithTimeout(ctx, 60*time.Second)
	defer dcancel()
	demoDone := make(chan error, 1)
	go func() {
		demoDone <- demo.Run(dctx, s.proxy.Addr().String(), demo.Options{
			WorkA: 200 * time.Millisecond, WorkB: 400 * time.Millisecond,
			BJoinsAfter: 5 * time.Second, BothFor: 2 * time.Second,
		})
	}()
	base := "http://" + s.admin.Addr().String()
	waitFor(t, "generation 1 in /api/groups/"+demo.Group, func() bool {
		g, ok := apiGroup(t, base)
		return ok && len(g.Generations) == 1 && g.Generations[0].Status == "stable"
	})

	b.Run(t, 20*time.Second, chromedp.Navigate(base+"/"))
	b.WaitJS(t, "the group in the list", `!!document.querySelector('tr[data-group="`+demo.Group+`"] a')`, 10*time.Second)
	b.Screenshot(t, filepath.Join(screenshotDir, "live-groups.png"))

	b.Run(t, 20*time.Second, chromedp.Navigate(base+"/groups/"+demo.Group))
	b.WaitJS(t, "generation 1's band", `!!document.querySelector('#chart .band[data-gen="1"]')`, 10*time.Second)
	if headless.Eval[bool](t, b, `!!document.querySelector('#chart .band[data-gen="2"]')`) {
		t.Fatal("generation 2 was there when the page loaded: the machine is too slow for this test to see it arrive")
	}
	headless.Eval[int](t, b, `window.kproxyTestMark = 7`) // gone if the page reloads
	b.WaitJS(t, "generation 2 without a reload", `!!document.querySelector('#chart .band[data-gen="2"]') && window.kproxyTestMark === 7`, 30*time.Second)

	if err := <-demoDone; err != nil {
		t.Fatalf("scenario: %v", err)
	}
	waitFor(t, "the page to catch up with the scenario's end", func() bool {
		g, _ := apiGroup(t, base)
		want := fmt.Sprintf("%d generations", len(g.Generations))
		return headless.Eval[bool](t, b, `document.getElementById('meta').textContent.includes(`+jsString(want)+`)`)
	})
	if !headless.Eval[bool](t, b, `window.kproxyTestMark === 7`) {
		t.Fatal("the page reloaded")
	}
	checkSeedGroupPage(t, b)
	b.Screenshot(t, filepath.Join(screenshotDir, "live-group.png"))
}

// click sends a click to the element sel selects, as a user's would
// bubble up.
func click(t *testing.T, b *headless.Browser, sel string) {
	t.Helper()
	if !headless.Eval[bool](t, b, `(() => { const e = document.querySelector(`+jsString(sel)+`); if (!e) return false;
		e.dispatchEvent(new MouseEvent('click', {bubbles: true, cancelable: true, view: window})); return true })()`) {
		t.Fatalf("nothing to click at %s", sel)
	}
}

func jsString(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestWebReportFile writes the seed journal's HTML report with `kproxy
// replay --format html -o` and opens it from file:// with the network off:
// the same checks as the live page, nothing loaded from anywhere. With
// -update it rewrites the README's screenshot of the group page.
func TestWebReportFile(t *testing.T) {
	b := headless.Start(t, headless.Options{Offline: true})
	path := filepath.Join(t.TempDir(), "report.html")
	if out, err := runKproxy(t, "replay", seedSample, "--format", "html", "-o", path); err != nil {
		t.Fatalf("replay --format html: %v\n%s", err, out)
	}
	html, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"http://", "https://", "src=\"/", "href=\"/assets"} {
		if i := strings.Index(string(html), bad); i >= 0 && bad != "http://" || bad == "http://" && strings.Contains(strings.ReplaceAll(string(html), "http://www.w3.org/2000/svg", ""), bad) {
			t.Errorf("the report refers to %q: it must be self-contained", bad)
		}
	}
	b.Run(t, 20*time.Second, chromedp.Navigate("file://"+path))
	b.WaitJS(t, "the group in the list", `!!document.querySelector('tr[data-group="`+demo.Group+`"] a')`, 10*time.Second)
	click(t, b, `tr[data-group="`+demo.Group+`"] a`)
	b.WaitJS(t, "the group's lanes", `document.querySelectorAll('#chart g.lane').length >= 2`, 10*time.Second)
	checkSeedGroupPage(t, b)
	if res := b.Resources(t); len(res) != 0 {
		t.Errorf("the report loaded %q; want nothing", res)
	}
	b.Screenshot(t, filepath.Join(screenshotDir, "report-group.png"))
	if *update {
		b.Screenshot(t, readmeScreenshot)
	}
}

// reportData is the data a replay --format html page carries.
func reportData(t *testing.T, args ...string) (groups []string, gens int) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "report.html")
	if out, err := runKproxy(t, append([]string{"replay", seedSample, "--format", "html", "-o", path}, args...)...); err != nil {
		t.Fatalf("replay --format html %v: %v\n%s", args, err, out)
	}
	page, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	const open = `<script id="kproxy-data" type="application/json">`
	_, rest, ok := strings.Cut(string(page), open)
	data, _, ok2 := strings.Cut(rest, "</script>")
	if !ok || !ok2 {
		t.Fatalf("the page carries no data")
	}
	var d struct {
		Groups []timeline.GroupReport `json:"groups"`
	}
	if err := json.Unmarshal([]byte(data), &d); err != nil {
		t.Fatalf("the page's data: %v", err)
	}
	for _, g := range d.Groups {
		groups = append(groups, g.Group)
		gens += len(g.Generations)
	}
	return groups, gens
}

// TestReplayHTMLNarrowed checks that --group, --since and --until narrow
// the HTML report as they do the JSON one.
func TestReplayHTMLNarrowed(t *testing.T) {
	all, allGens := reportData(t)
	if len(all) != 1 || all[0] != demo.Group || allGens < 2 {
		t.Fatalf("the whole report has groups %q, %d generations; want %s with its generations", all, allGens, demo.Group)
	}
	tests := []struct {
		name   string
		args   []string
		groups int
		fewer  bool // fewer generations than the whole report
	}{
		{"another group", []string{"--group", "nope"}, 0, true},
		{"the seed's group", []string{"--group", demo.Group}, 1, false},
		{"until before gen 2", []string{"--until", "2026-11-29T15:08:00Z"}, 1, true},
		{"since after the end", []string{"--since", "2026-11-29T16:00:00Z"}, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			groups, gens := reportData(t, tt.args...)
			if len(groups) != tt.groups || (gens < allGens) != tt.fewer {
				t.Errorf("groups %q, %d generations; want %d groups, fewer than %d generations: %v", groups, gens, tt.groups, allGens, tt.fewer)
			}
		})
	}
}
