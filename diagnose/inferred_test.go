package diagnose

import (
	"bytes"
	"slices"
	"strconv"
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

// withSoftware is s with c announcing the client software name and
// version (KIP-511) before anything else.
func withSoftware(s *script, c client, name, version string) *script {
	s.software(c, -1, name, version)
	return s
}

// pollLoop is A and B in generation 1; B stops fetching at 5 and leaves
// without a reason at 40, and its next member again at 80, each time
// joining again at once from rejoinFrom(the cycle), while A fetches and
// heartbeats throughout.
func pollLoop(rejoinFrom func(cycle int) client) *script {
	s := newScript("g")
	fetchA := client{"consumer-g-1", "10.0.0.1:4101"}
	fetchB := client{"consumer-g-2", "10.0.0.2:4102"}
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	for at := 1.0; at < 120; at++ {
		s.fetch(fetchA, at, "t", map[int32]int64{0: int64(at), 1: int64(at)})
		if at <= 5 || (at > 42 && at <= 45) {
			s.fetch(fetchB, at, "t", map[int32]int64{2: int64(at)})
		}
	}
	s.hbs(cA, "A-1", 1, 3, 40, 3)
	s.hbs(cB, "B-1", 1, 3, 40, 3)
	s.leave(cB, 40, 40.01, "B-1", "")
	s.round(40.9, 2, []mc{mA, {"B-2", rejoinFrom(1)}}, map[string][]int32{"A-1": {0, 1}, "B-2": {2}})
	s.hbs(cA, "A-1", 2, 43, 80, 3)
	s.hbs(rejoinFrom(1), "B-2", 2, 43, 80, 3)
	s.leave(rejoinFrom(1), 80, 80.01, "B-2", "")
	s.round(80.9, 3, []mc{mA, {"B-3", rejoinFrom(2)}}, map[string][]int32{"A-1": {0, 1}, "B-3": {2}})
	s.hbs(cA, "A-1", 3, 83, 120, 3)
	s.hbs(rejoinFrom(2), "B-3", 3, 83, 120, 3)
	return s
}

func TestInferredPollTimeout(t *testing.T) {
	restarted := client{"consumer-g-2", "10.0.0.2:4012"} // a new connection
	newConn := func(cycle int) client { return client{"consumer-g-2", "10.0.0.2:" + strconv.Itoa(4010+cycle)} }
	sameConn := func(int) client { return cB }
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
		// librdkafka fetches from a thread of its own until it leaves:
		// the rejoin from the same connection is the evidence.
		{"librdkafka_background_fetch", withSoftware(silentLeave(41, cB), cB, "confluent-kafka-python", "2.16.1-rdkafka-2.16.0"), []Kind{PollTimeoutEviction}},
		// Restarted, librdkafka is restarted too.
		{"librdkafka_restart", withSoftware(silentLeave(41, restarted), cB, "librdkafka", "2.16.0"), nil},
		// Two poll timeouts of one process, joining again over its
		// connection: no rollout.
		{"poll_loop_no_rollout", pollLoop(sameConn), []Kind{PollTimeoutEviction, PollTimeoutEviction}},
		// The same over new connections, without the fetch gap: two
		// restarts, a rollout.
		{"restarts_rollout", pollLoop(newConn), []Kind{RollingRestart}},
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
			for _, f := range fs {
				if f.Kind != PollTimeoutEviction {
					continue
				}
				background := f.Evidence["backgroundFetch"] == true
				if f.Evidence["inferred"] != true || (f.Evidence["pollGapMs"] == nil) != background {
					t.Errorf("evidence %v; want inferred, and the poll gap unless the client fetches in the background", f.Evidence)
				}
			}
			if len(fs) > 0 {
				var b bytes.Buffer
				if err := WriteJSON(&b, fs); err != nil {
					t.Fatal(err)
				}
				golden(t, c.name+".json", b.Bytes())
			}
		})
	}
}
