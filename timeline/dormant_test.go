package timeline

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/synth"
)

// TestDormantTellsTheSame: over three hours of the realistic mix with
// short-lived groups, an engine that makes the groups that ended dormant
// (an age in its retention) tells the same entries, reports, views and
// member facts as one that keeps them awake (no age), before and after
// Close, and makes most of the ended groups dormant, those whose last
// member's departure left a generation to make among them.
func TestDormantTellsTheSame(t *testing.T) {
	var told [2][]Entry
	engines := [2]*Retaining{}
	for i, r := range []Retention{{Generations: 10}, DefaultRetention} {
		engines[i] = NewRetaining(Config{OnEntry: func(e Entry) { told[i] = append(told[i], e) }}, r)
	}
	o := synth.Options{Seed: 5, Groups: 3, MaxMembers: 8, Mix: synth.Realistic, Heartbeat: 30 * time.Second, Jobs: 12}
	feedSynth(o, 3*time.Hour, 0, func(_ int, evs []decode.Event) {
		for _, e := range engines {
			e.AddEvents(evs)
		}
	})
	awake, asleep := engines[0], engines[1]
	dormant, emptied := 0, 0
	for _, g := range asleep.groups {
		if g.dormant != nil {
			dormant++
			if g.dormant.closes {
				emptied++
			}
			n := 0
			for m := range asleep.Members(g.id) {
				n++
				if want, _ := awake.Member(g.id, m.MemberID); m != want {
					t.Errorf("group %s member %s: dormant %+v, awake %+v", g.id, m.MemberID, m, want)
				}
				if got, _ := asleep.Member(g.id, m.MemberID); got != m {
					t.Errorf("group %s member %s: Member %+v, Members %+v", g.id, m.MemberID, got, m)
				}
			}
			if want := len(slices.Collect(awake.Members(g.id))); n != want {
				t.Errorf("group %s: %d members dormant, %d awake", g.id, n, want)
			}
		}
	}
	t.Logf("%d dormant of %d groups, %d with the generation their emptying starts still to make", dormant, len(asleep.groups), emptied)
	if dormant < 20 {
		t.Errorf("%d dormant groups of %d, want at least 20", dormant, len(asleep.groups))
	}
	if emptied == 0 {
		t.Error("no dormant group has an emptied group's generation still to make")
	}
	same := func(when string) {
		t.Helper()
		if len(told[0]) != len(told[1]) {
			t.Fatalf("%s: %d entries awake, %d with dormant groups", when, len(told[0]), len(told[1]))
		}
		for i := range told[0] {
			if a, b := asJSON(t, told[0][i]), asJSON(t, told[1][i]); a != b {
				t.Fatalf("%s: entry %d awake\n%s\nwith dormant groups\n%s", when, i, a, b)
			}
		}
		if a, b := asJSON(t, awake.Report()), asJSON(t, asleep.Report()); a != b {
			t.Errorf("%s: the reports differ", when)
		}
		if a, b := awake.Horizon(), asleep.Horizon(); !a.Equal(b) {
			t.Errorf("%s: Horizon %v awake, %v with dormant groups", when, a, b)
		}
		av, bv := awake.Views(nil), asleep.Views(nil)
		if len(av) != len(bv) {
			t.Fatalf("%s: %d views awake, %d with dormant groups", when, len(av), len(bv))
		}
		for i := range av {
			if a, b := asJSON(t, av[i]), asJSON(t, bv[i]); a != b {
				t.Errorf("%s: group %s: view awake\n%s\ndormant\n%s", when, av[i].Group, a, b)
			}
		}
	}
	same("before Close")
	at := awake.now.Add(time.Minute)
	awake.Close(at)
	asleep.Close(at)
	same("after Close")
}

// TestDormantWakes: a group whose members all left is dormant an hour
// later (its report published from what it keeps); its id back starts a
// new history, listed after the dormant one, which the snapshot shows.
func TestDormantWakes(t *testing.T) {
	s := twoMembers("jobs")
	s.leave(cA, 11, 11.001, "A-1", "the consumer is being closed")
	s.leave(cB, 11.1, 11.101, "B-1", "the consumer is being closed")
	evs := s.events()
	var told []Entry
	l := NewLive(Config{OnEntry: func(e Entry) { told = append(told, e) }}, DefaultRetention)
	l.AddEvents(evs)
	l.Publish()
	before := asJSON(t, l.Report())
	tick := func(at float64) { // an event of no group moves the clock
		l.AddEvents([]decode.Event{{At: sec(at), RespondedAt: sec(at), Metadata: &decode.Metadata{}}})
	}
	tick(11 + 59*60)
	if g := l.e.byID["jobs"]; g.dormant != nil {
		t.Fatal("dormant before an hour of quiet")
	}
	tick(11.2 + 3600)
	g := l.e.byID["jobs"]
	if g.dormant == nil {
		t.Fatal("not dormant after an hour of quiet")
	}
	if g.gens != nil || g.byNum != nil {
		t.Error("a dormant group keeps its generations")
	}
	if after := asJSON(t, l.Report()); after != before {
		t.Errorf("report awake\n%s\ndormant\n%s", before, after)
	}
	l.publish(true) // as the next Publish but one in wall time
	snap := l.Snapshot()
	if sg := snap.find("jobs"); sg == nil || !reflect.DeepEqual(sg, g.dormant.snap) {
		t.Error("the snapshot does not publish the summary the dormant group keeps")
	}
	if b, ok, err := snap.GroupJSON(context.Background(), "jobs"); err != nil || !ok || string(b) != string(g.dormant.json()) {
		t.Errorf("GroupJSON(jobs) = %s, %v, %v; want the report the dormant group keeps", b, ok, err)
	}

	n := len(told)
	again := newScript("jobs")
	again.join(cA, 4000, 4000.01, jg("A-2", 3, "A-2", "A-2"))
	again.sync(cA, 4000.02, 4000.03, "A-2", 3, tp("round_topic", 0, 1, 2), map[string][]decode.TopicPartitions{"A-2": tp("round_topic", 0, 1, 2)})
	l.AddEvents(again.events())
	l.publish(true)
	r := l.Report()
	if got := gens(r, "jobs"); len(r.Groups) != 2 || len(got) != 1 || got[0] != 1 || len(r.Groups[1].Generations) != 1 || r.Groups[1].Generations[0].Generation != 3 {
		t.Fatalf("histories: %s", asJSON(t, r))
	}
	if len(told) == n {
		t.Error("the new history told nothing")
	}
	if sr, _, _ := l.Snapshot().Report(context.Background(), Query{}); len(sr.Groups) != 1 || sr.Groups[0].Generations[0].Generation != 3 {
		t.Errorf("snapshot: %s", asJSON(t, sr))
	}

	// A day after the dormant history's last event, the age forgets it;
	// the new one, heard from since, stays known.
	later := newScript("jobs")
	later.hb(cA, 86430, 86430.001, "A-2", 3, 0)
	l.AddEvents(later.events())
	tick(86470)
	if r := l.Report(); len(r.Groups) != 1 || r.Groups[0].Generations[0].Generation != 3 || l.e.byID["jobs"] == nil {
		t.Fatalf("after a day: %s", asJSON(t, r))
	}
	l.Close(sec(86500))
}

// TestDormantFrame: a dormant group's frame gives back the report's and
// the view's JSON as they went in (and those Close leaves), and an encoder shared by the groups
// that fall asleep at one Retain writes each the frame of a new one.
func TestDormantFrame(t *testing.T) {
	enc := newDormantEncoder()
	for _, tc := range []struct{ report, view string }{
		{`{"group":"g"}`, `{"group":"g","members":[]}`},
		{`{}`, ``},
		{strings.Repeat(`{"a":1}`, 1000), `{"b":2}`},
	} {
		z := compressDormant(enc, []byte(tc.report), []byte(tc.view))
		if p := z.parts(2); string(p[0]) != tc.report || string(p[1]) != tc.view {
			t.Errorf("frame of %.20q and %.20q gave %.20q and %.20q", tc.report, tc.view, p[0], p[1])
		}
		if fresh := compressDormant(newDormantEncoder(), []byte(tc.report), []byte(tc.view)); !bytes.Equal(z, fresh) {
			t.Errorf("frame of %.20q and %.20q: %d bytes by a shared encoder, %d by a new one", tc.report, tc.view, len(z), len(fresh))
		}
	}
	four := []string{`{"group":"g"}`, `{}`, ``, `{"group":"g","generations":[{}]}`}
	z := compressDormant(enc, []byte(four[0]), []byte(four[1]), []byte(four[2]), []byte(four[3]))
	for i, p := range z.parts(4) {
		if string(p) != four[i] {
			t.Errorf("frame of four parts gave %q as part %d, want %q", p, i, four[i])
		}
	}
}

// TestDormantDict: the dormant dictionary (zstd.go) is the report's and
// the view's JSON of the first group of the synth mix to fall asleep, as
// the timeline writes them now: any change to what they hold (a field, a
// text, a time, the synth mix) makes this test fail until `go test
// ./timeline -run TestDormantDict -update` writes it again, as a golden
// file (frames are never written anywhere, so any dictionary reads back
// what it compressed; an old one only compresses less).
func TestDormantDict(t *testing.T) {
	r, v := firstAsleep(t, 1)
	got := append(r, v...)
	if *update {
		if err := os.WriteFile("dormant.dict", got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	if !bytes.Equal(got, dormantDict) {
		t.Errorf("the dormant dictionary (%d bytes) is not the first dormant group's report and view (%d bytes): run go test ./timeline -run TestDormantDict -update", len(dormantDict), len(got))
	}
}

// BenchmarkCompressDormant: the frame of a sleeping group of the synth
// mix (not the dictionary's), its size as frame-B.
func BenchmarkCompressDormant(b *testing.B) {
	r, v := firstAsleep(b, 2)
	var z zdormant
	enc := newDormantEncoder()
	b.ReportAllocs()
	for b.Loop() {
		z = compressDormant(enc, r, v)
	}
	b.ReportMetric(float64(len(z)), "frame-B")
}

// firstAsleep is the report's and the view's JSON of the first group to
// fall asleep in the synth mix with jobs of the seed.
func firstAsleep(tb testing.TB, seed uint64) (report, view []byte) {
	tb.Helper()
	e := NewRetaining(Config{}, DefaultRetention)
	o := synth.Options{Seed: seed, Groups: 1, MaxMembers: 8, Mix: synth.Realistic, Heartbeat: 30 * time.Second, Jobs: 4}
	feedSynth(o, 6*time.Hour, 0, func(_ int, evs []decode.Event) {
		if report != nil {
			return
		}
		e.AddEvents(evs)
		for _, g := range e.groups {
			if d := g.dormant; d != nil {
				report, view = d.pairIn(new([]byte))
				return
			}
		}
	})
	if report == nil {
		tb.Fatalf("no group fell asleep in 6 h of the synth mix of seed %d", seed)
	}
	return report, view
}

// TestDormantEmptied: a group whose only member left has the empty
// generation still to make; it sleeps an hour later all the same, and its
// Close makes what an awake group's does: the same report, the same
// summary and the same Horizon (the one generation kept dropped for the
// empty one).
func TestDormantEmptied(t *testing.T) {
	s := newScript("solo")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.004, 0.010, jg("A-1", 1, "A-1", "A-1"))
	s.sync(cA, 0.011, 0.012, "A-1", 1, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1)})
	s.hbs(cA, "A-1", 1, 3, 10)
	s.leave(cA, 11, 11.001, "A-1", "the consumer is being closed")
	awake, asleep := emptiedAnHourLater(s, 11.2, 1)
	if g := awake.e.byID["solo"]; g.dormant != nil || g.next == nil || g.next.empty == nil {
		t.Fatal("the awake group has no empty generation to make")
	}
	g := asleep.e.byID["solo"]
	if g.dormant == nil || !g.dormant.closes {
		t.Fatal("the emptied group is not dormant with what Close leaves an hour later")
	}
	same := func(when string) {
		t.Helper()
		if a, b := asJSON(t, awake.Report()), asJSON(t, asleep.Report()); a != b {
			t.Errorf("%s: report awake\n%s\ndormant\n%s", when, a, b)
		}
		if a, b := asJSON(t, awake.Snapshot().Summaries()), asJSON(t, asleep.Snapshot().Summaries()); a != b {
			t.Errorf("%s: summaries awake\n%s\ndormant\n%s", when, a, b)
		}
		if a, b := awake.e.Horizon(), asleep.e.Horizon(); !a.Equal(b) {
			t.Errorf("%s: Horizon %v awake, %v dormant", when, a, b)
		}
	}
	awake.publish(true)
	asleep.publish(true)
	same("before Close")
	awake.Close(sec(7300))
	asleep.Close(sec(7300))
	same("after Close")
	if r := asleep.Report(); len(r.Groups) != 1 || len(r.Groups[0].Generations) != 1 || r.Groups[0].Generations[0].Generation != 2 {
		t.Errorf("after Close: %s, want generation 2 alone", asJSON(t, r))
	}
}

// TestDormantEmptiedDropUnknown checks that an emptied group stays awake
// when the generation Close's keep would leave oldest has no time (here
// one seen from heartbeats alone, after a gap): Close notes the time it
// closes at as the Horizon, which the group cannot know when it would
// sleep. Its report and Horizon after Close are those of a group that
// never sleeps.
func TestDormantEmptiedDropUnknown(t *testing.T) {
	s := newScript("solo")
	s.hbs(cA, "A-1", 5, 0, 10)
	s.hbs(cA, "A-1", 7, 20, 30)
	s.join(cA, 30.004, 30.010, jg("A-1", 8, "A-1", "A-1"))
	s.sync(cA, 30.011, 30.012, "A-1", 8, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1)})
	s.hbs(cA, "A-1", 8, 33, 40)
	s.leave(cA, 41, 41.001, "A-1", "the consumer is being closed")
	awake, kept := emptiedAnHourLater(s, 41.2, 3)
	if g := kept.e.byID["solo"]; g.dormant != nil || g.next == nil || g.next.empty == nil {
		t.Fatal("the emptied group whose kept oldest generation has no time is asleep")
	}
	awake.Close(sec(7300))
	kept.Close(sec(7300))
	if a, b := asJSON(t, awake.Report()), asJSON(t, kept.Report()); a != b {
		t.Errorf("report never asleep\n%s\nwith the age kept\n%s", a, b)
	}
	if a, b := awake.e.Horizon(), kept.e.Horizon(); !a.Equal(b) || !a.Equal(sec(7300)) {
		t.Errorf("Horizon %v never asleep, %v with the age kept; want the close's %v", a, b, sec(7300))
	}
}

// emptiedAnHourLater feeds s's events, then a Metadata exchange an hour
// after at (in seconds), to two Lives keeping gens generations: one that
// keeps no age, whose groups never sleep, and one that keeps the default
// age, whose quiet groups do.
func emptiedAnHourLater(s *script, at float64, gens int) (awake, kept *Live) {
	tick := []decode.Event{{At: sec(at + 3600), RespondedAt: sec(at + 3600), Metadata: &decode.Metadata{}}}
	var lives [2]*Live
	for i, r := range []Retention{{Generations: gens}, {Generations: gens, MaxAge: DefaultRetention.MaxAge}} {
		lives[i] = NewLive(Config{}, r)
		lives[i].AddEvents(s.events())
		lives[i].AddEvents(tick)
	}
	return lives[0], lives[1]
}

// TestDormantEmptiedReturns checks what an emptied group asleep tells when
// its id comes back: its history ends with the empty generation, as awake,
// and the returning member's generation starts a new history. The test
// fails when wake leaves the dormant history without what Close makes.
func TestDormantEmptiedReturns(t *testing.T) {
	s := newScript("solo")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.004, 0.010, jg("A-1", 1, "A-1", "A-1"))
	s.sync(cA, 0.011, 0.012, "A-1", 1, tp("round_topic", 0, 1), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1)})
	s.leave(cA, 11, 11.001, "A-1", "the consumer is being closed")
	back := newScript("solo")
	back.join(cB, 5000, 5000.01, jg("B-1", 3, "B-1", "B-1"))
	var gens [2][][]int32
	awake, kept := emptiedAnHourLater(s, 11.2, 10)
	for i, l := range []*Live{awake, kept} {
		if asleep := l.e.byID["solo"].dormant != nil; asleep != (i == 1) {
			t.Fatalf("%s: dormant %v", []string{"no age kept", "the default age kept"}[i], asleep)
		}
		l.AddEvents(back.events())
		l.Close(sec(5001))
		for _, gr := range l.Report().Groups {
			var nums []int32
			for _, gen := range gr.Generations {
				nums = append(nums, gen.Generation)
			}
			gens[i] = append(gens[i], nums)
		}
	}
	if got, want := fmt.Sprint(gens[0]), "[[1 2 3]]"; got != want {
		t.Errorf("awake: generations %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(gens[1]), "[[1 2] [3]]"; got != want {
		t.Errorf("asleep: generations %s, want %s (the dormant history ends with the empty generation)", got, want)
	}
}

// parts decompresses z, a frame of n parts, into a new slice and returns
// them in it.
func (z zdormant) parts(n int) [][]byte { return z.partsIn(new([]byte), n) }
