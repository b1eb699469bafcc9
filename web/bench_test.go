package web

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/headless"
	"github.com/kproxy-dev/kproxy/timeline"
)

// synthGroup is a classic group of members members (50-character member
// ids) over gens generations, one rebalance every ten seconds, each member
// owning two partitions of a topic per generation and committing during
// each revocation.
func synthGroup(name string, members, gens int) timeline.GroupReport {
	t0 := time.Date(2026, 3, 15, 14, 0, 0, 0, time.UTC)
	stamp := func(d time.Duration) *string { s := t0.Add(d).Format(time.RFC3339Nano); return &s }
	ms := func(v float64) *float64 { return &v }
	g := timeline.GroupReport{Group: name, GroupProtocol: "classic", ProtocolType: "consumer", FirstSeen: *stamp(0)}
	for n := 1; n <= gens; n++ {
		start := time.Duration(n) * 10 * time.Second
		gen := timeline.GenerationReport{Generation: int32(n), Status: "stable", ProtocolType: "consumer", Protocol: "range", Mode: "eager",
			Leader: fmt.Sprintf("consumer-%03d-%040d", 0, 0), Trigger: timeline.TriggerReport{Kind: "member_joined", At: stamp(start)},
			StartedAt: stamp(start), JoinCompletedAt: stamp(start + 2*time.Second), StableAt: stamp(start + 2100*time.Millisecond),
			StopTheWorldMs: ms(2100), JoinMs: ms(2000), SyncMs: ms(100), WaitedFor: fmt.Sprintf("consumer-%03d-%040d", members-1, members-1)}
		for m := 0; m < members; m++ {
			id := fmt.Sprintf("consumer-%03d-%040d", m, m)
			p := int32((m*2 + n) % (members * 2))
			assign := map[string][]int32{"orders": {p, p + 1}}
			gen.Members = append(gen.Members, timeline.MemberReport{MemberID: id, ClientID: fmt.Sprintf("consumer-%03d", m), Status: "rejoined",
				Observed: true, JoinedAt: stamp(start + time.Duration(m)*time.Millisecond), JoinWaitMs: ms(2000 - float64(m)),
				SyncedAt: stamp(start + 2100*time.Millisecond), Assignment: assign, Added: map[string][]int32{}, Revoked: map[string][]int32{}, Kept: assign})
			gen.CommitsDuringRevocation = append(gen.CommitsDuringRevocation, timeline.CommitReport{MemberID: id, At: *stamp(start + 5*time.Millisecond),
				Generation: int32(n - 1), Offsets: map[string]map[int32]int64{"orders": {p: int64(n * 100)}}, Result: "ok", LatencyMs: ms(3)})
		}
		g.Generations = append(g.Generations, gen)
		g.LastSeen = *stamp(start + 5*time.Second)
	}
	return g
}

// synthReport is n groups of 3 members over 20 generations.
func synthReport(n int) *timeline.Report {
	r := &timeline.Report{}
	for i := range n {
		r.Groups = append(r.Groups, synthGroup(fmt.Sprintf("group-%05d", i), 3, 20))
	}
	return r
}

// BenchmarkAPIGroups is /api/groups for 2,000 groups: the summaries a
// snapshot keeps, as JSON.
func BenchmarkAPIGroups(b *testing.B) {
	r := synthReport(2000)
	h := NewHandler(snapshotOf(r), nil)
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/groups", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
}

// BenchmarkAPIGroupsFindings is /api/groups for the 2,000 groups of
// BenchmarkAPIGroups with each group's findings count and worst severity,
// as serve gives them (diagnose.Live.Counts): the counts the diagnosis
// keeps as it publishes, copied under a lock for each request. They are
// counted once, before the timer, from one finding for each group, so
// that every row carries a count.
func BenchmarkAPIGroupsFindings(b *testing.B) {
	r := synthReport(2000)
	src := snapshotOf(r)
	rep, _, _ := src().Report(context.Background(), timeline.Query{})
	var fs []diagnose.Finding
	for _, g := range rep.Groups { // every group with one, so that every row has a count to copy
		fs = append(fs, diagnose.Finding{ID: "heartbeat_too_slow/" + g.Group, Kind: diagnose.HeartbeatTooSlow, Group: g.Group, Severity: diagnose.Warning})
	}
	kept := diagnose.CountFindings(fs)
	var mu sync.Mutex
	h := NewHandler(src, nil).WithCounts(func() map[string]diagnose.FindingCount {
		mu.Lock()
		defer mu.Unlock()
		return maps.Clone(kept)
	})
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/groups", nil))
		if rec.Code != 200 {
			b.Fatal(rec.Code)
		}
	}
	b.ReportMetric(float64(len(fs)), "findings")
}

// BenchmarkAPIGroup is /api/groups/{group} for a group of 200 members over
// 500 generations.
func BenchmarkAPIGroup(b *testing.B) {
	r := &timeline.Report{Groups: []timeline.GroupReport{synthGroup("big", 200, 500)}}
	h := NewHandler(snapshotOf(r), nil)
	var size int
	b.ResetTimer()
	for b.Loop() {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest("GET", "/api/groups/big", nil))
		size = rec.Body.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// BenchmarkWriteHTML is the self-contained page of 2,000 groups.
func BenchmarkWriteHTML(b *testing.B) {
	r := synthReport(2000)
	var size int
	for b.Loop() {
		var buf bytes.Buffer
		if err := WriteHTML(&buf, r, nil, nil); err != nil {
			b.Fatal(err)
		}
		size = buf.Len()
	}
	b.ReportMetric(float64(size)/(1<<20), "MiB")
}

// pageTiming loads path from a server of r in Chromium and returns how
// long, from the navigation's start, the page took to draw its data
// (window.kproxyFirstDraw, set by the page after its first render) once
// ready holds.
func pageTiming(b *testing.B, br *headless.Browser, url, ready string) float64 {
	br.Run(b, 2*time.Minute, chromedp.Navigate(url))
	br.WaitJS(b, ready, ready, 2*time.Minute)
	return headless.Eval[float64](b, br, `window.kproxyFirstDraw`)
}

// BenchmarkPageChromium is the time from navigation to the drawn page in
// headless Chromium: the list of 2,000 groups, and the timeline of a group
// of 200 members over 500 generations (and of 20 members over 500).
func BenchmarkPageChromium(b *testing.B) {
	br := headless.Start(b, headless.Options{})
	list := synthReport(2000)
	big := &timeline.Report{Groups: []timeline.GroupReport{synthGroup("big", 200, 500), synthGroup("mid", 20, 500)}}
	for _, tc := range []struct {
		name  string
		r     *timeline.Report
		path  string
		ready string
	}{
		{"list_2000_groups", list, "/", `document.querySelectorAll('#groups tbody tr').length === 2000`},
		{"group_20_members_500_generations", big, "/groups/mid", `window.kproxyFirstDraw > 0`},
		{"group_200_members_500_generations", big, "/groups/big", `window.kproxyFirstDraw > 0`},
	} {
		b.Run(tc.name, func(b *testing.B) {
			srv := httptest.NewServer(NewHandler(snapshotOf(tc.r), nil))
			defer srv.Close()
			var total, zoom float64
			n := 0
			for b.Loop() {
				total += pageTiming(b, br, srv.URL+tc.path, tc.ready)
				if tc.path != "/" {
					// Zooming in redraws the chart synchronously.
					zoom += headless.Eval[float64](b, br, `(() => { const t = performance.now(); document.getElementById('zin').click(); return performance.now() - t })()`)
				}
				n++
			}
			b.ReportMetric(total/float64(n), "ms/first-draw")
			if zoom > 0 {
				b.ReportMetric(zoom/float64(n), "ms/zoom")
			}
		})
	}
}
