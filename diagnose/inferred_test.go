package diagnose

import (
	"bytes"
	"slices"
	"testing"
)

// Poll timeouts inferred from the wire when the client sends no reason
// (kafka-python, LeaveGroup v3 and before): a LeaveGroup without a
// reason, after no Fetch for about the rebalance timeout (30 s here),
// followed by a JoinGroup from the same connection.

// silentLeave is A and B in generation 1, both fetching from their fetch
// connections; B's fetches stop at stopFetch, it leaves without a reason
// at 41 and joins again at 42 from rejoinFrom as B-2, with A; the group
// then settles in generation 2.
func silentLeave(stopFetch float64, rejoinFrom client) *script {
	s := newScript("g")
	fetchA := client{"consumer-g-1", "10.0.0.1:4101"}
	fetchB := client{"consumer-g-2", "10.0.0.2:4102"}
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	for at := 1.0; at < 45; at++ {
		s.fetch(fetchA, at, "t", map[int32]int64{0: int64(at), 1: int64(at)})
		if at <= stopFetch {
			s.fetch(fetchB, at, "t", map[int32]int64{2: int64(at)})
		}
	}
	s.hbs(cA, "A-1", 1, 3, 41, 3)
	s.hbs(cB, "B-1", 1, 3, 41, 3)
	s.leave(cB, 41, 41.01, "B-1", "")
	s.hb(cA, 41.5, 41.501, "A-1", 1, 27)
	s.round(41.9, 2, []mc{mA, {"B-2", rejoinFrom}}, map[string][]int32{"A-1": {0, 1}, "B-2": {2}})
	s.hbs(cA, "A-1", 2, 45, 60, 3)
	s.hbs(rejoinFrom, "B-2", 2, 45, 60, 3)
	return s
}

func TestInferredPollTimeout(t *testing.T) {
	restarted := client{"consumer-g-2", "10.0.0.2:4012"} // a new connection
	cases := []struct {
		name   string
		script *script
		want   []Kind
	}{
		// No Fetch since 10 s, left at 41: a gap of 31 s ≥ 30 s less 10 %.
		{"poll_timeout_inferred", silentLeave(10, cB), []Kind{PollTimeoutEviction}},
		// 28 s without a Fetch is within the tolerance (27 s) too.
		{"poll_timeout_inferred_tolerance", silentLeave(13, cB), []Kind{PollTimeoutEviction}},
		// 26 s is not about the rebalance timeout.
		{"silent_leave_short_gap", silentLeave(15, cB), nil},
		// Fetching until it left: it left for its own reasons.
		{"silent_leave_fetching", silentLeave(41, cB), nil},
		// A new connection with a new member id: a restart.
		{"silent_leave_restart", silentLeave(10, restarted), nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := diagnoseScript(t, Config{}, c.script, 60)
			var got []Kind
			for _, f := range fs {
				got = append(got, f.Kind)
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("got kinds %v; want %v", got, c.want)
			}
			if len(fs) == 1 {
				if fs[0].Evidence["inferred"] != true || fs[0].Evidence["pollGapMs"] == nil {
					t.Errorf("evidence %v; want inferred and the poll gap", fs[0].Evidence)
				}
				var b bytes.Buffer
				if err := WriteJSON(&b, fs); err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+".json", b.Bytes())
			}
		})
	}
}
