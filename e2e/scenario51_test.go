//go:build e2e

package e2e

import (
	"cmp"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/internal/headless"
)

// TestScenario51: the share-group form of the duplicate window, told. Two
// Java KafkaShareConsumers (ShareMember, explicit acknowledgement) share a
// four-partition topic through a journaled kproxy; once both hold
// partitions, 1,000 records are written. share-A accepts every record it
// gets; share-B acknowledges nothing of its first batch and prints what it
// holds, then
//   - leave: closes, leaving the group holding them;
//   - kill: stops polling and is killed (SIGKILL) holding them, so that
//     only the expiry of its acquisition locks (the group's
//     share.record.lock.duration.ms, 15 s here) frees them.
//
// share-A then receives every one of them again (delivery count 2, as A
// prints) and accepts the whole topic. The story must tell the same: B's
// acquired records, A's redelivered ones equal to what A printed with a
// delivery count above 1, each redelivery from B to A with the offsets B
// printed and how B let them go (left, or lock_expired), in the JSON
// report (live and replayed alike), the text timeline, replay's HTML page
// and the live web page (both in a browser).
//
// Two more subtests check the acknowledgements themselves: share-B
// acknowledges its first batch as RELEASE (release: delivered again, to
// either member, with delivery count 2) or REJECT (reject: never
// delivered again), then accepts what it gets; the story must count what
// B printed as released or rejected, the redeliveries the clients printed,
// and what was accepted.
func TestScenario51(t *testing.T) {
	for _, how := range []string{"leave", "kill", "release", "reject"} {
		t.Run(how, func(t *testing.T) {
			if how == "release" || how == "reject" {
				shareAckStory(t, how)
				return
			}
			shareStory(t, how)
		})
	}
}

// shareStory runs one subtest of scenario 51.
func shareStory(t *testing.T, how string) {
	const n = 1000
	topic, group := "share51_"+how, "share_group_51_"+how
	freshTopic(t, topic, 4, group)
	setGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	if how == "kill" {
		setGroupConfig(t, group, "share.record.lock.duration.ms", "15000")
	}
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	if k == nil {
		t.Skip("E2E_MODE without kproxy's journal: scenario 51 checks kproxy's story only")
	}
	l := &leg{name: "kproxy", bs: bootstrap(k), k: k, w: watchBypass(t)}
	hold := map[string]string{"leave": "leave", "kill": "stay"}[how]
	args := func(id string, more ...string) []string {
		return append([]string{"--bootstrap", l.bs, "--group", group, "--topic", topic, "--client-id", id}, more...)
	}
	a := l.client(javaClient(t, "share-A", "share", args("share-A")...))
	b := l.client(javaClient(t, "share-B", "share", args("share-B", "--hold", hold)...))
	waitShareAssigned(t, group, topic, 2, a, b)
	produceDirect(t, topic, n, func(i int) (string, string) {
		return fmt.Sprintf("k%d", i), fmt.Sprintf("share-record-%d", i)
	})
	holding := b.waitFor(0, 60*time.Second, "share-B holding its first batch", func(e event) bool { return e.Name == "holding" })
	held := map[int32][]int64{}
	for _, e := range b.snapshot() {
		if e.Name == "held" {
			held[e.Partition] = append(held[e.Partition], e.Offset)
		}
	}
	if holding.Count == 0 {
		t.Fatalf("share-B holds no record\n%s", b.tail())
	}
	switch how {
	case "leave":
		b.waitDone(60 * time.Second)
	case "kill":
		b.kill()
	}

	// A accepts the whole topic, B's records again among them.
	acked := func() int64 {
		var sum int64
		for _, e := range a.snapshot() {
			if e.Name == "acked" {
				sum += e.Count
			}
		}
		return sum
	}
	deadline := time.Now().Add(90 * time.Second)
	for acked() < n {
		failOnExit(t, a)
		if time.Now().After(deadline) {
			t.Fatalf("share-A accepted %d of %d records within 90 s of share-B going\n%s", acked(), n, a.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
	a.stop(60 * time.Second)
	got := recordEvents(a)
	for _, rs := range got {
		slices.SortFunc(rs, func(x, y rec) int { return int(x.Offset - y.Offset) })
	}
	if d := diffPartitions(got.values(), readBack(t, topic, false).values()); d != "" {
		t.Errorf("share-A received %d records; the topic holds %d, each to be delivered to A once:\n%s", got.count(), n, d)
	}
	again := map[int32][]int64{} // what A printed with a delivery count above 1
	for _, e := range a.snapshot() {
		if e.Name == "record" && e.DeliveryCount > 1 {
			again[e.Partition] = append(again[e.Partition], e.Offset)
		}
	}
	for _, m := range []map[int32][]int64{held, again} {
		for _, os := range m {
			slices.Sort(os)
		}
	}
	if fmt.Sprint(again) != fmt.Sprint(held) {
		t.Errorf("share-A got %s again (delivery count above 1); share-B held %s", offsetRanges(again), offsetRanges(held))
	}
	t.Logf("share-B held %d records (%s) and %s; share-A got them again and accepted all %d", holding.Count, offsetRanges(held),
		map[string]string{"leave": "left", "kill": "was killed"}[how], n)

	// The live page and text report, while kproxy still runs, once the
	// live timeline has published A's last acknowledgements.
	waitLiveGroup(t, group, "the accepted records", func(g *groupReport) bool {
		return g.Share != nil && g.Share.Totals.Accepted == n
	})
	livePage := shareOnPage(t, "live", "http://"+proxyAdmin+"/", group)
	liveText := getText(t, "http://"+proxyAdmin+"/timeline?group="+url.QueryEscape(group))
	l.check(t, group)
	r := l.k.replay()
	g := r.group(t, group)
	checkShareStory(t, g, how, n, holding.Count, held)

	// The text timeline: replay's entries, and the live text report.
	text, _ := runKproxyCmd(t, "replay", k.journal, "--format", "text")
	if err := os.WriteFile(filepath.Join(runDir(t), "timeline.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	checkShareEntries(t, string(text), g, heldCountOf(held))
	checkShareReportText(t, liveText, g)

	// replay's HTML page, and the live one read before kproxy stopped.
	htmlFile := filepath.Join(runDir(t), "timeline.html")
	runKproxyCmd(t, "replay", k.journal, "--format", "html", "--output", htmlFile)
	filePage := shareOnPage(t, "file", "file://"+htmlFile+"#/", group)
	for _, p := range []struct {
		name string
		page sharePage
	}{{"live", livePage}, {"replay --format html", filePage}} {
		checkSharePage(t, p.name, p.page, g)
	}
}

// clientOf maps the share group's member ids to client ids.
func (g *groupReport) clientOf() map[string]string {
	m := map[string]string{}
	for _, cm := range g.ConsumerMembers {
		m[cm.MemberID] = cm.ClientID
	}
	return m
}

// checkShareStory checks the JSON report of scenario 51's group against
// what the clients printed: share-B held the offsets held and let them go
// (how), share-A got them again and accepted all n records.
func checkShareStory(t *testing.T, g *groupReport, how string, n int, heldCount int64, held map[int32][]int64) {
	t.Helper()
	if g.GroupProtocol != "share" || g.Share == nil {
		t.Fatalf("group %s: protocol %q, share %v; want a share group", g.Group, g.GroupProtocol, g.Share)
	}
	if len(g.Storms) != 0 {
		t.Errorf("share group %s: %d storms; a share group's epochs are not rebalances", g.Group, len(g.Storms))
	}
	who := g.clientOf()
	counts := map[string]shareCounts{}
	for _, m := range g.Share.Members {
		counts[who[m.MemberID]] = m.shareCounts
	}
	ca, cb := counts["share-A"], counts["share-B"]
	if ca.Accepted != int64(n) || ca.Redelivered != heldCount || ca.Acquired != int64(n) || ca.Unacknowledged != 0 {
		t.Errorf("share-A's counts %+v; want acquired %d (each record once), redelivered %d (what B held), accepted %d, unacknowledged 0",
			ca, n, heldCount, n)
	}
	if cb.Accepted != 0 || cb.Acquired < heldCount {
		t.Errorf("share-B's counts %+v; want none accepted, at least the %d records it printed acquired", cb, heldCount)
	}
	wantHow := map[string]string{"leave": "left", "kill": "lock_expired"}[how]
	got := map[int32][]int64{}
	for _, rd := range g.Share.Redeliveries {
		if who[rd.MemberID] != "share-A" || who[rd.From] != "share-B" || rd.How != wantHow || rd.DeliveryCount != 2 {
			t.Errorf("redelivery %+v; want share-B's records to share-A, how %s, delivery 2", rd, wantHow)
		}
		if (rd.DepartedAt != nil) != (how == "leave") {
			t.Errorf("redelivery %+v: departedAt %v for a member that %s", rd, rd.DepartedAt, wantHow)
		}
		for _, r := range strings.Fields(rd.Offsets) {
			first, last, _ := strings.Cut(r, "-")
			lo, _ := strconv.ParseInt(first, 10, 64)
			hi := lo
			if last != "" {
				hi, _ = strconv.ParseInt(last, 10, 64)
			}
			for o := lo; o <= hi; o++ {
				got[rd.Partition] = append(got[rd.Partition], o)
			}
		}
	}
	for _, os := range got {
		slices.Sort(os)
	}
	if fmt.Sprint(got) != fmt.Sprint(held) {
		t.Errorf("the timeline's redeliveries from share-B to share-A are offsets %s; share-B held %s", offsetRanges(got), offsetRanges(held))
	}
	if g.Share.Totals.Unacknowledged != 0 {
		t.Errorf("group totals %+v; want nothing unacknowledged at the end", g.Share.Totals)
	}
}

// checkShareEntries requires the text timeline (replay --format text) to
// tell share-B's records: its departure holding them (left) and each of
// g's redeliveries, with the offsets, to share-A.
func checkShareEntries(t *testing.T, text string, g *groupReport, held int64) {
	t.Helper()
	who := g.clientOf()
	var b string
	for id, c := range who {
		if c == "share-B" {
			b = id
		}
	}
	if g.Share.Redeliveries != nil && g.Share.Redeliveries[0].How == "left" {
		if want := fmt.Sprintf("%s left holding %d unacknowledged records", b, held); !strings.Contains(text, want) {
			t.Errorf("the text timeline does not tell %q", want)
		}
	}
	for _, rd := range g.Share.Redeliveries {
		want := fmt.Sprintf("%s got %s[%d] offsets %s again (%d records, delivery %d): %s", rd.MemberID, rd.Topic, rd.Partition, rd.Offsets, rd.Records, rd.DeliveryCount, rd.From)
		if !strings.Contains(text, want) {
			t.Errorf("the text timeline does not tell %q", want)
		}
	}
}

// checkShareReportText requires the text report (/timeline) to show g's
// share records: the group's counts, each member's, each redelivery.
func checkShareReportText(t *testing.T, text string, g *groupReport) {
	t.Helper()
	counts := func(c shareCounts) string {
		return fmt.Sprintf("acquired %d (redelivered %d), accepted %d, released %d, rejected %d, acknowledgements refused %d, unacknowledged %d",
			c.Acquired, c.Redelivered, c.Accepted, c.Released, c.Rejected, c.AcknowledgeFailed, c.Unacknowledged)
	}
	want := []string{"): " + counts(g.Share.Totals)}
	for _, m := range g.Share.Members {
		want = append(want, m.MemberID+": "+counts(m.shareCounts))
	}
	for _, rd := range g.Share.Redeliveries {
		want = append(want, fmt.Sprintf("%s[%d] %s (%d records, delivery %d) to %s: %s", rd.Topic, rd.Partition, rd.Offsets, rd.Records, rd.DeliveryCount, rd.MemberID, rd.From))
	}
	if !strings.Contains(text, "share records (acquisition lock ") {
		t.Errorf("the text report has no share records line")
	}
	for _, w := range want {
		if !strings.Contains(text, w) {
			t.Errorf("the text report does not show %q", w)
		}
	}
}

// waitLiveGroup waits, up to 30 s, until the live timeline (kproxy's
// /api/timeline) shows group as done says, failing the test then.
func waitLiveGroup(t *testing.T, group, what string, done func(*groupReport) bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var live report
		if err := json.Unmarshal([]byte(getText(t, "http://"+proxyAdmin+"/api/timeline?group="+url.QueryEscape(group))), &live); err != nil {
			t.Fatalf("/api/timeline: %v", err)
		}
		if len(live.Groups) == 1 && done(&live.Groups[0]) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the live timeline does not show %s of %s within 30 s", what, group)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// onPage opens group's page in Chromium (base is the served root, or
// replay's HTML file with "#/"), waits until the JavaScript expression
// ready is true and returns the strings the expression read gives; the
// page's screenshot is kept as NAME.png in the run directory.
func onPage(t *testing.T, name, base, group, ready, read string) []string {
	t.Helper()
	br := headless.Start(t, headless.Options{})
	br.Run(t, 20*time.Second, chromedp.Navigate(base+"groups/"+url.PathEscape(group)))
	br.WaitJS(t, name, ready, 15*time.Second)
	out := headless.Eval[[]string](t, br, read)
	br.Screenshot(t, filepath.Join(runDir(t), name+".png"))
	return out
}

// getText is the body of a GET of u, failing the test unless it answers 200.
func getText(t *testing.T, u string) string {
	t.Helper()
	resp, err := http.Get(u)
	if err != nil {
		t.Fatalf("GET %s: %v", u, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s, %v", u, resp.Status, err)
	}
	return string(b)
}

// heldCountOf counts the offsets of m.
func heldCountOf(m map[int32][]int64) int64 {
	var n int64
	for _, os := range m {
		n += int64(len(os))
	}
	return n
}

// offsetRanges renders offsets by partition as "0: 0-258, 1: 0-237".
func offsetRanges(m map[int32][]int64) string {
	var parts []string
	for _, p := range slices.Sorted(maps.Keys(m)) {
		var rs []string
		os := m[p]
		for i := 0; i < len(os); {
			j := i
			for j+1 < len(os) && os[j+1] == os[j]+1 {
				j++
			}
			if i == j {
				rs = append(rs, strconv.FormatInt(os[i], 10))
			} else {
				rs = append(rs, fmt.Sprintf("%d-%d", os[i], os[j]))
			}
			i = j + 1
		}
		parts = append(parts, fmt.Sprintf("%d: %s", p, strings.Join(rs, " ")))
	}
	return strings.Join(parts, ", ")
}

// sharePage is what the web page shows of a share group's records: the
// rows of the records table ("member partition acquired redelivered
// accepted released rejected refused unacknowledged", the members' and
// the group's) and of the redeliveries table ("partition offsets records
// delivery to heldBy how").
type sharePage struct {
	records, redeliveries []string
}

// shareOnPage reads the share tables of group's page (see onPage); its
// screenshot is kept as share-NAME.png.
func shareOnPage(t *testing.T, name, base, group string) sharePage {
	t.Helper()
	rows := onPage(t, "share-"+name, base, group, `document.querySelectorAll('#share-records tr.total').length > 0`,
		`Array.from(document.querySelectorAll('#share-records tr[data-member], #share-records tr.total, #share-redeliveries tbody tr')).map(r => (r.closest('#share-records') ? 'R' : 'D') + Array.from(r.cells).slice(r.closest('#share-records') ? 0 : 1).map(c => c.textContent).join(' '))`)
	var p sharePage
	for _, r := range rows {
		if rest, ok := strings.CutPrefix(r, "R"); ok {
			p.records = append(p.records, rest)
		} else {
			p.redeliveries = append(p.redeliveries, strings.TrimPrefix(r, "D"))
		}
	}
	return p
}

// checkSharePage requires the page to show g's share records: each member's
// and the group's counts, and each redelivery, as the JSON report has them.
func checkSharePage(t *testing.T, name string, p sharePage, g *groupReport) {
	t.Helper()
	who := g.clientOf()
	row := func(member string, c shareCounts) string {
		return fmt.Sprintf("%s all %d %d %d %d %d %d %d", member, c.Acquired, c.Redelivered, c.Accepted, c.Released, c.Rejected, c.AcknowledgeFailed, c.Unacknowledged)
	}
	var want []string
	for _, m := range g.Share.Members {
		want = append(want, row(cmp.Or(who[m.MemberID], m.MemberID), m.shareCounts))
	}
	want = append(want, row("group", g.Share.Totals))
	if strings.Join(p.records, "|") != strings.Join(want, "|") {
		t.Errorf("%s page: share records %q; want %q", name, p.records, want)
	}
	var wantRd []string
	for _, rd := range g.Share.Redeliveries {
		wantRd = append(wantRd, fmt.Sprintf("%s[%d] %s %d %d %s %s %s", rd.Topic, rd.Partition, rd.Offsets, rd.Records, rd.DeliveryCount,
			who[rd.MemberID], who[rd.From], strings.ReplaceAll(rd.How, "_", " ")))
	}
	if len(p.redeliveries) != len(wantRd) {
		t.Errorf("%s page: redeliveries %q; want %q", name, p.redeliveries, wantRd)
		return
	}
	for i := range wantRd {
		if !strings.HasPrefix(p.redeliveries[i], wantRd[i]) {
			t.Errorf("%s page: redelivery %q; want %q", name, p.redeliveries[i], wantRd[i])
		}
	}
}
