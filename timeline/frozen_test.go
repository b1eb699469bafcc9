package timeline

import (
	"reflect"
	"slices"
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
				frozenWholeBlank(t, when)
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

// TestFrozenIgnoresLateExchanges: the one exception to "tells the same". A
// SyncGroup or Heartbeat naming a frozen generation, more than
// StreamingGenerations generations late, is ignored, as one naming a
// generation no longer kept is; an engine keeping its generations whole
// takes it in.
func TestFrozenIgnoresLateExchanges(t *testing.T) {
	cA, cB := client{"a", "127.0.0.1:5001"}, client{"b", "127.0.0.1:5002"}
	s := newScript("g")
	s.hbs(cA, "A-1", 1, 0, 30) // first seen mid-generation 1
	for gen := int32(2); gen <= 9; gen++ {
		at := float64(gen-1) * 60
		s.join(cA, at, at+0.1, jg("A-1", gen, "A-1", "A-1"))
		s.sync(cA, at+0.2, at+0.3, "A-1", gen, tp("t", 0, 1), map[string][]decode.TopicPartitions{"A-1": tp("t", 0, 1)})
		s.hbs(cA, "A-1", gen, at+1, at+60)
	}
	s.hbs(cA, "A-1", 9, 540, 610) // alive while the late exchanges come
	late := newScript("g")
	late.sync(cB, 612, 612.1, "B-1", 2, tp("t", 2), nil) // generation 2: stable, frozen
	late.hb(cB, 613, 613.1, "B-1", 1, 0)                 // generation 1: observed midway, frozen

	var told [2][]Entry
	var engines [2]*Retaining
	for i := range engines {
		engines[i] = NewRetaining(Config{OnEntry: func(e Entry) { told[i] = append(told[i], e) }}, Retention{Generations: 10})
	}
	whole, frozen := engines[0], engines[1]
	whole.wholeGenerations = true
	for _, e := range engines {
		e.AddEvents(s.events())
		e.Retain(e.retain)
	}
	g := frozen.byID["g"]
	for _, num := range []int32{1, 2} {
		if gen := g.numbered(num); gen == nil || gen.frozen == nil {
			t.Fatalf("generation %d is not kept frozen: %+v", num, gen)
		}
	}
	if gen := g.numbered(1); !gen.midway {
		t.Fatalf("generation 1 is not one observed midway")
	}
	before := frozen.Report().Groups[0].Generations
	n := len(told[1])
	for _, e := range engines {
		e.AddEvents(late.events())
	}
	if len(told[1]) != n {
		t.Errorf("the late exchanges told %d entries: %+v", len(told[1])-n, told[1][n:])
	}
	if a, b := asJSON(t, before), asJSON(t, frozen.Report().Groups[0].Generations); a != b {
		t.Errorf("the late exchanges changed the frozen generations: %s", firstDiff(a, b))
	}
	frozenWholeBlank(t, "after the late exchanges")
	wr := whole.Report()
	for _, num := range []int32{1, 2} {
		gr := genOf(t, wr, "g", num)
		if !slices.ContainsFunc(gr.Members, func(m MemberReport) bool { return m.MemberID == "B-1" }) {
			t.Errorf("kept whole, generation %d does not take in the late exchange: members %+v", num, gr.Members)
		}
	}
}

// frozenWholeBlank fails t when frozenWhole, shared by every frozen
// generation, was written.
func frozenWholeBlank(t *testing.T, when string) {
	t.Helper()
	if !reflect.ValueOf(*frozenWhole).IsZero() {
		t.Errorf("%s: frozenWhole, shared by the frozen generations, was written: %+v", when, *frozenWhole)
	}
}
