package timeline

// Synthetic event streams shared by the tests.

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// twoMembers is gen 1 of group g: A (leader) and B joined together, A owns
// round_topic 0,1 and B owns 2; both heartbeat until 9 s.
func twoMembers(group string) *script {
	s := newScript(group)
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.memberIDRequired(cB, 0.002, 0.003, "B-1")
	s.join(cA, 0.004, 0.010, jg("A-1", 1, "A-1", "A-1", "B-1"))
	s.join(cB, 0.005, 0.010, jg("B-1", 1, "A-1"))
	plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)}
	s.sync(cA, 0.011, 0.012, "A-1", 1, plan["A-1"], plan)
	s.sync(cB, 0.011, 0.013, "B-1", 1, plan["B-1"], nil)
	s.hbs(cA, "A-1", 1, 3, 10)
	s.hbs(cB, "B-1", 1, 3, 10)
	return s
}

// stormScript: A and B rebalance three times within two minutes, each
// time because B's poll timed out and it rejoined.
func stormScript() *script {
	s := twoMembers("storm")
	gen, from := int32(1), 10.0
	for i, t := range []float64{20, 60, 100} {
		s.hbs(cA, "A-1", gen, from, t)
		s.hbs(cB, "B-1", gen, from, t-1)
		from = t + 1
		gen++
		s.hb(cA, t, t+0.001, "A-1", gen-1, errRebalanceInProgress)
		s.join(cA, t+0.1, t+0.3, jg("A-1", gen, "A-1", "A-1", "B-1"))
		jb := jg("B-1", gen, "A-1")
		jb.Reason = "rebalance failed due to poll timeout"
		s.join(cB, t-0.5+float64(i)*0.01, t+0.3, jb)
		plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)}
		s.sync(cA, t+0.31, t+0.32, "A-1", gen, plan["A-1"], plan)
		s.sync(cB, t+0.31, t+0.33, "B-1", gen, plan["B-1"], nil)
	}
	s.hbs(cA, "A-1", gen, from, 500)
	s.hbs(cB, "B-1", gen, from, 500)
	return s
}

// growthScript: A forms the group alone, B joins at 10 s and C at 20 s,
// each making the group larger than it ever was; C leaves at 40 s.
func growthScript() *script {
	s := newScript("growth")
	s.memberIDRequired(cA, 0, 0.001, "A-1")
	s.join(cA, 0.002, 0.010, jg("A-1", 1, "A-1", "A-1"))
	s.sync(cA, 0.011, 0.012, "A-1", 1, tp("round_topic", 0, 1, 2), map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1, 2)})
	s.hbs(cA, "A-1", 1, 1, 10)
	plans := []map[string][]decode.TopicPartitions{
		{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)},
		{"A-1": tp("round_topic", 0), "B-1": tp("round_topic", 1), "C-1": tp("round_topic", 2)},
		{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)},
	}
	clients := map[string]client{"A-1": cA, "B-1": cB, "C-1": cC}
	rebalance := func(gen int32, t float64, members ...string) {
		s.hb(cA, t+0.05, t+0.051, "A-1", gen-1, errRebalanceInProgress)
		s.join(cA, t+0.1, t+0.3, jg("A-1", gen, "A-1", members...))
		for _, m := range members[1:] {
			s.join(clients[m], t+0.02, t+0.3, jg(m, gen, "A-1"))
		}
		plan := plans[gen-2]
		s.sync(cA, t+0.31, t+0.32, "A-1", gen, plan["A-1"], plan)
		for _, m := range members[1:] {
			s.sync(clients[m], t+0.31, t+0.33, m, gen, plan[m], nil)
		}
	}
	s.memberIDRequired(cB, 10, 10.001, "B-1")
	rebalance(2, 10, "A-1", "B-1")
	s.hbs(cA, "A-1", 2, 11, 20)
	s.hbs(cB, "B-1", 2, 11, 20)
	s.memberIDRequired(cC, 20, 20.001, "C-1")
	rebalance(3, 20, "A-1", "B-1", "C-1")
	for _, m := range []string{"A-1", "B-1", "C-1"} {
		s.hbs(clients[m], m, 3, 21, 40)
	}
	s.leave(cC, 40, 40.001, "C-1", "the consumer is being closed")
	rebalance(4, 40, "A-1", "B-1")
	s.hbs(cA, "A-1", 4, 41, 60)
	s.hbs(cB, "B-1", 4, 41, 60)
	return s
}

// cooperativeScript: A owns round_topic 0,1,2 with cooperative-sticky; B
// joins; gen 2 takes 2 away from A without giving it to B; A revokes it and
// rejoins; gen 3 gives it to B.
func cooperativeScript() *script {
	s := newScript("coop")
	coop := func(j decode.JoinGroup, owned ...int32) decode.JoinGroup {
		j.ProtocolName = "cooperative-sticky"
		sub := consumerSub("round_topic")
		if len(owned) > 0 {
			sub.OwnedPartitions = tp("round_topic", owned...)
		}
		j.Protocols = []decode.JoinProtocol{{Name: "cooperative-sticky", Subscription: sub}}
		for i := range j.Members {
			j.Members[i].Subscription = sub
		}
		return j
	}
	s.join(cA, 0, 0.01, coop(jg("A-1", 1, "A-1", "A-1")))
	all := tp("round_topic", 0, 1, 2)
	s.sync(cA, 0.011, 0.012, "A-1", 1, all, map[string][]decode.TopicPartitions{"A-1": all})
	s.memberIDRequired(cB, 10, 10.001, "B-1")
	s.hb(cA, 10.5, 10.501, "A-1", 1, errRebalanceInProgress)
	s.join(cA, 10.6, 10.7, coop(jg("A-1", 2, "A-1", "A-1", "B-1"), 0, 1, 2))
	s.join(cB, 10.002, 10.7, coop(jg("B-1", 2, "A-1")))
	plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": nil}
	s.sync(cA, 10.71, 10.72, "A-1", 2, plan["A-1"], plan)
	s.sync(cB, 10.71, 10.73, "B-1", 2, nil, nil)
	// Second round: A revoked 2 and rejoins at once; B follows.
	follow := coop(jg("A-1", 3, "A-1", "A-1", "B-1"), 0, 1)
	follow.Reason = "need to revoke partitions and re-join"
	s.join(cA, 10.8, 11.0, follow)
	s.join(cB, 10.9, 11.0, coop(jg("B-1", 3, "A-1")))
	plan3 := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0, 1), "B-1": tp("round_topic", 2)}
	s.sync(cA, 11.01, 11.02, "A-1", 3, plan3["A-1"], plan3)
	s.sync(cB, 11.01, 11.03, "B-1", 3, plan3["B-1"], nil)
	return s
}

// kip848Script: M1 joins and gets orders 0,1,2 (epoch 1); M2 joins (epoch
// 2); M1 revokes 2 then reaches epoch 2; M2 gets 2; later M2 is fenced.
func kip848Script() *script {
	s := newScript("kip848")
	id := [16]byte{1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16}
	md := s.ev(cA, 3, 0, 0.001)
	md.Group, md.Metadata = "", &decode.Metadata{Topics: []decode.MetadataTopic{{Name: "orders", TopicID: id, Partitions: 3}}}
	parts := func(ps ...int32) []decode.TopicIDPartitions {
		return []decode.TopicIDPartitions{{TopicID: id, Partitions: ps}}
	}
	hb := func(c client, req float64, member string, epoch int32, owned []decode.TopicIDPartitions, respEpoch int32, assignment []decode.TopicIDPartitions, code int16) {
		h := &decode.ConsumerGroupHeartbeat{MemberID: member, MemberEpoch: epoch, OwnedPartitions: owned,
			AssignedMemberID: member, AssignedEpoch: respEpoch, Assignment: assignment, ErrorCode: code,
			HeartbeatInterval: 5 * time.Second}
		if epoch == 0 {
			h.SubscribedTopicNames = []string{"orders"}
			h.ServerAssignor = ptr("uniform")
		}
		s.ev(c, 68, req, req+0.002).ConsumerGroupHeartbeat = h
	}
	hb(cA, 1, "M1", 0, nil, 1, parts(0, 1, 2), 0)
	hb(cA, 6, "M1", 1, parts(0, 1, 2), 1, nil, 0)
	hb(cB, 10, "M2", 0, nil, 2, []decode.TopicIDPartitions{}, 0)
	hb(cA, 11, "M1", 1, nil, 1, parts(0, 1), 0)
	hb(cA, 11.5, "M1", 1, parts(0, 1), 2, nil, 0)
	hb(cB, 12, "M2", 2, []decode.TopicIDPartitions{}, 2, parts(2), 0)
	hb(cA, 16.5, "M1", 2, nil, 2, nil, 0)
	hb(cB, 20, "M2", 1, parts(2), 0, nil, errFencedMemberEpoch)
	return s
}

// partialScript: kproxy starts while the group is in generation 5; C
// joins; only A's and C's traffic passes through this kproxy, so B is known
// only from the leader's member list. Then gen 7 forms and the leader's
// JoinGroup response is not seen either.
func partialScript() *script {
	s := newScript("partial")
	s.hb(cA, 1, 1.001, "A-1", 5, 0)
	s.memberIDRequired(cC, 10, 10.001, "C-1")
	s.hb(cA, 10.5, 10.501, "A-1", 5, errRebalanceInProgress)
	s.join(cA, 10.6, 10.8, jg("A-1", 6, "A-1", "A-1", "B-1", "C-1"))
	s.join(cC, 10.002, 10.8, jg("C-1", 6, "A-1"))
	plan := map[string][]decode.TopicPartitions{"A-1": tp("round_topic", 0), "B-1": tp("round_topic", 1), "C-1": tp("round_topic", 2)}
	s.sync(cA, 10.81, 10.82, "A-1", 6, plan["A-1"], plan)
	s.sync(cC, 10.81, 10.83, "C-1", 6, plan["C-1"], nil)
	// Gen 7: only C's JoinGroup is seen (C is a follower).
	s.hb(cC, 20, 20.001, "C-1", 6, errRebalanceInProgress)
	s.join(cC, 20.1, 20.5, jg("C-1", 7, "A-1"))
	s.sync(cC, 20.51, 20.6, "C-1", 7, tp("round_topic", 2), nil)
	s.hbs(cC, "C-1", 7, 23, 40)
	return s
}
