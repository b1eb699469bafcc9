package timeline

import (
	"slices"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// rebalances is stormScript with n rebalances, 40 s apart from 20 s on:
// generations 1 to n+1.
func rebalances(group string, n int) *script {
	s := twoMembers(group)
	gen, from := int32(1), 10.0
	for i := range n {
		t := 20 + 40*float64(i)
		s.hbs(cA, "A-1", gen, from, t)
		s.hbs(cB, "B-1", gen, from, t-1)
		from = t + 1
		gen++
		s.hb(cA, t, t+0.001, "A-1", gen-1, errRebalanceInProgress)
		s.join(cA, t+0.1, t+0.3, jg("A-1", gen, "A-1", "A-1", "B-1"))
		s.join(cB, t-0.5, t+0.3, jg("B-1", gen, "A-1"))
		plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)}
		s.sync(cA, t+0.31, t+0.32, "A-1", gen, plan["A-1"], plan)
		s.sync(cB, t+0.31, t+0.33, "B-1", gen, plan["B-1"], nil)
	}
	return s
}

// gens is the generation numbers a group's report holds, nil when the
// group is not in it.
func gens(r *Report, group string) []int32 {
	for _, g := range r.Groups {
		if g.Group == group {
			var ns []int32
			for _, gen := range g.Generations {
				ns = append(ns, gen.Generation)
			}
			if ns == nil {
				ns = []int32{}
			}
			return ns
		}
	}
	return nil
}

// TestRetain: Retain keeps the last generations, drops those that ended
// before the age limit but the last four, forgets groups quiet for the age
// limit, and moves the horizon past what it dropped.
func TestRetain(t *testing.T) {
	evs := rebalances("busy", 10).events() // generations 1-11, the last at 380 s
	evs = append(twoMembers("quiet").events(), evs...)
	slices.SortStableFunc(evs, func(a, b decode.Event) int { return a.RespondedAt.Compare(b.RespondedAt) })
	tests := []struct {
		name        string
		retain      Retention
		busy, quiet []int32
		horizon     time.Time // zero: nothing dropped
	}{
		{"no limit", Retention{}, []int32{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, []int32{1}, time.Time{}},
		// Generation n+1's rebalance starts at 19.5+40(n-1) s.
		{"last five", Retention{Generations: 5}, []int32{7, 8, 9, 10, 11}, []int32{1}, sec(219.5)},
		// At 380.33 s, an age of 150 s keeps what ended after 230.33 s:
		// gen 7 (ended at 259.5 s) on; the quiet group is forgotten.
		{"age", Retention{MaxAge: 150 * time.Second}, []int32{7, 8, 9, 10, 11}, nil, sec(219.5)},
		// An age of 10 s would keep only gen 11: the last four stay.
		{"age keeps four", Retention{MaxAge: 10 * time.Second}, []int32{8, 9, 10, 11}, nil, sec(259.5)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{MaxGenerations: tt.retain.Generations}) // as NewLive makes it
			for _, ev := range evs {
				e.Add(ev)
			}
			e.Retain(tt.retain)
			r := e.Report()
			if got := gens(r, "busy"); !slices.Equal(got, tt.busy) {
				t.Errorf("busy generations %v; want %v", got, tt.busy)
			}
			if got := gens(r, "quiet"); !slices.Equal(got, tt.quiet) {
				t.Errorf("quiet generations %v; want %v", got, tt.quiet)
			}
			if h := e.Horizon(); !h.Equal(tt.horizon) {
				t.Errorf("horizon %v; want %v", h, tt.horizon)
			}
		})
	}
}

// TestRetainForgottenGroupStartsAgain: a group forgotten by Retain that
// comes back is a new group.
func TestRetainForgottenGroupStartsAgain(t *testing.T) {
	e := New(Config{})
	for _, ev := range twoMembers("g").events() {
		e.Add(ev)
	}
	for _, ev := range twoMembers("other").events() {
		ev.At, ev.RespondedAt = ev.At.Add(time.Hour), ev.RespondedAt.Add(time.Hour)
		e.Add(ev)
	}
	e.Retain(Retention{MaxAge: time.Minute})
	if got := gens(e.Report(), "g"); got != nil {
		t.Fatalf("g kept with generations %v; want it forgotten", got)
	}
	for _, ev := range twoMembers("g").events() {
		ev.At, ev.RespondedAt = ev.At.Add(2*time.Hour), ev.RespondedAt.Add(2*time.Hour)
		e.Add(ev)
	}
	if got := gens(e.Report(), "g"); !slices.Equal(got, []int32{1}) {
		t.Errorf("g generations %v; want [1] again", got)
	}
}

func TestParseRetention(t *testing.T) {
	tests := []struct {
		in      string
		want    Retention
		wantErr bool
	}{
		{"20,24h", Retention{Generations: 20, MaxAge: 24 * time.Hour}, false},
		{"0,0", Retention{}, false},
		{"100, 90m", Retention{Generations: 100, MaxAge: 90 * time.Minute}, false},
		{"20", Retention{}, true},
		{"x,24h", Retention{}, true},
		{"20,forever", Retention{}, true},
		{"-1,1h", Retention{}, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseRetention(tt.in)
			if (err != nil) != tt.wantErr || got != tt.want {
				t.Fatalf("got %+v, %v; want %+v, error %v", got, err, tt.want, tt.wantErr)
			}
			if err == nil {
				back, _ := ParseRetention(got.String())
				if back != got {
					t.Errorf("String %q reads back as %+v", got.String(), back)
				}
			}
		})
	}
	if err := (Retention{Generations: 3}).Validate(); err == nil {
		t.Error("3 generations validated; want an error (fewer than the 4 late exchanges need)")
	}
	if err := DefaultRetention.Validate(); err != nil {
		t.Errorf("DefaultRetention: %v", err)
	}
}

// TestRetainForgetsTopics: Retain forgets the topics no Metadata answer
// named for the age, and their ids, and keeps those still named, however
// often answers repeat (each answer notes its topics as seen).
func TestRetainForgetsTopics(t *testing.T) {
	oldID, liveID := decode.TopicID{1}, decode.TopicID{2}
	md := func(at float64, topics ...decode.MetadataTopic) decode.Event {
		return decode.Event{At: sec(at), RespondedAt: sec(at), Metadata: &decode.Metadata{Topics: topics}}
	}
	old := decode.MetadataTopic{Name: "old", TopicID: oldID, Partitions: 3}
	live := decode.MetadataTopic{Name: "live", TopicID: liveID, Partitions: 6}
	e := New(Config{})
	e.Add(md(0, old, live))
	for at := 60.0; at <= 7200; at += 60 { // answers every minute name live alone
		e.Add(md(at, live))
	}
	e.Retain(Retention{MaxAge: time.Hour})
	if n, ok := e.topics.name(oldID); ok || e.topics.count("old") != 0 {
		t.Errorf("old, last named 2 h ago: still kept (name %q, %d partitions); want it forgotten", n, e.topics.count("old"))
	}
	if n, ok := e.topics.name(liveID); !ok || n != "live" || e.topics.count("live") != 6 {
		t.Errorf("live, named a minute ago: name %q (%v), %d partitions; want live with 6", n, ok, e.topics.count("live"))
	}
	e.Add(md(7260, old)) // named again: known again
	if n, ok := e.topics.name(oldID); !ok || n != "old" {
		t.Errorf("old named again: name %q (%v); want old", n, ok)
	}
}

// TestClipped checks that clipped keeps a list's elements in an array of
// its length, and leaves nil and full lists as they are.
func TestClipped(t *testing.T) {
	grown := append(make([]departure, 0, 8), departure{member: "a"}, departure{member: "b"})
	for _, tc := range []struct {
		name string
		in   []departure
	}{
		{"nil", nil},
		{"empty with room", make([]departure, 0, 4)},
		{"grown", grown},
		{"full", []departure{{member: "c"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := clipped(tc.in)
			if len(out) != len(tc.in) || cap(out) != len(out) || (out == nil) != (tc.in == nil) {
				t.Fatalf("clipped: len %d cap %d nil %v; want len %d cap %d nil %v", len(out), cap(out), out == nil, len(tc.in), len(tc.in), tc.in == nil)
			}
			for i := range out {
				if out[i].member != tc.in[i].member {
					t.Errorf("element %d: %q; want %q", i, out[i].member, tc.in[i].member)
				}
			}
		})
	}
}
