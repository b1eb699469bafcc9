package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
	"github.com/kproxy-dev/kproxy/story"
	"github.com/kproxy-dev/kproxy/timeline"
)

// retainedTimeline writes a synthetic journal of many rebalances to a new
// directory and runs it through a live timeline that keeps r, as serve
// would have; it returns the directory and the timeline, closed.
func retainedTimeline(t *testing.T, r timeline.Retention) (string, *timeline.Live) {
	t.Helper()
	dir := t.TempDir()
	tr := synth.New(synth.Options{Seed: 5, Groups: 20, MaxMembers: 4, Mix: synth.RebalanceHeavy})
	if _, err := synth.Write(tr, synth.WriteOptions{Dir: dir, Bytes: 2 << 20}); err != nil {
		t.Fatal(err)
	}
	rd, err := journal.OpenReader(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer rd.Close()
	live := timeline.NewLive(timeline.Config{}, r)
	if err := pipeline.New(pipeline.Config{Events: []pipeline.EventConsumer{live}}).Run(context.Background(), rd.Source()); err != nil {
		t.Fatal(err)
	}
	live.Close(time.Time{})
	return dir, live
}

// startAdmin serves src on a loopback port until the test ends and
// returns its base address.
func startAdmin(t *testing.T, src adminSources) string {
	t.Helper()
	src.proxy = func() proxy.Stats { return proxy.Stats{} }
	src.pipeline = func() pipeline.Stats { return pipeline.Stats{} }
	a, err := newAdminServer("127.0.0.1:0", src, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	go a.serve() // ends with shutdown below
	t.Cleanup(a.shutdown)
	return "http://" + a.Addr().String()
}

// getTimeline GETs a timeline endpoint and returns the response with its
// body read, and the report decoded from it on a 200.
func getTimeline(t *testing.T, url string) (*http.Response, *timeline.Report) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK {
		return resp, nil
	}
	var r timeline.Report
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("%s: not JSON: %v", url, err)
	}
	return resp, &r
}

// TestAdminTimelinePaged: the timeline API pages the groups (the Link
// header names the next page, and the pages hold every group once),
// selects groups, refuses a bad limit, and serves a ?since= older than
// memory from the journal when there is one, else from memory saying
// from when it is whole.
func TestAdminTimelinePaged(t *testing.T) {
	dir, live := retainedTimeline(t, timeline.Retention{Generations: 4})
	snap := live.Snapshot()
	if snap.Horizon.IsZero() || snap.Len() != 20 {
		t.Fatalf("snapshot of %d groups, horizon %v; want 20 groups and history dropped", snap.Len(), snap.Horizon)
	}
	all, _, _ := snap.Report(context.Background(), timeline.Query{})
	var want []string
	for _, g := range all.Groups {
		want = append(want, g.Group)
	}
	base := startAdmin(t, adminSources{timeline: live.Snapshot, history: historyConfig{dir: dir}})
	noJournal := startAdmin(t, adminSources{timeline: live.Snapshot})

	t.Run("pages", func(t *testing.T) {
		var got []string
		next := base + "/api/timeline?limit=7"
		for pages := 0; next != ""; pages++ {
			if pages > 3 {
				t.Fatalf("more than 3 pages of 7 for 20 groups")
			}
			resp, r := getTimeline(t, next)
			if r == nil || len(r.Groups) > 7 {
				t.Fatalf("%s: status %d, %v", next, resp.StatusCode, r)
			}
			for _, g := range r.Groups {
				got = append(got, g.Group)
			}
			next = ""
			if l := resp.Header.Get("Link"); l != "" {
				next = base + strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("pages hold %v; want %v", got, want)
		}
	})
	t.Run("groups", func(t *testing.T) {
		_, r := getTimeline(t, base+"/api/timeline?group="+want[3]+"&group="+want[1])
		if r == nil || len(r.Groups) != 2 || r.Groups[0].Group != want[1] || r.Groups[1].Group != want[3] {
			t.Errorf("got %v; want groups %s and %s", r, want[1], want[3])
		}
	})
	for _, bad := range []string{"limit=0", "limit=1001", "since=yesterday"} {
		t.Run("bad "+bad, func(t *testing.T) {
			if resp, _ := getTimeline(t, base+"/api/timeline?"+bad); resp.StatusCode != http.StatusBadRequest {
				t.Errorf("status %d; want 400", resp.StatusCode)
			}
		})
	}
	since := "&since=2026-01-01T00:00:00Z" // the synthetic traffic's start
	t.Run("history from the journal", func(t *testing.T) {
		resp, r := getTimeline(t, base+"/api/timeline?group="+want[0]+since)
		if r == nil || resp.Header.Get("Kproxy-Source") != "journal" || len(r.Groups) != 1 {
			t.Fatalf("status %d, source %q, report %v; want group %s from the journal",
				resp.StatusCode, resp.Header.Get("Kproxy-Source"), r, want[0])
		}
		if kept := len(all.Groups[0].Generations); len(r.Groups[0].Generations) <= kept {
			t.Errorf("%d generations from the journal; want more than the %d memory keeps", len(r.Groups[0].Generations), kept)
		}
	})
	t.Run("history without a journal", func(t *testing.T) {
		resp, r := getTimeline(t, noJournal+"/api/timeline?group="+want[0]+since)
		if r == nil || resp.Header.Get("Kproxy-Source") != "memory" || resp.Header.Get("Kproxy-History-From") == "" {
			t.Errorf("status %d, headers %v; want the memory's report saying from when it is whole", resp.StatusCode, resp.Header)
		}
	})
	t.Run("text", func(t *testing.T) {
		resp, err := http.Get(base + "/timeline?group=" + want[2])
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		if !strings.Contains(string(b), want[2]) || strings.Contains(string(b), want[3]) {
			t.Errorf("/timeline?group=%s:\n%s", want[2], b)
		}
	})
}

// TestHistoryPagedFromJournal: history from the journal comes a page of
// groups at a time too, the pages hold every group once, and each group's
// report is the one a replay of every group tells.
func TestHistoryPagedFromJournal(t *testing.T) {
	dir, live := retainedTimeline(t, timeline.Retention{Generations: 4})
	base := startAdmin(t, adminSources{timeline: live.Snapshot, history: historyConfig{dir: dir}})
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the synthetic traffic's start
	full := toldReport(t, dir, timeline.Config{}, since)
	var got []timeline.GroupReport
	next := base + "/api/timeline?limit=7&since=" + since.Format(time.RFC3339)
	for pages := 0; next != ""; pages++ {
		if pages > 3 {
			t.Fatalf("more than 3 pages of 7 for 20 groups")
		}
		resp, r := getTimeline(t, next)
		if r == nil || len(r.Groups) > 7 || resp.Header.Get("Kproxy-Source") != "journal" {
			t.Fatalf("%s: status %d, source %q, %v", next, resp.StatusCode, resp.Header.Get("Kproxy-Source"), r)
		}
		got = append(got, r.Groups...)
		next = ""
		if l := resp.Header.Get("Link"); l != "" {
			next = base + strings.TrimSuffix(strings.TrimPrefix(l, "<"), `>; rel="next"`)
		}
	}
	want, _ := timeline.Query{Since: since}.Filter(full)
	if g, w := mustJSON(t, got), mustJSON(t, want.Groups); g != w {
		t.Errorf("pages from the journal differ from the full replay:\n got %.600s\nwant %.600s", g, w)
	}
}

// TestToldGroupsAsInWholeStory: a timeline told only some groups
// (Config.Groups) tells them exactly as one told every group, over
// generated journals of both mixes: the others' events still move its
// clock.
func TestToldGroupsAsInWholeStory(t *testing.T) {
	for _, j := range []struct {
		name string
		opts synth.Options
	}{
		{"realistic", synth.Options{Seed: 1, Groups: 40, MaxMembers: 12, Mix: synth.Realistic}},
		{"rebalance-heavy", synth.Options{Seed: 2, Groups: 20, MaxMembers: 8, Mix: synth.RebalanceHeavy}},
	} {
		t.Run(j.name, func(t *testing.T) {
			dir := t.TempDir()
			if _, err := synth.Write(synth.New(j.opts), synth.WriteOptions{Dir: dir, Exchanges: 30000}); err != nil {
				t.Fatal(err)
			}
			full := toldReport(t, dir, timeline.Config{}, time.Time{})
			if len(full.Groups) < 10 {
				t.Fatalf("%d groups told; want at least 10", len(full.Groups))
			}
			var some []string
			for i := 0; i < len(full.Groups); i += 4 {
				some = append(some, full.Groups[i].Group)
			}
			got := toldReport(t, dir, timeline.Config{Groups: some}, time.Time{})
			want, _ := timeline.Query{Groups: some}.Filter(full)
			if g, w := mustJSON(t, got.Groups), mustJSON(t, want.Groups); g != w {
				t.Errorf("groups %v told alone differ from the whole story:\n got %.600s\nwant %.600s", some, g, w)
			}
		})
	}
}

// toldReport is the report of a timeline of cfg told the journal at dir
// since since, as history and replay tell it.
func toldReport(t *testing.T, dir string, cfg timeline.Config, since time.Time) *timeline.Report {
	t.Helper()
	in, err := openJournalInput([]string{dir}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer in.close()
	st := story.New(story.Config{Timeline: cfg})
	if _, err := story.Tell(context.Background(), in, st, story.Window{Since: since, Batch: replayBatch}); err != nil {
		t.Fatal(err)
	}
	return st.Report()
}

// mustJSON is v as JSON.
func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestAdminDiagnosisPaged: /api/diagnosis reads the same parameters as the
// timeline API, hands them to the diagnosis, names the next page in the
// Link header, and refuses a bad limit.
func TestAdminDiagnosisPaged(t *testing.T) {
	var asked []timeline.Query
	base := startAdmin(t, adminSources{
		timeline: func() *timeline.Snapshot { return nil },
		diagnosis: func(q timeline.Query) ([]diagnose.Finding, string) {
			asked = append(asked, q)
			return nil, "g7"
		},
	})
	resp, err := http.Get(base + "/api/diagnosis?group=a&group=b&since=2026-01-01T00:00:00Z&after=g0&limit=7")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	want := timeline.Query{Groups: []string{"a", "b"}, Since: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), After: "g0", Limit: 7}
	if len(asked) != 1 || !reflect.DeepEqual(asked[0], want) {
		t.Errorf("asked %+v; want %+v", asked, want)
	}
	if l := resp.Header.Get("Link"); !strings.Contains(l, "after=g7") || !strings.HasSuffix(l, `>; rel="next"`) {
		t.Errorf("Link %q; want the page after g7", l)
	}
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(body), `"findings": []`) {
		t.Errorf("status %d, body %s", resp.StatusCode, body)
	}
	if resp, _ := getTimeline(t, base+"/api/diagnosis"); resp.StatusCode != http.StatusOK || asked[len(asked)-1].Limit != defaultPageGroups {
		t.Errorf("without a limit: status %d, asked %+v; want a page of %d groups", resp.StatusCode, asked[len(asked)-1], defaultPageGroups)
	}
	if resp, _ := getTimeline(t, base+"/api/diagnosis?limit=0"); resp.StatusCode != http.StatusBadRequest {
		t.Errorf("limit=0: status %d; want 400", resp.StatusCode)
	}
}

// TestHistoryHasItsOwnTurn: a timeline query that reads the journal does
// not wait for the turn of the other admin requests (here held by a
// findings request that does not finish), nor they for it.
func TestHistoryHasItsOwnTurn(t *testing.T) {
	dir, live := retainedTimeline(t, timeline.Retention{Generations: 4})
	release, held := make(chan struct{}), make(chan struct{})
	base := startAdmin(t, adminSources{timeline: live.Snapshot, history: historyConfig{dir: dir},
		diagnosis: func(timeline.Query) ([]diagnose.Finding, string) {
			close(held)
			<-release
			return nil, ""
		}})
	defer close(release)
	go http.Get(base + "/api/diagnosis") //nolint:errcheck // answers once released
	<-held
	since := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // the synthetic traffic's start
	done := make(chan *http.Response, 1)
	go func() {
		resp, _ := getTimeline(t, base+"/api/timeline?limit=3&since="+since.Format(time.RFC3339))
		done <- resp
	}()
	select {
	case resp := <-done:
		if resp.StatusCode != http.StatusOK || resp.Header.Get("Kproxy-Source") != "journal" {
			t.Errorf("history beside a held turn: status %d, source %q; want 200 from the journal", resp.StatusCode, resp.Header.Get("Kproxy-Source"))
		}
	case <-time.After(20 * time.Second):
		t.Fatal("history from the journal waited for the turn of the other admin requests")
	}
}
