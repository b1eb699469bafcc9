package diagnose

import (
	"bytes"
	"context"
	"maps"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/timeline"
)

// liveScripts are the scripts of the findings Live tells from events and
// connections (silences, restarts, commits, Fetch, heartbeat cadence),
// each with the second it is closed at.
var liveScripts = []struct {
	name    string
	script  func() *script
	closeAt float64
}{
	{"session_timeout", sessionTimeout, 50},
	{"poll_timeout_deadline", pollDeadline, 70},
	{"rolling_restart", rollingRestart, 80},
	{"commits", commits, 40},
	{"duplicate_window", duplicateWindow, 40},
	{"heartbeat_too_slow", slowHeartbeats, 55},
}

// TestLiveTellsEachFindingOnce runs scenarios through Live as serve does
// and checks that every finding is told exactly once, that what was told
// is what Findings returns at the end, and that warnings come before the
// evictions they link.
func TestLiveTellsEachFindingOnce(t *testing.T) {
	for _, c := range liveScripts {
		t.Run(c.name, func(t *testing.T) {
			var told []string
			l := NewLive(timeline.Config{}, timeline.Retention{}, Config{}, func(f Finding) { told = append(told, f.ID) }, nil)
			feedLive(l, c.script())
			l.Close(sec(c.closeAt))
			var ids []string
			for _, f := range l.Findings() {
				ids = append(ids, f.ID)
				for _, link := range f.Links {
					if i, j := slices.Index(told, link), slices.Index(told, f.ID); i < 0 || i > j {
						t.Errorf("%s was told before the warning %s it links", f.ID, link)
					}
				}
			}
			sortedTold := slices.Sorted(slices.Values(told))
			if !slices.Equal(slices.Compact(slices.Clone(sortedTold)), sortedTold) {
				t.Errorf("a finding was told twice: %v", told)
			}
			if !slices.Equal(sortedTold, slices.Sorted(slices.Values(ids))) {
				t.Errorf("told %v; findings %v", told, ids)
			}
		})
	}
}

// TestLiveAfterStorm: the rolling restart's storm (six rebalances within
// a 30 s window) is over when the input ends 30 s past its last
// rebalance (the timeline ends a storm at the next rebalance after its
// window, or at the end); Live then hands the group's findings of the
// storm to afterStorm, once: the rebalance loop and the rollout.
func TestLiveAfterStorm(t *testing.T) {
	var calls [][]Kind
	l := NewLive(timeline.Config{StormWindow: 30 * time.Second}, timeline.Retention{}, Config{}, nil, func(group string, fs []Finding) {
		var ks []Kind
		for _, f := range fs {
			if f.Group != group {
				t.Errorf("finding of group %s in the block of %s", f.Group, group)
			}
			ks = append(ks, f.Kind)
		}
		calls = append(calls, ks)
	})
	feedLive(l, rollingRestart())
	if len(calls) != 0 {
		t.Fatalf("afterStorm called %v before the storm ended", calls)
	}
	l.Close(sec(120))
	if want := [][]Kind{{RebalanceLoop, RollingRestart}}; !reflect.DeepEqual(calls, want) {
		t.Errorf("afterStorm got %v; want %v", calls, want)
	}
}

// feedLive hands s to l as serve's pipeline does: the timeline takes each
// item's events, then the diagnosis the item.
func feedLive(l *Live, s *script) {
	for _, it := range s.ordered() {
		var evs []decode.Event
		if it.ev != nil {
			evs = []decode.Event{*it.ev}
			l.AddEvents(evs)
		}
		l.AddDecoded(decode.NewDecoded(it.x, evs))
	}
}

// slowHeartbeats is one member heartbeating every 5 s with a session
// timeout of 10 s: at its sixth heartbeat (28 s) five gaps are seen and
// their median is over a third of the session (heartbeat_too_slow).
func slowHeartbeats() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA}, map[string][]int32{"A-1": {0}})
	s.hbs(cA, "A-1", 1, 3, 45, 5)
	return s
}

// TestLiveTellsAtTheRevealingExchange: a finding the events show is told
// once the exchange that revealed it is in, and within publishEvery of
// event time after it (at the first exchange or tick that late), not at
// Close, even when that exchange adds no finding or handover to the
// group: the heartbeat that makes the cadence too slow, and a Fetch
// request (no event at all) by the new owner of a partition that settles
// a duplicate window. Alone in its second, the exchange is told at once;
// when nothing comes after it, the diagnosis' tick tells it.
func TestLiveTellsAtTheRevealingExchange(t *testing.T) {
	for _, c := range []struct {
		name   string
		script func() *script
		kind   Kind
		at     float64 // request time of the revealing exchange
		alone  bool    // no publish within publishEvery before it
		quiet  bool    // nothing comes after it
	}{
		{"heartbeat_too_slow", slowHeartbeats, HeartbeatTooSlow, 28, true, false},
		{"duplicate_window_on_fetch", duplicateWindow, DuplicateWindow, 11, false, false},
		{"duplicate_window_then_quiet", duplicateWindow, DuplicateWindow, 11, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			var told []Kind
			l := NewLive(timeline.Config{}, timeline.Retention{}, Config{}, func(f Finding) { told = append(told, f.Kind) }, nil)
			at, due := sec(c.at), sec(c.at).Add(publishEvery)
			for _, it := range c.script().ordered() {
				if c.quiet && it.when().After(at) {
					break
				}
				var evs []decode.Event
				if it.ev != nil {
					evs = []decode.Event{*it.ev}
					l.AddEvents(evs)
				}
				l.AddDecoded(decode.NewDecoded(it.x, evs))
				req := it.when()
				switch was := slices.Contains(told, c.kind); {
				case req.Before(at) && was:
					t.Fatalf("%s told after the exchange at %s; want first after the one at %s", c.kind, req, at)
				case req.Equal(at) && c.alone && !was:
					t.Fatalf("%s not told right after the exchange at %s that revealed it; told so far %v", c.kind, req, told)
				case !req.Before(due) && !was:
					t.Fatalf("%s not told by the exchange at %s, %s after the one that revealed it; told so far %v", c.kind, req, publishEvery, told)
				}
			}
			if l.Advance(due); !slices.Contains(told, c.kind) {
				t.Fatalf("%s not told by a tick %s after the exchange that revealed it; told so far %v", c.kind, publishEvery, told)
			}
		})
	}
}

// wholeFindings is what the engine finds now over the timeline's whole
// report, built now.
func wholeFindings(l *Live) []Finding {
	return l.d.Findings()
}

// sameFindings fails t unless Live.Findings, published group by group,
// equals wholeFindings; it returns how many.
func sameFindings(t *testing.T, l *Live, when string) int {
	t.Helper()
	var got, want bytes.Buffer
	if err := WriteJSON(&got, l.Findings()); err != nil {
		t.Fatal(err)
	}
	whole := wholeFindings(l)
	if err := WriteJSON(&want, whole); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got.Bytes(), want.Bytes()) {
		t.Errorf("%s: Findings group by group differs from the whole report's:\n%s\nwant\n%s", when, got.String(), want.String())
	}
	return len(whole)
}

// TestLiveFindingsGroupByGroup: Findings, published for the groups each
// publish recomputed, is what the engine finds over the whole report:
// over generated traffic of many groups, midway (once a publish is due)
// and after Close; and for a
// warning that outlives its group's state (the member fell silent after
// the group's last event; the engine and the timeline have forgotten the
// group since, not yet the warning).
func TestLiveFindingsGroupByGroup(t *testing.T) {
	t.Run("generated", func(t *testing.T) {
		l := NewLive(timeline.Config{}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge}, nil, nil)
		xs := synthExchanges(300, 40_000)
		run := func(xs []*decode.Exchange) {
			cfg := pipeline.Config{Events: []pipeline.EventConsumer{l}, Decoded: []pipeline.DecodedConsumer{l}}
			if err := pipeline.New(cfg).Run(context.Background(), &sliceSource{xs: xs}); err != nil {
				t.Fatal(err)
			}
		}
		run(xs[:30_000])
		l.Timeline().Publish()
		run(xs[30_000:])
		l.Advance(l.d.now.Add(publishEvery)) // what changed since the last publish is due
		if n := sameFindings(t, l, "midway"); n == 0 {
			t.Fatal("no finding midway: the traffic tests nothing")
		}
		l.Close(time.Time{})
		sameFindings(t, l, "after Close")
	})
	t.Run("warning_outlives_group", func(t *testing.T) {
		const age = 30 * time.Minute
		l := NewLive(timeline.Config{}, timeline.Retention{MaxAge: age}, Config{Forget: age}, nil, nil)
		feedLive(l, sessionTimeout())
		l.Close(sec(50))
		l.AddDecoded(&decode.Decoded{Events: []decode.Event{{At: sec(58)}}}) // A, silent since 50, is warned of
		last := l.d.groups["g"].last
		var after []Finding
		for _, w := range l.d.warnings {
			if w.at.After(last) {
				after = append(after, w)
			}
		}
		if len(after) == 0 {
			t.Fatalf("no warning after the group's last event at %s: %+v", last, l.d.warnings)
		}
		evs := []decode.Event{{At: last.Add(age + time.Second)}}
		l.AddEvents(evs)
		l.AddDecoded(&decode.Decoded{Events: evs})
		l.Timeline().Publish()
		if ok := l.Timeline().Snapshot().Has("g"); ok || l.d.groups["g"] != nil {
			t.Fatalf("g still kept (timeline %v, engine %v); want it forgotten", ok, l.d.groups["g"] != nil)
		}
		if n := sameFindings(t, l, "once g is forgotten"); n == 0 {
			t.Fatal("the warning was forgotten with its group: the case tests nothing")
		}
	})
}

// TestLiveSettle: Settle tells the same findings and storm blocks as
// Close, and leaves the timeline's snapshot as it was (Close publishes
// the final one).
func TestLiveSettle(t *testing.T) {
	for _, c := range []struct {
		name    string
		script  func() *script
		closeAt float64
		blocks  int // storm blocks told
	}{
		{"session_timeout", sessionTimeout, 50, 0},
		{"rolling_restart", rollingRestart, 120, 1}, // its storm ends at the end
		{"duplicate_window", duplicateWindow, 40, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			end := func(settle bool) (told []string, blocks [][]string, snapKept bool) {
				l := NewLive(timeline.Config{StormWindow: 30 * time.Second}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge},
					func(f Finding) { told = append(told, f.ID) },
					func(group string, fs []Finding) {
						var ids []string
						for _, f := range fs {
							ids = append(ids, f.ID)
						}
						blocks = append(blocks, ids)
					})
				feedLive(l, c.script())
				before := l.Timeline().Snapshot()
				if settle {
					l.Settle(sec(c.closeAt))
				} else {
					l.Close(sec(c.closeAt))
				}
				return told, blocks, l.Timeline().Snapshot() == before
			}
			told, blocks, kept := end(false)
			if kept {
				t.Fatal("Close published no snapshot")
			}
			if len(told) == 0 || len(blocks) != c.blocks {
				t.Fatalf("told %v and %d storm blocks; want some, and %d blocks", told, len(blocks), c.blocks)
			}
			settledTold, settledBlocks, kept := end(true)
			if !kept {
				t.Error("Settle published a snapshot")
			}
			if !slices.Equal(settledTold, told) || !reflect.DeepEqual(settledBlocks, blocks) {
				t.Errorf("Settle told %v, blocks %v; Close told %v, blocks %v", settledTold, settledBlocks, told, blocks)
			}
		})
	}
}

// TestLiveFindingsPaged: FindingsPage's pages, over generated traffic of
// many groups, hold every finding of Findings once, each page at most
// Limit groups' and in order; Since keeps the findings at or after it,
// and Groups those of the groups named.
func TestLiveFindingsPaged(t *testing.T) {
	l := NewLive(timeline.Config{}, timeline.DefaultRetention, Config{Forget: timeline.DefaultRetention.MaxAge}, nil, nil)
	cfg := pipeline.Config{Events: []pipeline.EventConsumer{l}, Decoded: []pipeline.DecodedConsumer{l}}
	if err := pipeline.New(cfg).Run(context.Background(), &sliceSource{xs: synthExchanges(300, 40_000)}); err != nil {
		t.Fatal(err)
	}
	l.Close(time.Time{})
	whole := l.Findings()
	if len(whole) < 20 {
		t.Fatalf("%d findings: the traffic tests little", len(whole))
	}
	ids := func(fs []Finding) []string {
		var out []string
		for _, f := range fs {
			out = append(out, f.ID)
		}
		return slices.Sorted(slices.Values(out))
	}
	var paged []Finding
	after, pages := "", 0
	for ; ; pages++ {
		fs, next := l.FindingsPage(timeline.Query{After: after, Limit: 7})
		groups := map[string]bool{}
		for _, f := range fs {
			groups[f.Group] = true
			if f.Group <= after || next != "" && f.Group > next {
				t.Fatalf("page after %q (next %q) holds a finding of %s", after, next, f.Group)
			}
		}
		if len(groups) > 7 {
			t.Fatalf("page after %q holds findings of %d groups; want at most 7", after, len(groups))
		}
		paged = append(paged, fs...)
		if next == "" {
			break
		}
		after = next
	}
	if pages < 2 {
		t.Fatalf("%d pages of 7 groups: want several", pages+1)
	}
	if got, want := ids(paged), ids(whole); !slices.Equal(got, want) {
		t.Errorf("pages hold %d findings; want the %d of Findings", len(got), len(want))
	}

	since := whole[len(whole)/2].at
	var later []Finding
	for _, f := range whole {
		if !f.at.Before(since) {
			later = append(later, f)
		}
	}
	if got, _ := l.FindingsPage(timeline.Query{Since: since}); !slices.Equal(ids(got), ids(later)) {
		t.Errorf("since %s: %d findings; want %d", since, len(got), len(later))
	}
	g := whole[0].Group
	if got, next := l.FindingsPage(timeline.Query{Groups: []string{g}, Limit: 7}); !slices.Equal(ids(got), ids(l.GroupFindings(g))) || next != "" {
		t.Errorf("group %s: findings %v, next %q; want %v and no next page", g, ids(got), next, ids(l.GroupFindings(g)))
	}
}

// TestGroupsAsInWholeDiagnosis: an engine that finds only some groups
// (Config.Groups), beside a timeline that tells only those, finds for
// each of them what the engine of every group finds, and keeps no state
// for the others: over generated rebalancing traffic of many groups that
// share topics and hosts, and over the scripts of the findings that read
// connections (Fetch, silences, commits) beside a second group of the
// same clients.
func TestGroupsAsInWholeDiagnosis(t *testing.T) {
	t.Run("scripts", func(t *testing.T) {
		for _, c := range liveScripts {
			s := c.script()
			for _, it := range slices.Clone(s.items) { // group h: the same clients, members and exchanges
				if it.ev != nil {
					ev := *it.ev
					ev.Group = "h"
					s.items = append(s.items, item{ev: &ev})
				}
			}
			whole, _ := diagnoseScript(t, Config{}, s, c.closeAt)
			alone, _ := diagnoseScript(t, Config{Groups: []string{s.group}}, s, c.closeAt)
			var want []Finding
			for _, f := range whole {
				if f.Group == s.group {
					want = append(want, f)
				}
			}
			if len(want) == 0 || len(want) == len(whole) {
				t.Fatalf("%s: %d findings of %s among %d: the case tests nothing", c.name, len(want), s.group, len(whole))
			}
			var got, wantJSON bytes.Buffer
			if err := WriteJSON(&got, alone); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&wantJSON, want); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), wantJSON.Bytes()) {
				t.Errorf("%s: %s alone:\n%s\nwant, as in the whole diagnosis:\n%s", c.name, s.group, got.String(), wantJSON.String())
			}
		}
	})

	t.Run("generated", func(t *testing.T) {
		tr := synth.New(synth.Options{Seed: 3, Groups: 40, MaxMembers: 12, Mix: synth.RebalanceHeavy})
		xs := make([]*decode.Exchange, 60_000)
		for i := range xs {
			xs[i] = tr.Next()
		}
		diagnosis := func(groups []string) map[string][]Finding {
			d := New(Config{Groups: groups}, timeline.Config{Groups: groups})
			eng := d.Timeline()
			cfg := pipeline.Config{Events: []pipeline.EventConsumer{d}, Decoded: []pipeline.DecodedConsumer{d}}
			if err := pipeline.New(cfg).Run(context.Background(), &sliceSource{xs: xs}); err != nil {
				t.Fatal(err)
			}
			if len(groups) > 0 && len(d.groups) > len(groups) {
				t.Errorf("the engine of %v keeps %d groups", groups, len(d.groups))
			}
			eng.Close(time.Time{})
			d.Advance(xs[len(xs)-1].ResponseAt)
			out := map[string][]Finding{}
			for _, f := range d.Findings() {
				out[f.Group] = append(out[f.Group], f)
			}
			return out
		}
		whole := diagnosis(nil)
		if len(whole) < 5 {
			t.Fatalf("findings in %d groups: the traffic tests little", len(whole))
		}
		for _, id := range slices.Sorted(maps.Keys(whole))[:5] {
			alone := diagnosis([]string{id})
			var got, want bytes.Buffer
			if err := WriteJSON(&got, alone[id]); err != nil {
				t.Fatal(err)
			}
			if err := WriteJSON(&want, whole[id]); err != nil {
				t.Fatal(err)
			}
			if !bytes.Equal(got.Bytes(), want.Bytes()) {
				t.Errorf("%s alone:\n%s\nwant, as in the whole diagnosis:\n%s", id, got.String(), want.String())
			}
		}
	})
}
