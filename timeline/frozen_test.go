package timeline

import (
	"reflect"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// TestFrozenTellsTheSame: an engine whose Retain freezes the older
// generations tells the same entries, reports, views and summaries, and
// answers who owned what the same, as one that keeps them whole.
func TestFrozenTellsTheSame(t *testing.T) {
	for _, tc := range []struct {
		name string
		mix  synth.Mix
	}{{"realistic", synth.Realistic}, {"rebalancing", synth.RebalanceHeavy}} {
		t.Run(tc.name, func(t *testing.T) {
			var told [2][]Entry
			cfg := func(i int) Config {
				return Config{MaxGenerations: 10, OnEntry: func(e Entry) { told[i] = append(told[i], e) }}
			}
			whole, frozen := NewRetaining(cfg(0), Retention{Generations: 10}), NewRetaining(cfg(1), Retention{Generations: 10})
			whole.wholeGenerations = true
			o := synth.Options{Seed: 7, Groups: 6, MaxMembers: 8, Mix: tc.mix, Heartbeat: 30 * time.Second, Jobs: 4}
			feedSynth(o, 2*time.Hour, 0, func(_ int, evs []decode.Event) {
				whole.AddEvents(evs)
				frozen.AddEvents(evs)
			})
			// Commits naming the frozen generations, of partitions their
			// members did not own there: suspects kept in frozen
			// generations, whose owners the frozen members name.
			at := frozen.now
			for _, v := range frozen.Views(nil) {
				g := frozen.byID[v.Group]
				for i, gv := range v.Generations {
					if g == nil || g.numbered(gv.Generation) == nil || g.numbered(gv.Generation).frozen == nil || len(gv.Members) < 2 {
						continue
					}
					for topic, parts := range gv.Members[1].Assignment {
						at = at.Add(time.Millisecond)
						oc := &decode.OffsetCommit{MemberID: gv.Members[0].MemberID, Generation: gv.Generation,
							Topics: []decode.CommitTopic{{Topic: topic, Partitions: []decode.CommitPartition{{Partition: parts[0], Offset: int64(i)}}}}}
						ev := []decode.Event{{At: at, RespondedAt: at.Add(time.Millisecond), ClientID: "late", ClientAddr: "127.0.0.1:1",
							APIKey: 8, Group: v.Group, BrokerID: 1, OffsetCommit: oc}}
						whole.AddEvents(ev)
						frozen.AddEvents(ev)
						break
					}
				}
			}
			n, suspects, zr, fm := 0, 0, 0, 0
			for _, g := range frozen.groups {
				zr += len(g.zfrozen)
				for _, gen := range g.gens {
					if gen.frozen != nil {
						n++
						suspects += len(gen.suspects)
						fm += len(g.frozenBlock().members(gen))
					}
				}
			}
			t.Logf("%d frozen generations, %d suspect commits in them, %d entries; frozen blocks %d bytes, members %d", n, suspects, len(told[1]), zr, fm)
			if n < 20 || suspects < 20 {
				t.Errorf("%d frozen generations, %d suspects in them, want at least 20 of each", n, suspects)
			}
			same := func(when string) {
				t.Helper()
				if len(told[0]) != len(told[1]) {
					t.Fatalf("%s: %d entries whole, %d frozen", when, len(told[0]), len(told[1]))
				}
				for i := range told[0] {
					if a, b := asJSON(t, told[0][i]), asJSON(t, told[1][i]); a != b {
						t.Fatalf("%s: entry %d: %s", when, i, firstDiff(a, b))
					}
				}
				if a, b := asJSON(t, whole.Report()), asJSON(t, frozen.Report()); a != b {
					t.Errorf("%s: the reports differ: %s", when, firstDiff(a, b))
				}
				av, bv := whole.Views(nil), frozen.Views(nil)
				if len(av) != len(bv) {
					t.Fatalf("%s: %d views whole, %d frozen", when, len(av), len(bv))
				}
				for i := range av {
					if a, b := asJSON(t, av[i]), asJSON(t, bv[i]); a != b {
						t.Errorf("%s: group %s: the views differ: %s", when, av[i].Group, firstDiff(a, b))
					}
				}
				sameSummaries(t, when, frozen.Engine, map[string]int{})
				for i, g := range frozen.groups {
					if a, b := whole.groups[i].summary(), g.summary(); !reflect.DeepEqual(a, b) {
						t.Errorf("%s: group %s: summary whole %+v, frozen %+v", when, g.id, a, b)
					}
				}
				asked := 0
				for _, v := range av {
					for _, gv := range v.Generations {
						for _, m := range gv.Members {
							for topic, parts := range m.Assignment {
								for _, p := range parts {
									asked++
									if a, b := whole.OwnerBefore(v.Group, gv.Generation, m.MemberID, topic, p), frozen.OwnerBefore(v.Group, gv.Generation, m.MemberID, topic, p); a != b {
										t.Errorf("%s: group %s gen %d %s[%d]: owner before %q whole, %q frozen", when, v.Group, gv.Generation, topic, p, a, b)
									}
								}
							}
						}
					}
				}
				t.Logf("%s: %d owners asked", when, asked)
			}
			same("before Close")
			at = frozen.now.Add(time.Minute)
			whole.Close(at)
			frozen.Close(at)
			same("after Close")
		})
	}
}

// firstDiff shows where a, kept whole, and b, frozen, first differ.
func firstDiff(a, b string) string {
	i := 0
	for i < len(a) && i < len(b) && a[i] == b[i] {
		i++
	}
	from := max(i-300, 0)
	return "whole …" + a[from:min(i+100, len(a))] + "\nfrozen …" + b[from:min(i+100, len(b))]
}
