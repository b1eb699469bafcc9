package timeline

import (
	"fmt"
	"strings"
	"testing"
)

// TestStreamingGivesTheSameEntries runs the synthetic scripts with and
// without Config.Streaming: the entries are the same, and a streaming
// engine keeps at most StreamingGenerations generations per group, no
// ended storm, and of a storm under way only the rebalances that started
// it.
func TestStreamingGivesTheSameEntries(t *testing.T) {
	for _, c := range []struct {
		name string
		s    *script
	}{
		{"seed", seedScript()},
		{"storm", stormScript()},
		{"cooperative", cooperativeScript()},
		{"kip848", kip848Script()},
		{"partial", partialScript()},
	} {
		t.Run(c.name, func(t *testing.T) {
			evs := c.s.events()
			want, _, _ := run(t, Config{}, evs, 900)
			got, rep, e := run(t, Config{Streaming: true}, evs, 900)
			if w, g := entryLines(want), entryLines(got); g != w {
				t.Fatalf("streaming entries differ:\n%s\nwant\n%s", firstLineDiff(g, w), w)
			}
			for _, g := range e.groups {
				if len(g.gens) > StreamingGenerations {
					t.Errorf("group %s keeps %d generations; want at most %d", g.id, len(g.gens), StreamingGenerations)
				}
				for _, st := range g.storm.storms {
					if st.ended {
						t.Errorf("group %s keeps an ended storm", g.id)
					}
					if len(st.marks) > e.cfg.StormRebalances {
						t.Errorf("group %s keeps %d rebalances of its storm; want those that started it (%d)", g.id, len(st.marks), e.cfg.StormRebalances)
					}
				}
			}
			if rep == nil {
				t.Fatal("no report")
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
