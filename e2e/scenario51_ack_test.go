//go:build e2e

package e2e

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// shareAckStory runs the release and reject subtests of scenario 51: share-B
// acknowledges its first batch as RELEASE or REJECT (ShareMember --first),
// then accepts; share-A accepts everything.
func shareAckStory(t *testing.T, how string) {
	const n = 1000
	topic, group := "share51_"+how, "share_group_51_"+how
	freshTopic(t, topic, 4, group)
	setGroupConfig(t, group, "share.auto.offset.reset", "earliest")
	k := startKproxyWith(t, true, brokerAddr, "--admin", proxyAdmin)
	if k == nil {
		t.Skip("E2E_MODE without kproxy's journal: scenario 51 checks kproxy's story only")
	}
	l := &leg{name: "kproxy", bs: bootstrap(k), k: k, w: watchBypass(t)}
	args := func(id string, more ...string) []string {
		return append([]string{"--bootstrap", l.bs, "--group", group, "--topic", topic, "--client-id", id}, more...)
	}
	a := l.client(javaClient(t, "share-A", "share", args("share-A")...))
	b := l.client(javaClient(t, "share-B", "share", args("share-B", "--first", how)...))
	waitShareAssigned(t, group, topic, 2, a, b)
	produceDirect(t, topic, n, func(i int) (string, string) {
		return fmt.Sprintf("k%d", i), fmt.Sprintf("share-record-%d", i)
	})
	done := b.waitFor(0, 60*time.Second, "share-B acknowledging its first batch", func(e event) bool { return e.Name == "first_acked" })
	if done.Error != "" || done.Count == 0 {
		t.Fatalf("share-B's first batch: %d records acknowledged as %s, error %q", done.Count, how, done.Error)
	}
	first := map[int32][]int64{}
	for _, e := range b.snapshot() {
		if e.Name == "first" {
			first[e.Partition] = append(first[e.Partition], e.Offset)
		}
	}
	for _, os := range first {
		slices.Sort(os)
	}
	firstCount := heldCountOf(first)
	want := int64(n)
	if how == "reject" {
		want -= firstCount
	}
	acked := func(ps ...*proc) int64 {
		var sum int64
		for _, p := range ps {
			for _, e := range p.snapshot() {
				if e.Name == "acked" {
					sum += e.Count
					if e.Error != "" {
						t.Errorf("%s: committing acknowledgements failed: %s", p.name, e.Error)
					}
				}
			}
		}
		return sum
	}
	deadline := time.Now().Add(90 * time.Second)
	for acked(a, b) < want {
		failOnExit(t, a, b)
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d records accepted within 90 s\n%s\n%s", acked(a, b), want, a.tail(), b.tail())
		}
		time.Sleep(200 * time.Millisecond)
	}

	// What the clients printed: every record accepted once, but the
	// rejected ones; delivered again exactly the released ones.
	topicLog := readBack(t, topic, false)
	if how == "reject" {
		for p, os := range first {
			topicLog[p] = slices.DeleteFunc(topicLog[p], func(r rec) bool { _, ok := slices.BinarySearch(os, r.Offset); return ok })
		}
	}
	got := recordEvents(a, b)
	for _, rs := range got {
		slices.SortFunc(rs, func(x, y rec) int { return int(x.Offset - y.Offset) })
	}
	if d := diffPartitions(got.values(), topicLog.values()); d != "" {
		t.Errorf("the members accepted %d records; want each of the topic's %d once%s:\n%s", got.count(), topicLog.count(),
			map[string]string{"reject": ", but those share-B rejected"}[how], d)
	}
	again := map[int32][]int64{}
	for _, p := range []*proc{a, b} {
		for _, e := range p.snapshot() {
			if e.Name == "record" && e.DeliveryCount > 1 {
				again[e.Partition] = append(again[e.Partition], e.Offset)
			}
		}
	}
	for _, os := range again {
		slices.Sort(os)
	}
	wantAgain := map[int32][]int64{}
	if how == "release" {
		wantAgain = first
	}
	if offsetRanges(again) != offsetRanges(wantAgain) {
		t.Errorf("delivered again (delivery count above 1): %s; want %s", offsetRanges(again), offsetRanges(wantAgain))
	}
	t.Logf("share-B %s its first batch, %d records (%s); %d accepted in all", map[string]string{"release": "released", "reject": "rejected"}[how], firstCount, offsetRanges(first), acked(a, b))

	waitLiveGroup(t, group, "the accepted records", func(g *groupReport) bool {
		return g.Share != nil && g.Share.Totals.Accepted == want
	})
	liveText := getText(t, "http://"+proxyAdmin+"/timeline?group="+url.QueryEscape(group))
	livePage := shareOnPage(t, "live", "http://"+proxyAdmin+"/", group)
	a.stop(60 * time.Second)
	b.stop(60 * time.Second)
	l.check(t, group)
	r := l.k.replay()
	g := r.group(t, group)

	// The story: B's released or rejected records, per partition as B
	// printed them, the redeliveries, what was accepted.
	who := g.clientOf()
	var bc shareCounts
	perPart := map[int32]int64{}
	for _, m := range g.Share.Members {
		if who[m.MemberID] != "share-B" {
			continue
		}
		bc = m.shareCounts
		for _, p := range m.Partitions {
			perPart[p.Partition] = map[string]int64{"release": p.Released, "reject": p.Rejected}[how]
		}
	}
	gotFirst := map[string]int64{"release": bc.Released, "reject": bc.Rejected}[how]
	if gotFirst != firstCount {
		t.Errorf("share-B's counts %+v; want %d %sd", bc, firstCount, how)
	}
	for p, os := range first {
		if perPart[p] != int64(len(os)) {
			t.Errorf("share-B's %s[%d]: %d %sd; it printed %d", topic, p, perPart[p], how, len(os))
		}
	}
	tot := g.Share.Totals
	wantTot := shareCounts{Acquired: int64(n), Accepted: want}
	if how == "release" {
		wantTot.Acquired += firstCount
		wantTot.Redelivered, wantTot.Released = firstCount, firstCount
	} else {
		wantTot.Rejected = firstCount
	}
	if tot != wantTot {
		t.Errorf("group totals %+v; want %+v", tot, wantTot)
	}
	if len(g.Share.Redeliveries) != 0 {
		t.Errorf("redeliveries %+v; want none: released records are not held by anyone", g.Share.Redeliveries)
	}
	if len(g.Storms) != 0 {
		t.Errorf("share group %s: %d storms; a share group's epochs are not rebalances", g.Group, len(g.Storms))
	}
	checkShareReportText(t, liveText, g)
	htmlFile := filepath.Join(runDir(t), "timeline.html")
	runKproxyCmd(t, "replay", k.journal, "--format", "html", "--output", htmlFile)
	text, _ := runKproxyCmd(t, "replay", k.journal, "--format", "text")
	if err := os.WriteFile(filepath.Join(runDir(t), "timeline.txt"), text, 0o644); err != nil {
		t.Fatal(err)
	}
	filePage := shareOnPage(t, "file", "file://"+htmlFile+"#/", group)
	checkSharePage(t, "live", livePage, g)
	checkSharePage(t, "replay --format html", filePage, g)
}
