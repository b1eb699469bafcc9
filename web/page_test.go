//go:build browser

package web

import (
	"encoding/json"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/headless"
	"github.com/kproxy-dev/kproxy/timeline"
)

// richReport is the seed's report with one of every mark the lanes draw
// added to generation 2 (a failed commit, a suspect commit, a member
// evicted after a session timeout, a storm), and the KIP-848 golden's
// group; errs holds a Heartbeat error of consumer A.
func richReport(t *testing.T) (*timeline.Report, *RequestErrors) {
	t.Helper()
	r := seedReport(t)
	g := &r.Groups[0]
	gen := &g.Generations[1]
	a := gen.Members[0].MemberID
	at := *gen.StableAt
	gen.CommitsDuringRevocation = append(gen.CommitsDuringRevocation, timeline.CommitReport{MemberID: a, At: at, Generation: 1,
		Offsets: map[string]map[int32]int64{"round_topic": {2: 11}}, Result: "failed", Failed: true,
		Errors: map[string]map[int32]string{"round_topic": {2: "REBALANCE_IN_PROGRESS"}}})
	gen.SuspectCommits = append(gen.SuspectCommits, timeline.SuspectReport{MemberID: a, At: at, Generation: 2, Topic: "round_topic",
		Partition: 2, Offset: 5, Owner: gen.Members[1].MemberID, Reasons: []string{"not_owned"}})
	gen.Departed = append(gen.Departed, timeline.DepartureReport{MemberID: "ghost-1", How: "session_timeout",
		Reason: "no heartbeat since 14:02:01 UTC, session timeout 10 s", At: gen.StartedAt, Partitions: map[string][]int32{}})
	g.Storms = append(g.Storms, timeline.StormReport{From: *g.Generations[0].StartedAt, To: *gen.StartedAt, Rebalances: 3,
		Generations: []int32{1, 2}, DominantTrigger: "member_joined", Triggers: map[string]int{"member_joined": 2}, Ongoing: true})
	b, err := os.ReadFile("../timeline/testdata/kip848.json")
	if err != nil {
		t.Fatal(err)
	}
	var k timeline.Report
	if err := json.Unmarshal(b, &k); err != nil {
		t.Fatal(err)
	}
	r.Groups = append(r.Groups, k.Groups...)
	slices.SortFunc(r.Groups, func(a, b timeline.GroupReport) int { return strings.Compare(a.Group, b.Group) }) // as the engine does
	errs := NewRequestErrors(0, 0)
	stamp, _ := time.Parse(time.RFC3339Nano, *gen.StartedAt)
	errs.Record(timeline.Entry{At: stamp.Add(time.Second), Group: g.Group, Kind: timeline.KindError, Generation: 1, Member: a,
		Text: "Heartbeat from " + a + " failed: ILLEGAL_GENERATION", Failure: &timeline.FailureFacts{API: "Heartbeat", Error: "ILLEGAL_GENERATION"}})
	return r, errs
}

// TestPageDrawsEveryMark loads each group of richReport, served and from
// a file, and counts the marks of each kind on the lanes.
func TestPageDrawsEveryMark(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r, errs := richReport(t)
	srv := httptest.NewServer(NewHandler(snapshotOf(r), errs))
	defer srv.Close()
	file := t.TempDir() + "/report.html"
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(f, r, errs, nil); err != nil {
		t.Fatal(err)
	}
	f.Close()
	kip848 := k848(r)
	marks := map[string]string{
		"failed commit":       `#chart circle.commit.failed`,
		"ok commit":           `#chart circle.commit.ok`,
		"suspect commit":      `#chart path.suspect`,
		"eviction":            `#chart g.leave-mark[data-how="session_timeout"]`,
		"storm":               `#chart rect.storm`,
		"heartbeat error":     `#chart path.reqerror[data-api="Heartbeat"]`,
		"JoinGroup wait":      `#chart rect.joinwait`,
		"revocation":          `#chart line.revoke`,
		"generation 2's band": `#chart .band[data-gen="2"]`,
	}
	for _, src := range []struct{ name, base, sep string }{{"served", srv.URL, "/"}, {"file", "file://" + file, "#/"}} {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/test_group_1"))
			br.WaitJS(t, "the page", `document.body.dataset.renders > 0 || document.getElementById('status').textContent.includes(': ')`, 10*time.Second)
			if s := headless.Eval[string](t, br, `document.getElementById('status').textContent`); strings.Contains(s, ": ") {
				t.Fatalf("the page says %q", s)
			}
			br.WaitJS(t, "the lanes", `document.querySelectorAll('#chart g.lane').length >= 2`, 10*time.Second)
			for what, sel := range marks {
				if n := headless.Eval[int](t, br, `document.querySelectorAll(`+jsQuote(sel)+`).length`); n != 1 && !(what == "ok commit" && n >= 1) && !(what == "JoinGroup wait" && n >= 1) && !(what == "revocation" && n >= 1) {
					t.Errorf("%s: %d elements match %s; want 1", what, n, sel)
				}
			}
			br.Screenshot(t, "testdata/out/marks-"+src.name+".png")
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/"+kip848))
			br.WaitJS(t, "the KIP-848 lanes", `document.querySelectorAll('#chart g.owned-seg[data-epoch]').length > 0`, 10*time.Second)
			if got := headless.Eval[string](t, br, `document.getElementById('plan-title').textContent`); got == "" || got[:5] != "Epoch" {
				t.Errorf("KIP-848 plan title %q; want it to name the epoch", got)
			}
			br.Screenshot(t, "testdata/out/kip848-"+src.name+".png")
		})
	}
}

// k848 is the KIP-848 group of r.
func k848(r *timeline.Report) string {
	for _, g := range r.Groups {
		if g.GroupProtocol == "consumer" {
			return g.Group
		}
	}
	return ""
}

func jsQuote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

// TestListPage loads the group list of richReport: each group links to
// its page, the filter box narrows the rows, and a click on a column's
// header sorts by it.
func TestListPage(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r, errs := richReport(t)
	srv := httptest.NewServer(NewHandler(snapshotOf(r), errs))
	defer srv.Close()
	br.Run(t, 20*time.Second, chromedp.Navigate(srv.URL+"/"))
	br.WaitJS(t, "the rows", `document.querySelectorAll('#groups tbody tr').length === 2`, 10*time.Second)
	rows := func() []string {
		return headless.Eval[[]string](t, br, `[...document.querySelectorAll('#groups tbody tr')].map(r => r.dataset.group)`)
	}
	if got := headless.Eval[string](t, br, `document.querySelector('tr[data-group="test_group_1"] a').getAttribute('href')`); got != "/groups/test_group_1" {
		t.Errorf("the group's link is %q; want /groups/test_group_1", got)
	}
	if got := headless.Eval[string](t, br, `document.querySelector('tr[data-group="test_group_1"] .storm-flag')?.textContent ?? ''`); got != "storm" {
		t.Errorf("the seed group's storm flag %q; want storm", got)
	}
	headless.Eval[bool](t, br, `(() => { const f = document.getElementById('filter'); f.value = 'KIP'; f.dispatchEvent(new Event('input')); return true })()`)
	if got := rows(); len(got) != 1 || got[0] != k848(r) {
		t.Errorf("rows matching KIP: %q; want [%s]", got, k848(r))
	}
	headless.Eval[bool](t, br, `(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); return true })()`)
	before := rows()
	headless.Eval[bool](t, br, `(() => { document.querySelector('th[data-key="group"]').click(); return true })()`)
	after := rows()
	if len(before) != 2 || len(after) != 2 || before[0] != after[1] || before[1] != after[0] {
		t.Errorf("rows %q, then %q after a click on the group header; want the order reversed", before, after)
	}
}

// TestZoomAndPan zooms in on the seed's group page with the button and
// the wheel, pans by dragging, and goes back to the whole timeline.
func TestZoomAndPan(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r := seedReport(t)
	srv := httptest.NewServer(NewHandler(snapshotOf(r), nil))
	defer srv.Close()
	br.Run(t, 20*time.Second, chromedp.Navigate(srv.URL+"/groups/test_group_1"))
	br.WaitJS(t, "the chart", `!!document.getElementById('chart').dataset.view`, 10*time.Second)
	span := func() (float64, float64) {
		v := headless.Eval[[]float64](t, br, `document.getElementById('chart').dataset.view.split(' ').map(Number)`)
		return v[0], v[1]
	}
	f0, t0 := span()
	headless.Eval[bool](t, br, `(() => { document.getElementById('zin').click(); return true })()`)
	f1, t1 := span()
	if got, want := t1-f1, (t0-f0)/2; got < want*0.99 || got > want*1.01 {
		t.Errorf("after zoom in the span is %v ms; want %v", got, want)
	}
	headless.Eval[bool](t, br, `(() => { const c = document.getElementById('chart'), r = c.getBoundingClientRect();
		c.dispatchEvent(new WheelEvent('wheel', {deltaY: -100, clientX: r.left + 600, clientY: r.top + 60, bubbles: true, cancelable: true})); return true })()`)
	f2, t2 := span()
	if got, want := t2-f2, (t1-f1)*0.8; got < want*0.99 || got > want*1.01 {
		t.Errorf("after a wheel step the span is %v ms; want %v", got, want)
	}
	headless.Eval[bool](t, br, `(() => { const c = document.getElementById('chart'), r = c.getBoundingClientRect();
		c.dispatchEvent(new MouseEvent('mousedown', {clientX: r.left + 800, clientY: r.top + 60, bubbles: true}));
		window.dispatchEvent(new MouseEvent('mousemove', {clientX: r.left + 600, clientY: r.top + 60, bubbles: true}));
		window.dispatchEvent(new MouseEvent('mouseup', {clientX: r.left + 600, clientY: r.top + 60, bubbles: true})); return true })()`)
	f3, t3 := span()
	if f3 <= f2 || t3-f3 < (t2-f2)*0.99 || t3-f3 > (t2-f2)*1.01 {
		t.Errorf("dragging left moved the view from %v–%v to %v–%v; want later, as wide", f2, t2, f3, t3)
	}
	headless.Eval[bool](t, br, `(() => { document.getElementById('zreset').click(); return true })()`)
	if f, to := span(); f != f0 || to != t0 {
		t.Errorf("whole timeline shows %v–%v; want %v–%v", f, to, f0, t0)
	}
}

// TestPageSaysHistoryFrom loads the seed's group page from a snapshot
// whose history retention has cut, then from one whose history is whole:
// only the first says from when the history is whole.
func TestPageSaysHistoryFrom(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r := seedReport(t)
	for _, tc := range []struct {
		name    string
		horizon time.Time
		want    bool
	}{
		{"history cut", time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC), true},
		{"history whole", time.Time{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := timeline.SnapshotOf(r, tc.horizon)
			srv := httptest.NewServer(NewHandler(func() *timeline.Snapshot { return s }, nil))
			defer srv.Close()
			br.Run(t, 20*time.Second, chromedp.Navigate(srv.URL+"/groups/test_group_1"))
			br.WaitJS(t, "the chart", `!!document.getElementById('chart').dataset.view`, 10*time.Second)
			meta := headless.Eval[string](t, br, `document.getElementById('meta').textContent`)
			if got := strings.Contains(meta, "history whole from 2026-03-15 14:00:00 UTC"); got != tc.want {
				t.Errorf("the group's line %q says from when the history is whole: %v; want %v", meta, got, tc.want)
			}
		})
	}
}

// TestPageShowsFindings gives test_group_1 of richReport a finding naming
// consumer A, served (WithFindings) and in a file (WriteHTML): the
// findings panel lists it with its evidence, and a marker of its severity
// sits on A's lane alone, at the finding's time.
func TestPageShowsFindings(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r, errs := richReport(t)
	i := slices.IndexFunc(r.Groups, func(g timeline.GroupReport) bool { return g.Group == "test_group_1" })
	g := &r.Groups[i]
	gen := &g.Generations[1]
	a := gen.Members[0]
	f := diagnose.Finding{ID: "session_timeout/test_group_1/" + a.MemberID, Kind: "session_timeout", Group: g.Group, Severity: diagnose.Critical,
		At: *gen.StableAt, Members: []diagnose.Member{{MemberID: a.MemberID, ClientID: a.ClientID, ClientAddr: "10.0.0.1:4001",
			SoftwareName: "kgo", SoftwareVersion: "v1.22.3", Rack: "eu-west-1a", ClientCert: "CN=orders,OU=payments,O=Acme Corp"}}, Partitions: map[string][]int32{},
		Evidence:    map[string]any{"sessionTimeoutMs": 10000, "lastHeartbeat": *gen.StartedAt},
		Explanation: "the member stopped heartbeating for longer than its session timeout", Suggestion: "raise session.timeout.ms"}
	srv := httptest.NewServer(NewHandler(snapshotOf(r), errs).WithFindings(func(group string) []diagnose.Finding {
		if group == g.Group {
			return []diagnose.Finding{f}
		}
		return nil
	}))
	defer srv.Close()
	file := t.TempDir() + "/report.html"
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(out, r, errs, []diagnose.Finding{f}); err != nil {
		t.Fatal(err)
	}
	out.Close()
	for _, src := range []struct{ name, base, sep string }{{"served", srv.URL, "/"}, {"file", "file://" + file, "#/"}} {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/test_group_1"))
			br.WaitJS(t, "the findings panel", `document.querySelectorAll('#findings-table tr.finding').length > 0`, 10*time.Second)
			if got := headless.Eval[string](t, br, `document.getElementById('findings-title').textContent`); got != "Findings (1)" {
				t.Errorf("findings title %q", got)
			}
			row := headless.Eval[string](t, br, `document.querySelector('#findings-table tr.finding').textContent`)
			for _, want := range []string{"critical", "session_timeout", "stopped heartbeating", "raise session.timeout.ms", "sessionTimeoutMs", "10000"} {
				if !strings.Contains(row, want) {
					t.Errorf("the finding's row %q lacks %q", row, want)
				}
			}
			// The member as a person looks for it, one fact a line.
			who := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#findings-table td.members .member .ident')).map(function (d) { return d.dataset.field + ': ' + d.textContent })`)
			if want := []string{"clientId: client " + a.ClientID, "clientAddr: 10.0.0.1:4001", "software: kgo v1.22.3", "rack: rack eu-west-1a",
				"cert: cert CN=orders,OU=payments,O=Acme Corp", "memberId: member " + a.MemberID}; !slices.Equal(who, want) {
				t.Errorf("the finding's member reads %q; want %q", who, want)
			}
			marks := headless.Eval[[]string](t, br, `Array.from(document.querySelectorAll('#chart path.finding-mark')).map(function (p) { return p.closest('g.lane').dataset.member + ' ' + p.dataset.kind + ' ' + p.dataset.severity + ' ' + p.getAttribute('class') })`)
			if want := []string{a.MemberID + " session_timeout critical finding-mark critical"}; !slices.Equal(marks, want) {
				t.Errorf("finding marks %q; want %q", marks, want)
			}
			// At the finding's time: the same x as the failed commit
			// richReport puts on A's lane at that generation's stable time.
			mx := headless.Eval[float64](t, br, `(function () { var b = document.querySelector('#chart path.finding-mark').getBBox(); return b.x + b.width / 2; })()`)
			cx := headless.Eval[float64](t, br, `+document.querySelector('#chart circle.commit.failed').getAttribute('cx')`)
			if d := mx - cx; d > 0.5 || d < -0.5 {
				t.Errorf("the marker is at x=%v, the commit at the finding's time at x=%v", mx, cx)
			}
			if title := headless.Eval[string](t, br, `document.querySelector('#chart path.finding-mark title').textContent`); !strings.Contains(title, "session_timeout") || !strings.Contains(title, "stopped heartbeating") {
				t.Errorf("marker's hover text %q", title)
			}
			br.Screenshot(t, "testdata/out/findings-"+src.name+".png")
			// A group without findings says so.
			br.Run(t, 20*time.Second, chromedp.Navigate(src.base+src.sep+"groups/"+k848(r)))
			br.WaitJS(t, "the empty panel", `(document.getElementById('findings-title') || {}).textContent === 'Findings (0)'`, 10*time.Second)
		})
	}
}

// TestListShowsFindings gives test_group_1 of richReport a critical and
// a warning finding, served (WithCounts) and in a file (WriteHTML):
// its row on the group list has a badge saying 2, coloured as critical;
// the other group's says 0; and the findings column sorts.
func TestListShowsFindings(t *testing.T) {
	br := headless.Start(t, headless.Options{})
	r, errs := richReport(t)
	fs := []diagnose.Finding{
		{ID: "rebalance_loop/test_group_1", Kind: diagnose.RebalanceLoop, Group: "test_group_1", Severity: diagnose.Critical, At: "2026-03-15T14:02:00Z"},
		{ID: "heartbeat_too_slow/test_group_1/m", Kind: diagnose.HeartbeatTooSlow, Group: "test_group_1", Severity: diagnose.Warning, At: "2026-03-15T14:02:01Z"},
	}
	srv := httptest.NewServer(NewHandler(snapshotOf(r), errs).WithCounts(func() map[string]diagnose.FindingCount { return diagnose.CountFindings(fs) }))
	defer srv.Close()
	file := t.TempDir() + "/report.html"
	out, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteHTML(out, r, errs, fs); err != nil {
		t.Fatal(err)
	}
	out.Close()
	other := k848(r)
	for _, src := range []struct{ name, url string }{{"served", srv.URL + "/"}, {"file", "file://" + file + "#/"}} {
		t.Run(src.name, func(t *testing.T) {
			br.Run(t, 20*time.Second, chromedp.Navigate(src.url))
			br.WaitJS(t, "the rows", `document.querySelectorAll('#groups tbody tr').length === 2`, 10*time.Second)
			cell := func(group string) string {
				return headless.Eval[string](t, br, `(function () { var td = document.querySelector(`+jsQuote(`tr[data-group="`+group+`"] td.findings`)+`);
					var b = td.querySelector('.findings-badge'); return td.dataset.findings + ' ' + (td.dataset.worst || '-') + ' ' + td.textContent + ' ' + (b ? b.className : 'no badge'); })()`)
			}
			if got, want := cell("test_group_1"), "2 critical 2 findings-badge critical"; got != want {
				t.Errorf("test_group_1's findings cell %q; want %q", got, want)
			}
			if got, want := cell(other), "0 - 0 no badge"; got != want {
				t.Errorf("%s's findings cell %q; want %q", other, got, want)
			}
			if title := headless.Eval[string](t, br, `document.querySelector('.findings-badge').title`); title != "2 findings, the worst critical" {
				t.Errorf("the badge's hover text %q", title)
			}
			order := func() []string {
				return headless.Eval[[]string](t, br, `[...document.querySelectorAll('#groups tbody tr')].map(r => r.dataset.group)`)
			}
			headless.Eval[bool](t, br, `(() => { document.querySelector('th[data-key="findings"]').click(); return true })()`)
			if got := order(); len(got) != 2 || got[0] != other {
				t.Errorf("rows by findings, ascending: %q; want %s first", got, other)
			}
			headless.Eval[bool](t, br, `(() => { document.querySelector('th[data-key="findings"]').click(); return true })()`)
			if got := order(); len(got) != 2 || got[0] != "test_group_1" {
				t.Errorf("rows by findings, descending: %q; want test_group_1 first", got)
			}
			br.Screenshot(t, "testdata/out/list-findings-"+src.name+".png")
		})
	}
}
