package diagnose

import (
	"bytes"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Crafted event streams, one per finding kind or family: each is checked
// against the exact kinds it must produce (and nothing else) and against
// a JSON golden under testdata/.

var (
	cA = client{"consumer-g-1", "10.0.0.1:4001"}
	cB = client{"consumer-g-2", "10.0.0.2:4002"}
	cC = client{"consumer-g-3", "10.0.0.3:4003"}
)

// mc is a member id and its client.
type mc struct {
	id string
	c  client
}

// round is a rebalance into gen completed by every member in ms, whose
// JoinGroups arrive at at+0.1 and are answered at at+0.5, with the first
// member leading; plan is each member's partitions of topic t.
func (s *script) round(at float64, gen int32, ms []mc, plan map[string][]int32) {
	ids := make([]string, 0, len(ms))
	for _, m := range ms {
		ids = append(ids, m.id)
	}
	full := map[string][]decode.TopicPartitions{}
	for _, id := range ids {
		full[id] = parts("t", plan[id]...)
	}
	for i, m := range ms {
		j := s.jg(m.id, gen, ids[0])
		if i == 0 {
			j = s.jg(m.id, gen, ids[0], ids...)
		}
		s.join(m.c, at+0.1, at+0.5, j)
	}
	for i, m := range ms {
		var p map[string][]decode.TopicPartitions
		if i == 0 {
			p = full
		}
		s.sync(m.c, at+0.6, at+0.7, m.id, gen, full[m.id], p)
	}
}

var (
	mA = mc{"A-1", cA}
	mB = mc{"B-1", cB}
	mC = mc{"C-1", cC}
)

func healthy() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	s.hbs(cA, "A-1", 1, 3, 120, 3)
	s.hbs(cB, "B-1", 1, 3, 120, 3)
	s.commit(cA, 119, 119.01, "A-1", 1, "t", map[int32]int64{0: 10, 1: 12}, nil)
	s.commit(cB, 119, 119.01, "B-1", 1, "t", map[int32]int64{2: 9}, nil)
	s.leave(cA, 120, 120.01, "A-1", "the consumer is being closed")
	s.hb(cB, 120.5, 120.501, "B-1", 1, 27)
	s.leave(cB, 120.6, 120.61, "B-1", "the consumer is being closed")
	return s
}

func pollLeft() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	s.hbs(cA, "A-1", 1, 3, 20, 3)
	s.hbs(cB, "B-1", 1, 3, 20, 3)
	s.leave(cB, 20, 20.01, "B-1", "consumer poll timeout has expired.")
	s.hb(cA, 21, 21.001, "A-1", 1, 27)
	s.round(21, 2, []mc{mA}, map[string][]int32{"A-1": {0, 1, 2}})
	s.hbs(cA, "A-1", 2, 24, 40, 3)
	return s
}

func pollDeadline() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	s.hbs(cA, "A-1", 1, 3, 21, 3)
	s.hbs(cB, "B-1", 1, 3, 20, 3)
	// C joins at 20; A rejoins at once; B keeps heartbeating, answered
	// REBALANCE_IN_PROGRESS, and never rejoins: the coordinator ends the
	// join phase at the rebalance timeout (30 s) without it.
	s.hb(cA, 21, 21.001, "A-1", 1, 27)
	s.join(cC, 20, 51, s.jg("C-1", 2, "A-1"))
	s.join(cA, 21.2, 51, s.jg("A-1", 2, "A-1", "A-1", "C-1"))
	s.hbs(cB, "B-1", 1, 23, 51, 3)
	for i := range s.items {
		if ev := s.items[i].ev; ev != nil && ev.Heartbeat != nil && ev.Heartbeat.MemberID == "B-1" && ev.At.After(sec(21)) {
			ev.Heartbeat.ErrorCode = 27
		}
	}
	plan := map[string][]decode.TopicPartitions{"A-1": parts("t", 0, 1), "C-1": parts("t", 2)}
	s.sync(cA, 51.1, 51.2, "A-1", 2, plan["A-1"], plan)
	s.sync(cC, 51.1, 51.2, "C-1", 2, plan["C-1"], nil)
	s.hb(cB, 52, 52.001, "B-1", 1, 25)
	s.hbs(cA, "A-1", 2, 54, 70, 3)
	s.hbs(cC, "C-1", 2, 54, 70, 3)
	return s
}

func sessionTimeout() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	s.hbs(cA, "A-1", 1, 3, 31, 3)
	s.hbs(cB, "B-1", 1, 3, 20, 3) // the last at 18
	s.hb(cA, 31, 31.001, "A-1", 1, 27)
	s.round(31, 2, []mc{mA}, map[string][]int32{"A-1": {0, 1, 2}})
	s.hbs(cA, "A-1", 2, 34, 50, 3)
	return s
}

func rollingRestart() *script {
	s := newScript("g")
	all := []mc{mA, mB, mC}
	s.software(cA, 0, "apache-kafka-java", "3.7.0")
	s.round(0, 1, all, map[string][]int32{"A-1": {0, 1}, "B-1": {2, 3}, "C-1": {4, 5}})
	gen := int32(1)
	live := slices.Clone(all)
	at := 10.0
	for i := range all {
		old := all[i]
		for _, m := range live {
			s.hbs(m.c, m.id, gen, at-7, at, 3)
		}
		// old stops: LeaveGroup, the others rejoin without it.
		s.leave(old.c, at, at+0.01, old.id, "the consumer is being closed")
		rest := slices.DeleteFunc(slices.Clone(live), func(m mc) bool { return m.id == old.id })
		for _, m := range rest {
			s.hb(m.c, at+0.05, at+0.051, m.id, gen, 27)
		}
		gen++
		s.round(at, gen, rest, restPlan(rest))
		// its replacement starts 8 s later under a new member id.
		back := mc{old.id[:1] + "-2", client{old.c.id, old.c.addr[:len(old.c.addr)-4] + "5001"}}
		s.software(back.c, at+8, "apache-kafka-java", "3.7.0")
		for _, m := range rest {
			s.hbs(m.c, m.id, gen, at+3, at+8, 3)
		}
		live = append(rest, back)
		jb := s.jg(back.id, gen+1, rest[0].id)
		jb.MemberID = "" // a new process: the coordinator gives it its id
		s.join(back.c, at+8, at+8.5, jb)
		for _, m := range rest {
			s.hb(m.c, at+8.05, at+8.051, m.id, gen, 27)
		}
		gen++
		s.roundJoined(at+8, gen, live, restPlan(live))
		at += 20
	}
	for _, m := range live {
		s.hbs(m.c, m.id, gen, at-7, at+20, 3)
	}
	return s
}

// roundJoined is round for members whose last one's JoinGroup is already
// in the script.
func (s *script) roundJoined(at float64, gen int32, ms []mc, plan map[string][]int32) {
	n := len(ms) - 1
	s.round(at, gen, ms[:n], plan)
	// the leader's JoinGroup must list the newcomer too
	for i := len(s.items) - 1; i >= 0; i-- {
		if ev := s.items[i].ev; ev != nil && ev.JoinGroup != nil && len(ev.JoinGroup.Members) > 0 && ev.JoinGroup.Generation == gen {
			ev.JoinGroup.Members = append(ev.JoinGroup.Members, decode.JoinMember{MemberID: ms[n].id, Subscription: sub("t")})
			break
		}
	}
	s.sync(ms[n].c, at+0.6, at+0.7, ms[n].id, gen, parts("t", plan[ms[n].id]...), nil)
}

// restPlan spreads topic t's six partitions over ms in order.
func restPlan(ms []mc) map[string][]int32 {
	p := map[string][]int32{}
	for i := int32(0); i < 6; i++ {
		id := ms[int(i)%len(ms)].id
		p[id] = append(p[id], i)
	}
	return p
}

func staticDuplicate() *script {
	s := newScript("g")
	a1 := mc{"A-1", cA}
	s.round(0, 1, []mc{a1, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	for i := range s.items {
		if ev := s.items[i].ev; ev != nil && ev.JoinGroup != nil && ev.JoinGroup.MemberID == "A-1" {
			ev.JoinGroup.InstanceID = "i-1"
		}
	}
	s.hbs(cA, "A-1", 1, 3, 20, 3)
	s.hbs(cB, "B-1", 1, 3, 40, 3)
	// A second process with instance i-1 joins from another host: the
	// coordinator replaces A-1 by A-2 without a rebalance.
	other := client{"consumer-g-1", "10.0.0.9:6001"}
	rejoin := func(c client, at float64, id string) {
		j := s.jg("", 1, "B-1")
		j.InstanceID, j.AssignedMemberID = "i-1", id
		s.join(c, at, at+0.01, j)
		s.sync(c, at+0.02, at+0.03, id, 1, parts("t", 0, 1), nil)
	}
	rejoin(other, 20, "A-2")
	s.hb(cA, 21, 21.001, "A-1", 1, 82)
	// The first process, still running, takes the instance back.
	rejoin(cA, 25, "A-3")
	s.hb(other, 26, 26.001, "A-2", 1, 82)
	s.hbs(cA, "A-3", 1, 28, 40, 3)
	return s
}

// staticRestart: both members are static (session 10 s); each process is
// restarted in turn, from another address, and is back within 3 s under
// its instance id: the coordinator swaps the member ids without a
// rebalance. A healthy rollout: nothing to report.
func staticRestart() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1}, "B-1": {2}})
	for i := range s.items {
		if ev := s.items[i].ev; ev != nil && ev.JoinGroup != nil {
			ev.JoinGroup.InstanceID = "i-" + ev.JoinGroup.MemberID[:1]
		}
	}
	rejoin := func(c client, at float64, instance, id string, owned []decode.TopicPartitions) {
		j := s.jg("", 1, "A-1")
		j.InstanceID, j.AssignedMemberID = instance, id
		s.join(c, at, at+0.01, j)
		s.sync(c, at+0.02, at+0.03, id, 1, owned, nil)
	}
	s.hbs(cA, "A-1", 1, 3, 20, 3)
	s.hbs(cB, "B-1", 1, 3, 40, 3)
	rejoin(client{cA.id, "10.0.0.1:5001"}, 21, "i-A", "A-2", parts("t", 0, 1))
	s.hbs(client{cA.id, "10.0.0.1:5001"}, "A-2", 1, 24, 60, 3)
	// B-1's last heartbeat is at 39
	rejoin(client{cB.id, "10.0.0.2:5002"}, 41, "i-B", "B-2", parts("t", 2))
	s.hbs(client{cB.id, "10.0.0.2:5002"}, "B-2", 1, 44, 60, 3)
	return s
}

func smells() *script {
	s := newScript("g")
	s.session, s.rebalance = 12*time.Second, 10*time.Second
	ja := s.jg("A-1", 1, "A-1", "A-1", "B-1")
	ja.Members[1].Subscription = sub("t", "u")
	jb := s.jg("B-1", 1, "A-1")
	jb.Protocols = []decode.JoinProtocol{{Name: "cooperative-sticky", Subscription: sub("t", "u")}, {Name: "range", Subscription: sub("t", "u")}}
	s.join(cA, 0.1, 0.5, ja)
	s.join(cB, 0.1, 0.5, jb)
	plan := map[string][]decode.TopicPartitions{"A-1": parts("t", 0), "B-1": {{Topic: "t", Partitions: []int32{1}}, {Topic: "u", Partitions: []int32{0}}}}
	s.sync(cA, 0.6, 0.7, "A-1", 1, plan["A-1"], plan)
	s.sync(cB, 0.6, 0.7, "B-1", 1, plan["B-1"], nil)
	s.hbs(cA, "A-1", 1, 6, 60, 6)
	s.hbs(cB, "B-1", 1, 6, 60, 6)
	return s
}

func commits() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1, 2}, "B-1": {3, 4, 5}})
	s.hbs(cA, "A-1", 1, 3, 20, 3)
	s.hbs(cB, "B-1", 1, 3, 20, 3)
	s.commit(cA, 5, 5.01, "A-1", 1, "t", map[int32]int64{0: 100}, nil)
	s.commit(cB, 6, 6.01, "B-1", 1, "t", map[int32]int64{3: 50}, nil)
	// A still has an offset of partition 3 from long ago and commits it.
	s.commit(cA, 8, 8.01, "A-1", 1, "t", map[int32]int64{0: 110, 3: 30}, nil)
	// C joins at 20; A commits too late, after the generation moved on.
	s.join(cC, 20, 20.5, s.jg("C-1", 2, "A-1"))
	s.hb(cA, 20.05, 20.051, "A-1", 1, 27)
	s.commit(cA, 20.1, 20.11, "A-1", 1, "t", map[int32]int64{0: 130, 1: 7}, map[int32]int16{0: 22, 1: 22})
	s.join(cA, 20.2, 20.5, s.jg("A-1", 2, "A-1", "A-1", "B-1", "C-1"))
	s.join(cB, 20.2, 20.5, s.jg("B-1", 2, "A-1"))
	plan := map[string][]decode.TopicPartitions{"A-1": parts("t", 0, 1), "B-1": parts("t", 2, 3), "C-1": parts("t", 4, 5)}
	s.sync(cA, 20.6, 20.7, "A-1", 2, plan["A-1"], plan)
	s.sync(cB, 20.6, 20.7, "B-1", 2, plan["B-1"], nil)
	s.sync(cC, 20.6, 20.7, "C-1", 2, plan["C-1"], nil)
	for _, m := range []mc{mA, mB, mC} {
		s.hbs(m.c, m.id, 2, 23, 40, 3)
	}
	return s
}

// txnCommits is commits made by an exactly-once application: A's
// transactional commit of B's partition 3 is a stale-owner commit only in
// the transaction that commits (epoch 1), not in the one that aborts
// (epoch 0); A's late transactional commit is refused (KIP-447 fencing).
func txnCommits() *script {
	s := newScript("g")
	s.round(0, 1, []mc{mA, mB}, map[string][]int32{"A-1": {0, 1, 2}, "B-1": {3, 4, 5}})
	s.hbs(cA, "A-1", 1, 3, 20, 3)
	s.hbs(cB, "B-1", 1, 3, 20, 3)
	s.commit(cB, 6, 6.01, "B-1", 1, "t", map[int32]int64{3: 50}, nil)
	s.txnCommit(cA, 7, 7.01, "A-1", 1, "eos-A", 9, 0, "t", map[int32]int64{0: 100, 3: 20}, nil)
	s.endTxn(cA, 7.02, 7.03, "eos-A", 9, 0, false)
	s.txnCommit(cA, 8, 8.01, "A-1", 1, "eos-A", 9, 1, "t", map[int32]int64{0: 110, 3: 60}, nil)
	s.endTxn(cA, 8.02, 8.03, "eos-A", 9, 1, true)
	s.join(cC, 20, 20.5, s.jg("C-1", 2, "A-1"))
	s.hb(cA, 20.05, 20.051, "A-1", 1, 27)
	s.txnCommit(cA, 20.1, 20.11, "A-1", 1, "eos-A", 9, 2, "t", map[int32]int64{0: 130, 1: 7}, map[int32]int16{0: 22, 1: 22})
	s.endTxn(cA, 20.12, 20.13, "eos-A", 9, 2, false)
	s.join(cA, 20.2, 20.5, s.jg("A-1", 2, "A-1", "A-1", "B-1", "C-1"))
	s.join(cB, 20.2, 20.5, s.jg("B-1", 2, "A-1"))
	plan := map[string][]decode.TopicPartitions{"A-1": parts("t", 0, 1), "B-1": parts("t", 2, 3), "C-1": parts("t", 4, 5)}
	s.sync(cA, 20.6, 20.7, "A-1", 2, plan["A-1"], plan)
	s.sync(cB, 20.6, 20.7, "B-1", 2, plan["B-1"], nil)
	s.sync(cC, 20.6, 20.7, "C-1", 2, plan["C-1"], nil)
	for _, m := range []mc{mA, mB, mC} {
		s.hbs(m.c, m.id, 2, 23, 40, 3)
	}
	return s
}

func partitionsScript() *script {
	s := newScript("g")
	all := []mc{mA, mB, mC}
	plans := []map[string][]int32{
		{"A-1": {0, 1}, "B-1": {2, 3}},
		{"A-1": {0}, "B-1": {2, 3}},
		{"A-1": {2, 3}, "B-1": {0, 1}},
		{"A-1": {0, 1}, "B-1": {2, 3}},
		{"A-1": {2, 3}, "B-1": {0, 1}},
	}
	at := 0.0
	for i, p := range plans {
		gen := int32(i + 1)
		if i > 0 {
			for _, m := range all {
				s.hb(m.c, at, at+0.001, m.id, gen-1, 27)
			}
		}
		s.round(at, gen, all, p)
		for _, m := range all {
			s.hbs(m.c, m.id, gen, at+3, at+20, 3)
		}
		at += 20
	}
	return s
}

func duplicateWindow() *script {
	s := newScript("g")
	fetchA := client{"consumer-g-1", "10.0.0.1:4101"}
	fetchB := client{"consumer-g-2", "10.0.0.2:4102"}
	s.round(0, 1, []mc{mA}, map[string][]int32{"A-1": {0, 1, 2}})
	s.hbs(cA, "A-1", 1, 3, 10, 3)
	s.commit(cA, 5, 5.01, "A-1", 1, "t", map[int32]int64{0: 40, 1: 40, 2: 40}, nil)
	s.fetch(fetchA, 9, "t", map[int32]int64{0: 100, 1: 100, 2: 100})
	s.join(cB, 10, 10.5, s.jg("B-1", 2, "A-1"))
	s.hb(cA, 10.05, 10.051, "A-1", 1, 27)
	s.join(cA, 10.1, 10.5, s.jg("A-1", 2, "A-1", "A-1", "B-1"))
	plan := map[string][]decode.TopicPartitions{"A-1": parts("t", 0, 1), "B-1": parts("t", 2)}
	s.sync(cA, 10.6, 10.7, "A-1", 2, plan["A-1"], plan)
	s.sync(cB, 10.6, 10.7, "B-1", 2, plan["B-1"], nil)
	s.fetch(fetchB, 11, "t", map[int32]int64{2: 40})
	s.fetch(fetchA, 11, "t", map[int32]int64{0: 100, 1: 100})
	s.hbs(cA, "A-1", 2, 13, 30, 3)
	s.hbs(cB, "B-1", 2, 13, 30, 3)
	return s
}

func TestScenarios(t *testing.T) {
	cases := []struct {
		name    string
		cfg     Config
		script  func() *script
		closeAt float64
		want    []Kind // the kinds found, in order
	}{
		{"healthy", Config{}, healthy, 121, nil},
		{"static_restart", Config{}, staticRestart, 60, nil},
		{"poll_timeout_left", Config{}, pollLeft, 40, []Kind{PollTimeoutEviction}},
		{"poll_timeout_deadline", Config{}, pollDeadline, 70, []Kind{PollTimeoutWarning, PollTimeoutEviction}},
		{"session_timeout", Config{}, sessionTimeout, 50, []Kind{SessionTimeoutWarning, SessionTimeoutEviction}},
		{"rolling_restart", Config{}, rollingRestart, 80, []Kind{RebalanceLoop, RollingRestart}},
		{"static_duplicate", Config{}, staticDuplicate, 40, []Kind{StaticMemberFenced, DuplicateInstanceID, StaticMemberFenced}},
		{"smells", Config{}, smells, 60, []Kind{TimeoutsMisordered, TimeoutsMisordered, HeterogeneousSubscriptions, MixedAssignors, HeartbeatTooSlow, HeartbeatTooSlow}},
		{"commits", Config{}, commits, 40, []Kind{BackwardsCommit, StaleOwnerCommit, FailedRevocationCommit}},
		{"txn_commits", Config{}, txnCommits, 40, []Kind{StaleOwnerCommit, FailedRevocationCommit}},
		{"partitions", Config{EagerLargeGroup: 3, UnownedAfter: 5 * time.Second}, partitionsScript, 100,
			[]Kind{EagerLargeGroup, MemberWithoutPartitions, RebalanceLoop, PartitionUnowned, PartitionFlap}},
		{"duplicate_window", Config{}, duplicateWindow, 30, []Kind{DuplicateWindow}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			fs, _ := diagnoseScript(t, c.cfg, c.script(), c.closeAt)
			var got []Kind
			for _, f := range fs {
				got = append(got, f.Kind)
			}
			if !slices.Equal(got, c.want) {
				var b bytes.Buffer
				_ = WriteText(&b, fs)
				t.Errorf("got kinds %v; want %v\n%s", got, c.want, b.String())
			}
			var b bytes.Buffer
			if err := WriteJSON(&b, fs); err != nil {
				t.Fatal(err)
			}
			golden(t, c.name+".json", b.Bytes())
			// Deterministic: a second run gives the same bytes.
			fs2, _ := diagnoseScript(t, c.cfg, c.script(), c.closeAt)
			var b2 bytes.Buffer
			_ = WriteJSON(&b2, fs2)
			if !bytes.Equal(b.Bytes(), b2.Bytes()) {
				t.Error("a second run gave different bytes")
			}
			// Live: a ticker advancing the clock between exchanges
			// changes nothing.
			fs3, live := diagnoseScriptTicking(t, c.cfg, c.script(), c.closeAt, 0.25)
			var b3 bytes.Buffer
			_ = WriteJSON(&b3, fs3)
			if !bytes.Equal(b.Bytes(), b3.Bytes()) {
				t.Errorf("with a ticker the findings differ:\n%s", b3.String())
			}
			for _, w := range live {
				if !slices.ContainsFunc(fs3, func(f Finding) bool { return f.ID == w.ID }) {
					t.Errorf("live warning %s is not among the findings", w.ID)
				}
			}
		})
	}
}

// TestDuplicateWindowOfTransactionalOwner: when the previous owner commits
// its offsets in transactions (exactly-once), the records it processed past
// them were in a transaction that never committed them: processed again,
// never written twice. The window is told as info, not critical.
func TestDuplicateWindowOfTransactionalOwner(t *testing.T) {
	s := duplicateWindow()
	for i, it := range s.items {
		if it.ev == nil || it.ev.OffsetCommit == nil {
			continue
		}
		if oc := it.ev.OffsetCommit; oc.MemberID == "A-1" {
			e := s.items[i].ev
			e.APIKey, e.APIVersion, e.OffsetCommit = 28, 5, nil
			e.TxnOffsetCommit = &decode.TxnOffsetCommit{TransactionalID: "app-0", ProducerID: 7, ProducerEpoch: 0,
				MemberID: oc.MemberID, Generation: oc.Generation, Topics: oc.Topics}
		}
	}
	fs, _ := diagnoseScript(t, Config{}, s, 30)
	i := slices.IndexFunc(fs, func(f Finding) bool { return f.Kind == DuplicateWindow })
	if i < 0 {
		t.Fatalf("no duplicate_window in %+v", fs)
	}
	if f := fs[i]; f.Severity != Info || f.Evidence["transactional"] != true || !strings.Contains(f.Explanation, "not written twice") {
		t.Errorf("duplicate_window %s %v %q; want info, transactional, not written twice", f.Severity, f.Evidence, f.Explanation)
	}
}
