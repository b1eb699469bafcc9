package timeline

import (
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// sameSummaries checks that every group e keeps summarizes from its state
// (group.summary) as its report does (Summarize), field by field, and
// counts in seen what the summaries showed.
func sameSummaries(t *testing.T, when string, e *Engine, seen map[string]int) {
	t.Helper()
	for _, g := range e.groups {
		gr := g.report()
		want, got := Summarize(&gr), g.summary()
		if !reflect.DeepEqual(got, want) {
			gv, wv := reflect.ValueOf(got), reflect.ValueOf(want)
			for i := range gv.NumField() {
				if a, b := gv.Field(i).Interface(), wv.Field(i).Interface(); !reflect.DeepEqual(a, b) {
					t.Errorf("%s: group %s: %s from state %s, from the report %s", when, g.id, gv.Type().Field(i).Name, show(a), show(b))
				}
			}
			t.FailNow()
		}
		seen["groups"]++
		seen["protocol "+got.GroupProtocol]++
		seen["state "+got.State]++
		if got.Storm {
			seen["storm"]++
		}
		if got.Migration != "" {
			seen["migration"]++
		}
		if got.SuspectCommits > 0 {
			seen["suspects"]++
		}
		if got.FailedCommits > 0 {
			seen["failed commits"]++
		}
		if got.RebalancesLastHour > 0 {
			seen["recent rebalances"]++
		}
		if g.dormant != nil {
			seen["dormant"]++
		}
	}
}

// show is v for a message: what a pointer points to.
func show(v any) string {
	if p, ok := v.(*string); ok && p != nil {
		return fmt.Sprintf("&%q", *p)
	}
	return fmt.Sprintf("%#v", v)
}

// inZone is evs with their times in loc: the same instants, as a proxy
// whose local time zone is loc records them.
func inZone(evs []decode.Event, loc *time.Location) []decode.Event {
	out := make([]decode.Event, len(evs))
	for i, ev := range evs {
		ev.At = ev.At.In(loc)
		if !ev.RespondedAt.IsZero() {
			ev.RespondedAt = ev.RespondedAt.In(loc)
		}
		out[i] = ev
	}
	return out
}

// TestSummaryIsSummarize: a group's summary built from its state is the
// one Summarize builds from its report, field by field, after every event
// of every test story and golden scenario (with their times in UTC and in
// New York's zone), before and after Close, and over generated traffic of
// every protocol with storms, suspect and failed commits, short-lived
// groups gone dormant, and rebalances under way.
func TestSummaryIsSummarize(t *testing.T) {
	suspect := seedScript()
	suspect.commit(cB, 25, 25.002, "B-1", 2, "round_topic", map[int32]int64{2: 40}, nil)
	suspect.hb(cA, 30.5, 30.501, "A-1", 2, errRebalanceInProgress)
	suspect.commit(cA, 30.6, 30.603, "A-1", 2, "round_topic", map[int32]int64{0: 20, 1: 15, 2: 11}, nil)
	stories := []scenario{
		{name: "seed", script: seedScript, closeAt: 30},
		{name: "cooperative", script: cooperativeScript, closeAt: 20},
		{name: "kip848", script: kip848Script, closeAt: 30},
		{name: "partial", script: partialScript, closeAt: 40},
		{name: "eos", script: func() *script { return eosScript(0) }, closeAt: 30},
		{name: "share", script: shareScript, closeAt: 80},
		{name: "streams", script: streamsScript, closeAt: 60},
		{name: "migration", script: upgradeScript, closeAt: 40},
		{name: "streams_classic", script: classicStreamsScript, closeAt: 70},
		{name: "suspect", script: func() *script { return suspect }, closeAt: 80},
		{name: "storm", script: stormScript, closeAt: 3600},
		{name: "growth", script: growthScript, closeAt: 3600},
		{name: "revoking chain", script: func() *script { return revokingChain(6) }, closeAt: 3600},
		{name: "rebalances", script: func() *script { return rebalances("g", 40) }, closeAt: 3600},
	}
	stories = append(stories, scenarios...)
	ny, err := time.LoadLocation("America/New_York")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	for _, sc := range stories {
		for _, loc := range []*time.Location{time.UTC, ny} {
			e := New(sc.cfg)
			for i, ev := range inZone(sc.script().events(), loc) {
				e.Add(ev)
				sameSummaries(t, fmt.Sprintf("%s (%s) after event %d", sc.name, loc, i), e, seen)
			}
			if sc.closeAt >= 0 {
				e.Close(sec(sc.closeAt).In(loc))
				sameSummaries(t, fmt.Sprintf("%s (%s) after Close", sc.name, loc), e, seen)
			}
		}
	}
	for _, o := range []synth.Options{
		{Seed: 3, Groups: 30, MaxMembers: 8, Mix: synth.RebalanceHeavy},
		{Seed: 5, Groups: 6, MaxMembers: 8, Mix: synth.Realistic, Heartbeat: 30 * time.Second, Jobs: 12},
	} {
		r := NewRetaining(Config{}, DefaultRetention)
		feedSynth(o, 2*time.Hour, 200_000, func(i int, evs []decode.Event) {
			r.AddEvents(evs)
			if i%500 == 0 {
				sameSummaries(t, fmt.Sprintf("%v after %d exchanges", o.Mix, i), r.Engine, seen)
			}
		})
		r.Close(r.now.Add(time.Minute))
		sameSummaries(t, fmt.Sprintf("%v after Close", o.Mix), r.Engine, seen)
	}
	t.Logf("seen: %v", seen)
	for _, k := range []string{"protocol classic", "protocol consumer", "protocol share", "protocol streams",
		"state rebalancing", "state stable", "state observed", "state empty", "storm", "migration", "suspects",
		"failed commits", "recent rebalances", "dormant"} {
		if seen[k] == 0 {
			t.Errorf("no summary with %s: the stories test nothing of it", k)
		}
	}
}
