package timeline

import (
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestCommitQueue checks that the queue keeps the commits pushed and not
// dropped, oldest first, and that after a burst its array comes back
// within three times the live commits (and 12 more).
func TestCommitQueue(t *testing.T) {
	tests := []struct {
		name   string
		burst  int // commits live at once, then dropped down to steady
		steady int
	}{
		{"steady", 8, 8},
		{"burst", 400, 8},
		{"tiny", 50, 1},
		{"empty", 30, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var q commitQueue
			next, oldest := int32(0), int32(0)
			push := func() {
				q.push(commit{generation: next, parts: []commitPart{{}}})
				next++
			}
			drop := func() {
				q.dropOldest()
				oldest++
			}
			for range tt.burst {
				push()
			}
			for len(q.live()) > tt.steady {
				drop()
			}
			// A steady rate: one pushed, one dropped, long enough to fill
			// the array twice over.
			for range 4*cap(q.buf) + 10 {
				push()
				if len(q.live()) > tt.steady {
					drop()
				}
			}
			live := q.live()
			if len(live) != tt.steady {
				t.Fatalf("%d live, want %d", len(live), tt.steady)
			}
			for i, c := range live {
				if c.generation != oldest+int32(i) {
					t.Fatalf("live[%d] is commit %d, want %d", i, c.generation, oldest+int32(i))
				}
			}
			for i, c := range q.buf[:q.start] {
				if c.generation != 0 || c.parts != nil {
					t.Fatalf("dropped commit %d at %d not cleared", c.generation, i)
				}
			}
			if c := cap(q.buf); c > 3*tt.steady+12 {
				t.Errorf("array of %d for %d live commits, want at most %d", c, tt.steady, 3*tt.steady+12)
			}
		})
	}
}

// TestRememberMembersCommits checks that a group remembers a member's
// commit made outside a rebalance, and not a simple commit (no member, or
// generation -1), which attachRecent never ties to a rebalance.
func TestRememberMembersCommits(t *testing.T) {
	for _, c := range []struct {
		name       string
		member     string
		generation int32
		want       int
	}{
		{"member", "m", 3, 1},
		{"no member", "", 3, 0},
		{"no generation", "m", -1, 0},
		{"simple", "", -1, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := New(Config{})
			g := e.group("g")
			ev := &decode.Event{At: base, RespondedAt: base.Add(time.Millisecond), Group: "g",
				OffsetCommit: &decode.OffsetCommit{MemberID: c.member, Generation: c.generation,
					Topics: []decode.CommitTopic{{Topic: "t", Partitions: []decode.CommitPartition{{Partition: 0, Offset: 5}}}}}}
			e.now = ev.At
			g.offsetCommit(ev, nil)
			if got := len(g.recent.live()); got != c.want {
				t.Errorf("%d commits remembered, want %d", got, c.want)
			}
		})
	}
}
