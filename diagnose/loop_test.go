package diagnose

import (
	"testing"

	"github.com/kproxy-dev/kproxy/timeline"
)

// TestLoopCountsCooperativeRoundsOnce: a storm of three rebalances of which
// one is a cooperative follow-up (a member joined a cooperative group,
// another left later) or two are growth (a group formed one member at a
// time, then lost one) is no loop; three of their own cause are.
func TestLoopCountsCooperativeRoundsOnce(t *testing.T) {
	cases := []struct {
		name     string
		triggers map[string]int
		growth   int
		want     int
	}{
		{"join in two rounds, then a leave", map[string]int{"member_joined": 1, "cooperative_follow_up": 1, "member_left": 1}, 0, 0},
		{"three joins", map[string]int{"member_joined": 3}, 0, 1},
		{"three joins and their follow-ups", map[string]int{"member_joined": 3, "cooperative_follow_up": 3}, 0, 1},
		{"two members join a forming group, one times out", map[string]int{"member_joined": 2, "session_timeout": 1}, 2, 0},
		{"a forming group, then three restarts", map[string]int{"member_joined": 5}, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			n := 0
			for _, v := range c.triggers {
				n += v
			}
			gr := &timeline.GroupView{Group: "g", Storms: []timeline.StormView{{From: sec(0), To: sec(60),
				Rebalances: n, Triggers: c.triggers, Growth: c.growth, Members: []string{}}}}
			e := New(Config{}, timeline.Config{})
			if got := len(e.loops(e.group("g"), gr)); got != c.want {
				t.Errorf("got %d rebalance_loop findings; want %d", got, c.want)
			}
		})
	}
}
