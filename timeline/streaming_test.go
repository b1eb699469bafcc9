package timeline

import (
	"fmt"
	"strings"
	"testing"
)

// TestRetainingGivesTheSameEntries runs the synthetic scripts through an
// Engine that keeps everything and through a Retaining engine with
// StreamRetention, as replay uses for text and jsonl, fed one event at a
// time: the entries are the same, and the Retaining engine keeps at most
// StreamingGenerations generations per group, no storm that ended before
// them, and of a storm under way its latest rebalances.
func TestRetainingGivesTheSameEntries(t *testing.T) {
	for _, c := range []struct {
		name string
		s    *script
	}{
		{"seed", seedScript()},
		{"storm", stormScript()},
		{"cooperative", cooperativeScript()},
		{"kip848", kip848Script()},
		{"partial", partialScript()},
		{"rebalances", rebalances("busy", 30)},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := c.s.events()
			want, _, _ := run(t, Config{}, evs, 2000)
			var got []Entry
			e := NewRetaining(Config{OnEntry: func(en Entry) { got = append(got, en) }}, StreamRetention)
			for i := range evs {
				e.AddEvents(evs[i : i+1])
			}
			e.Close(sec(2000))
			if w, g := entryLines(want), entryLines(got); g != w {
				t.Fatalf("retaining engine's entries differ:\n%s\nwant\n%s", firstLineDiff(g, w), w)
			}
			e.Retain(StreamRetention) // as the next minute of events would
			for _, g := range e.groups {
				if len(g.gens) > StreamingGenerations {
					t.Errorf("group %s keeps %d generations; want at most %d", g.id, len(g.gens), StreamingGenerations)
				}
				first := genTime(g.gens[0])
				for _, st := range g.storm.storms {
					if st.ended && st.endedAt.Before(first) {
						t.Errorf("group %s keeps a storm that ended at %v, before its first generation kept (%v)", g.id, st.endedAt, first)
					}
					if len(st.marks) > StreamingGenerations && !st.ended {
						t.Errorf("group %s keeps %d rebalances of its storm; want the latest %d", g.id, len(st.marks), StreamingGenerations)
					}
				}
			}
		})
	}
}

// firstLineDiff returns the first line where got and want differ.
func firstLineDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d: got  %s\n        want %s", i+1, a, b)
		}
	}
	return ""
}
