package timeline

import (
	"bytes"
	"slices"
	"testing"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestToldGroupsKeepTheClock: an engine told only some groups
// (Config.Groups) keeps no state of the others, but their events still
// move its clock. Here group a's only member stops heartbeating; only
// group b is heard from until the member rejoins, past its session
// timeout. Told a alone, the engine must still find the session expired
// before the rejoin, as when told both.
func TestToldGroupsKeepTheClock(t *testing.T) {
	c1, c2 := client{"c1", "10.0.0.1:5000"}, client{"c2", "10.0.0.2:5000"}
	a, b := newScript("a"), newScript("b")
	a.join(c1, 0, 0.1, jg("m1", 1, "m1", "m1"))
	a.sync(c1, 0.2, 0.3, "m1", 1, tp("t", 0, 1), map[string][]decode.TopicPartitions{"m1": tp("t", 0, 1)})
	a.hbs(c1, "m1", 1, 1, 7)
	a.join(c1, 40, 40.1, jg("m1", 2, "m1", "m1"))
	a.sync(c1, 40.2, 40.3, "m1", 2, tp("t", 0, 1), map[string][]decode.TopicPartitions{"m1": tp("t", 0, 1)})
	a.hbs(c1, "m1", 2, 41, 60)
	b.join(c2, 0, 0.1, jg("n1", 1, "n1", "n1"))
	b.sync(c2, 0.2, 0.3, "n1", 1, tp("u", 0), map[string][]decode.TopicPartitions{"n1": tp("u", 0)})
	b.hbs(c2, "n1", 1, 1, 60)
	evs := (&script{evs: slices.Concat(a.evs, b.evs)}).events()

	whole, wholeRep, _ := run(t, Config{}, evs, 60)
	var wantEntries []Entry
	for _, en := range whole {
		if en.Group == "a" {
			wantEntries = append(wantEntries, en)
		}
	}
	if kinds(wantEntries)[KindSessionExpired] != 1 {
		t.Fatalf("told both groups, a's entries:\n%s\nwant its session to expire once", entryLines(wantEntries))
	}
	got, gotRep, e := run(t, Config{Groups: []string{"a"}}, evs, 60)
	if g, w := entryLines(got), entryLines(wantEntries); g != w {
		t.Errorf("told a alone:\n%s\ntold both:\n%s", g, w)
	}
	want, _ := Query{Groups: []string{"a"}}.Filter(wholeRep)
	if g, w := reportJSON(t, gotRep), reportJSON(t, want); g != w {
		t.Errorf("a's report told alone:\n%s\ntold both:\n%s", g, w)
	}
	if len(e.groups) != 1 {
		t.Errorf("told a alone, the engine keeps %d groups; want 1", len(e.groups))
	}
}

// reportJSON is r as WriteJSON writes it.
func reportJSON(t *testing.T, r *Report) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
