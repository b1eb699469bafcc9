package timeline

import (
	"testing"
	"time"
)

// TestConsumerMembersView: what the view tells of KIP-848 members beyond
// the report, each case a crafted wire.
func TestConsumerMembersView(t *testing.T) {
	cases := []struct {
		name   string
		wire   func() *kip848Wire
		member string
		check  func(t *testing.T, v ConsumerMemberView, gv GroupView)
	}{
		{"session_bounds", func() *kip848Wire {
			w := sessionTimeoutWire()
			w.hb(cB, 70, 70.002, "M2", 2, 0, nil, errUnknownMemberID)
			return w
		}, "M2", func(t *testing.T, v ConsumerMemberView, _ GroupView) {
			// Silent since 12.002; epoch 3 seen at 61.002; M1's answer at
			// 56.002 still showed epoch 2.
			ms := time.Millisecond
			if v.Expired != sec(61) || v.SessionLow != 44*time.Second+2*ms || v.SessionHigh != 49*time.Second+2*ms {
				t.Errorf("expired %v, session %v..%v; want 61 s, 44.002 s..49.002 s", v.Expired, v.SessionLow, v.SessionHigh)
			}
			if len(v.Fences) != 1 || v.Fences[0].At != sec(70) || v.Active {
				t.Errorf("fences %v, active %v; want its answer at 70 s, inactive", v.Fences, v.Active)
			}
		}},
		{"rebalance_timeout_joins_leaves", func() *kip848Wire {
			w := newKIP848Wire("g")
			w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1, 2), 0)
			w.s.evs[len(w.s.evs)-1].ConsumerGroupHeartbeat.RebalanceTimeout = 45 * time.Second
			w.hb(cA, 10, 10.002, "M1", 1, -1, nil, 0)
			w.s.evs[len(w.s.evs)-1].ConsumerGroupHeartbeat.MemberEpoch = -1
			w.hb(cA, 20, 20.002, "M1", 0, 2, w.parts(0, 1, 2), 0)
			w.hb(cA, 30, 30.002, "M1", 2, -2, nil, 0)
			w.s.evs[len(w.s.evs)-1].ConsumerGroupHeartbeat.MemberEpoch = -2
			return w
		}, "M1", func(t *testing.T, v ConsumerMemberView, gv GroupView) {
			if v.RebalanceTimeout != 45*time.Second || v.HeartbeatInterval != 5*time.Second {
				t.Errorf("rebalance timeout %v, interval %v; want 45 s, 5 s", v.RebalanceTimeout, v.HeartbeatInterval)
			}
			if len(v.Joins) != 2 || v.Joins[0] != sec(1) || v.Joins[1] != sec(20) {
				t.Errorf("joins %v; want at 1 s and 20 s", v.Joins)
			}
			if len(v.Leaves) != 2 || v.Leaves[0] != (LeaveView{sec(10), -1}) || v.Leaves[1] != (LeaveView{sec(30), -2}) {
				t.Errorf("leaves %v; want -1 at 10 s, -2 at 30 s", v.Leaves)
			}
			for _, gen := range gv.Generations {
				for _, m := range gen.Members {
					if m.Reached.IsZero() {
						t.Errorf("epoch %d: %s never reached", gen.Generation, m.MemberID)
					}
				}
			}
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, _, e := run(t, Config{}, c.wire().s.events(), 80)
			for _, gv := range e.Views(nil) {
				for _, v := range gv.ConsumerMembers {
					if v.MemberID == c.member {
						c.check(t, v, gv)
						return
					}
				}
			}
			t.Fatalf("no consumer member %s in the view", c.member)
		})
	}
}

// TestMemberFactsOfCommittingKIP848Member: a KIP-848 member's OffsetCommit
// names its member id, which enters it in the classic registry too, with
// no JoinGroup; its facts stay those of its heartbeats (its rebalance
// timeout), or the diagnosis loses the timeout it infers poll timeouts
// from.
func TestMemberFactsOfCommittingKIP848Member(t *testing.T) {
	w := newKIP848Wire("g")
	w.hb(cA, 1, 1.002, "M1", 0, 1, w.parts(0, 1), 0)
	w.s.evs[len(w.s.evs)-1].ConsumerGroupHeartbeat.RebalanceTimeout = 45 * time.Second
	w.s.commit(cA, 5, 5.002, "M1", 1, "t", map[int32]int64{0: 10}, nil)
	_, _, e := run(t, Config{}, w.s.events(), 10)
	m, ok := e.Member("g", "M1")
	if !ok || m.RebalanceTimeout != 45*time.Second {
		t.Fatalf("Member(g, M1) = %+v, %v; want its heartbeat's rebalance timeout 45 s", m, ok)
	}
}
