package timeline

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestLookupMemo checks that Engine.lookup, through the connection memo,
// always returns what the maps hold, whatever the connections carry.
func TestLookupMemo(t *testing.T) {
	long := strings.Repeat("m", memoKeyLen) // too long to be held in the memo
	hb := func(conn uint64, group, member string) decode.Event {
		return decode.Event{At: base, RespondedAt: base, ConnID: conn, APIKey: 12, Group: group,
			Heartbeat: &decode.Heartbeat{MemberID: member}}
	}
	commit := func(conn uint64, group, member string) decode.Event {
		return decode.Event{At: base, RespondedAt: base, ConnID: conn, APIKey: 8, Group: group,
			OffsetCommit: &decode.OffsetCommit{MemberID: member}}
	}
	tests := []struct {
		name   string
		events []decode.Event
	}{
		{"same member on its connection", []decode.Event{hb(1, "g", "a"), hb(1, "g", "a"), commit(1, "g", "a")}},
		{"connection changes member", []decode.Event{hb(1, "g", "a"), hb(1, "g", "b"), hb(1, "g", "a")}},
		{"connection changes group", []decode.Event{hb(1, "g", "a"), hb(1, "h", "a"), hb(1, "g", "a")}},
		{"ids split differently", []decode.Event{hb(1, "ga", "b"), hb(1, "g", "ab"), hb(1, "ga", "b")}},
		{"connections in one slot", []decode.Event{hb(1, "g", "a"), hb(1+memoSlots, "g", "b"), hb(1, "g", "a")}},
		{"long member id", []decode.Event{hb(1, "g", long), hb(1, "g", long), hb(1, "g", long+"x"), hb(1, "g", long)}},
		{"long member id, group changes", []decode.Event{hb(1, "g", long), hb(1, "h", long), hb(1, "g", long)}},
		{"unknown member", []decode.Event{hb(1, "g", ""), commit(1, "g", ""), hb(1, "g", "a")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := New(Config{Streaming: true})
			check := func(i int, ev *decode.Event) {
				t.Helper()
				g, lm := e.lookup(ev)
				if g != e.byID[ev.Group] {
					t.Fatalf("event %d: group %q: lookup gave %p, the map holds %p", i, ev.Group, g, e.byID[ev.Group])
				}
				id := eventMemberID(ev)
				if want := g.live[id]; id != "" && lm != want {
					t.Fatalf("event %d: member %q: lookup gave %p, the map holds %p", i, id, lm, want)
				}
			}
			for i := range tt.events {
				ev := &tt.events[i]
				check(i, ev) // the previous event's member may be in the memo
				e.add(ev)    // registers the member
				check(i, ev) // now in the memo
			}
		})
	}
}

// TestLookupMemoForgotten checks that a member the registry forgot and
// that came back is not answered from the memo with its old entry.
func TestLookupMemoForgotten(t *testing.T) {
	e := New(Config{Streaming: true})
	ev := decode.Event{At: base, RespondedAt: base, ConnID: 7, APIKey: 12, Group: "g",
		Heartbeat: &decode.Heartbeat{MemberID: "a", Generation: 1}}
	e.add(&ev)
	g, old := e.lookup(&ev)
	if old == nil || g.live["a"] != old {
		t.Fatalf("lookup after a heartbeat: %p, want the registry's %p", old, g.live["a"])
	}
	// Generation 2 without a; an hour later the registry forgets a.
	later := base.Add(forgetAfter + time.Second)
	e.add(&decode.Event{At: later, RespondedAt: later, ConnID: 8, APIKey: 12, Group: "g",
		Heartbeat: &decode.Heartbeat{MemberID: "b", Generation: 2}})
	g.prune(later)
	if g.live["a"] != nil {
		t.Fatal("the registry still holds a after prune")
	}
	if _, lm := e.lookup(&ev); lm != nil {
		t.Fatalf("lookup of a forgotten member gave %p, want nil", lm)
	}
	e.add(&ev)
	if _, lm := e.lookup(&ev); lm == old || lm != g.live["a"] {
		t.Fatalf("lookup after the member came back gave %p (old %p), want the registry's %p", lm, old, g.live["a"])
	}
}

// TestLookupMemoRandom drives lookup with random heartbeats and commits
// of a few groups and members over a few connections, some sharing a
// memo slot, with the registry pruned now and then, and checks every
// answer against the maps.
func TestLookupMemoRandom(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	groups := []string{"g", "ga", "orders"}
	members := []string{"a", "ab", "b", strings.Repeat("m", memoKeyLen-1), strings.Repeat("m", memoKeyLen+5)}
	conns := []uint64{1, 2, 1 + memoSlots, 3 + 2*memoSlots}
	e := New(Config{Streaming: true})
	at := base
	for i := range 20000 {
		at = at.Add(time.Duration(rng.IntN(2000)) * time.Millisecond)
		ev := decode.Event{At: at, RespondedAt: at, ConnID: conns[rng.IntN(len(conns))], Group: groups[rng.IntN(len(groups))]}
		id := members[rng.IntN(len(members))]
		gen := int32(rng.IntN(3))
		if rng.IntN(2) == 0 {
			ev.APIKey, ev.Heartbeat = 12, &decode.Heartbeat{MemberID: id, Generation: gen}
		} else {
			ev.APIKey, ev.OffsetCommit = 8, &decode.OffsetCommit{MemberID: id, Generation: gen}
		}
		g, lm := e.lookup(&ev)
		if g != e.byID[ev.Group] || lm != g.live[id] {
			t.Fatalf("event %d (conn %d, group %q, member %q): lookup gave %p %p, the maps hold %p %p",
				i, ev.ConnID, ev.Group, id, g, lm, e.byID[ev.Group], g.live[id])
		}
		e.add(&ev)
		if rng.IntN(500) == 0 {
			g.prune(at.Add(forgetAfter * time.Duration(rng.IntN(2))))
		}
	}
}
