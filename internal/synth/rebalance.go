package synth

import (
	"fmt"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// rebalance runs one full rebalance starting at at and returns when it
// ends: the members still in the group learn of it from their heartbeats
// (REBALANCE_IN_PROGRESS) and commit before rejoining; joiner (if any)
// joins with an empty member id first (MEMBER_ID_REQUIRED); first (if any)
// starts the rebalance by rejoining at once, as a cooperative member that
// revoked partitions does; everyone's JoinGroup completes when the last one
// arrives; the leader sends the plan in SyncGroup.
func (t *Traffic) rebalance(g *group, at time.Time, joiner, first *member) time.Time {
	if g.generation > 0 {
		hb := at
		if first != nil {
			hb = at.Add(100 * time.Millisecond)
		}
		t.heartbeats(g, hb, errRebalanceInProgress, first)
		t.commits(g, hb.Add(60*time.Millisecond), 0, first)
	}
	if joiner != nil {
		g.members = append(g.members, joiner)
	}
	// Members with no id yet get one through MEMBER_ID_REQUIRED.
	for _, m := range g.members {
		if m.id != "" {
			continue
		}
		m.id = fmt.Sprintf("%s-%08x", m.c.clientID, t.rng.Uint32())
		req, resp := t.joinPair(g, m, "")
		resp.ErrorCode, resp.MemberID, resp.Generation = errMemberIDRequired, m.id, -1
		t.emit(m.c.exchange(req, resp, at, t.latency()))
	}
	g.generation++
	// Each member rejoins after its own delay; all responses come when the
	// slowest has joined.
	delays := make([]time.Duration, len(g.members))
	var slowest time.Duration
	for i, m := range g.members {
		if m != first {
			delays[i] = time.Duration(220+t.rng.IntN(3000)) * time.Millisecond
		}
		slowest = max(slowest, delays[i])
	}
	done := at.Add(slowest + 2*time.Millisecond)
	leader := g.members[0]
	for i, m := range g.members {
		req, resp := t.joinPair(g, m, m.id)
		resp.Generation, resp.LeaderID, resp.MemberID = g.generation, leader.id, m.id
		proto := g.protocol
		resp.Protocol = &proto
		if m == leader {
			for _, o := range g.members {
				jm := kmsg.NewJoinGroupResponseMember()
				jm.MemberID, jm.ProtocolMetadata = o.id, subscription(g, o)
				resp.Members = append(resp.Members, jm)
			}
		}
		sent := at.Add(delays[i])
		t.emit(m.c.exchange(req, resp, sent, done.Sub(sent)))
	}
	revoker := g.plan()
	end := t.sync(g, done.Add(time.Millisecond), leader)
	if revoker != nil {
		// Cooperative: members revoked what moves; the partitions withheld
		// are assigned in a follow-up rebalance right away (KIP-429).
		return t.rebalance(g, end.Add(5*time.Millisecond), nil, revoker)
	}
	g.steadyLeft = t.rounds(t.mix.steadyMin + t.rng.IntN(t.mix.steadySpan))
	return end
}

// joinPair is a JoinGroup request from m and an empty response to fill.
func (t *Traffic) joinPair(g *group, m *member, memberID string) (*kmsg.JoinGroupRequest, *kmsg.JoinGroupResponse) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(vJoinGroup)
	req.Group, req.MemberID, req.ProtocolType = g.name, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = int32(15*t.opts.Heartbeat/time.Millisecond), int32(100*t.opts.Heartbeat/time.Millisecond)
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = g.protocol, subscription(g, m)
	req.Protocols = append(req.Protocols, p)
	resp := kmsg.NewPtrJoinGroupResponse()
	pt := "consumer"
	resp.ProtocolType = &pt
	return req, resp
}

// subscription is the ConsumerProtocolSubscription of m, a member of g:
// every member subscribes to all of g's topics.
func subscription(g *group, m *member) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Generation = 3, -1
	for _, tp := range g.topics {
		s.Topics = append(s.Topics, tp.name)
	}
	for _, a := range g.topicsOf(m.assigned) {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = a.Topic, a.Partitions
		s.OwnedPartitions = append(s.OwnedPartitions, op)
	}
	return s.AppendTo(nil)
}

// sync runs the SyncGroup round of the plan: the leader's request carries
// it, each response the member's own assignment. It returns when the last
// response arrives.
func (t *Traffic) sync(g *group, at time.Time, leader *member) time.Time {
	done := at.Add(time.Duration(1+t.rng.IntN(20)) * time.Millisecond)
	for _, m := range g.members {
		req := kmsg.NewPtrSyncGroupRequest()
		req.SetVersion(vSyncGroup)
		req.Group, req.Generation, req.MemberID = g.name, g.generation, m.id
		pt, proto := "consumer", g.protocol
		req.ProtocolType, req.Protocol = &pt, &proto
		if m == leader {
			for _, o := range g.members {
				ga := kmsg.NewSyncGroupRequestGroupAssignment()
				ga.MemberID, ga.MemberAssignment = o.id, assignment(g, o)
				req.GroupAssignment = append(req.GroupAssignment, ga)
			}
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ProtocolType, resp.Protocol = &pt, &proto
		resp.MemberAssignment = assignment(g, m)
		t.emit(m.c.exchange(req, resp, at, done.Sub(at)))
	}
	return done
}

// assignment is the ConsumerMemberAssignment of m, a member of g.
func assignment(g *group, m *member) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version, a.Topics = 3, g.topicsOf(m.assigned)
	return a.AppendTo(nil)
}
