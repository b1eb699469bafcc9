package main

import (
	"container/heap"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
)

// Versions the simulated clients speak: Kafka 3.x/4.x consumers.
const (
	vFindCoordinator = 4
	vJoinGroup       = 9
	vSyncGroup       = 5
	vHeartbeat       = 4
	vLeaveGroup      = 5
	vOffsetCommit    = 9
)

const (
	// errRebalanceInProgress and errMemberIDRequired as Kafka numbers them.
	errRebalanceInProgress = 27
	errMemberIDRequired    = 79
	heartbeatEvery         = 3 * time.Second
)

// member is one consumer of a group.
type member struct {
	c        *client
	id       string // assigned by the coordinator
	topics   []string
	assigned []kmsg.ConsumerMemberAssignmentTopic
	offset   int64
}

// group is one simulated consumer group and its state machine.
type group struct {
	name        string
	coordinator int32
	protocol    string
	topics      []string
	partitions  int32
	members     []*member
	generation  int32
	// steadyLeft is how many heartbeat rounds remain before the next
	// rebalance.
	steadyLeft int
	next       time.Time // when the group acts next
	started    bool
}

// traffic simulates many groups and yields their exchanges in the order a
// proxy would observe them (when the responses arrive).
type traffic struct {
	rng        *rand.Rand
	groups     groupHeap
	maxMembers int
	nextConn   uint64
	nextMember int
	pending    []*decode.Exchange // emitted, not yet returned by next
	pos        int                // pending[pos] is returned next
}

// newTraffic sets up n groups of 2..maxMembers members starting within the
// first seconds after start.
func newTraffic(seed uint64, n, maxMembers int, start time.Time) *traffic {
	t := &traffic{rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), maxMembers: maxMembers}
	for i := range n {
		g := &group{
			name:        fmt.Sprintf("group-%04d", i),
			coordinator: int32(i % 3),
			protocol:    []string{"range", "cooperative-sticky", "roundrobin"}[i%3],
			partitions:  int32(3 + t.rng.IntN(10)),
			next:        start.Add(time.Duration(t.rng.IntN(5000)) * time.Millisecond),
		}
		for j := range 1 + t.rng.IntN(3) {
			g.topics = append(g.topics, fmt.Sprintf("%s-topic-%d", g.name, j))
		}
		for range 2 + t.rng.IntN(max(1, maxMembers-1)) {
			g.members = append(g.members, t.newMember(g))
		}
		t.groups = append(t.groups, g)
	}
	heap.Init(&t.groups)
	return t
}

func (t *traffic) newMember(g *group) *member {
	t.nextConn++
	t.nextMember++
	cid := fmt.Sprintf("consumer-%d", t.nextMember)
	addr := fmt.Sprintf("10.%d.%d.%d:%d", t.nextMember>>16&255, t.nextMember>>8&255, t.nextMember&255, 30000+t.rng.IntN(30000))
	return &member{c: newClient(t.nextConn, addr, cid, g.coordinator), topics: g.topics}
}

// next returns the next exchange.
func (t *traffic) next() *decode.Exchange {
	if t.pos == len(t.pending) {
		t.pending, t.pos = t.pending[:0], 0
		clear(t.pending[:cap(t.pending)])
	}
	for len(t.pending) == 0 {
		t.step(t.groups[0])
		heap.Fix(&t.groups, 0)
	}
	x := t.pending[t.pos]
	t.pos++
	return x
}

func (t *traffic) emit(x *decode.Exchange) { t.pending = append(t.pending, x) }

// latency is a plausible broker round trip.
func (t *traffic) latency() time.Duration {
	return time.Duration(200+t.rng.IntN(2800)) * time.Microsecond
}

// step runs the group's next action at g.next and schedules the one after.
func (t *traffic) step(g *group) {
	now := g.next
	switch {
	case !g.started:
		g.started = true
		for _, m := range g.members {
			t.findCoordinator(g, m, now)
		}
		t.rebalance(g, now.Add(5*time.Millisecond), nil)
	case g.steadyLeft > 0:
		g.steadyLeft--
		t.heartbeats(g, now, 0)
		if g.steadyLeft%2 == 0 {
			t.commits(g, now.Add(time.Duration(t.rng.IntN(1000))*time.Millisecond), 0)
		}
	default:
		t.membershipChange(g, now)
	}
	g.next = now.Add(heartbeatEvery + time.Duration(t.rng.IntN(200))*time.Millisecond)
}

// membershipChange makes a member leave or a new one join, and rebalances.
func (t *traffic) membershipChange(g *group, now time.Time) {
	if len(g.members) > 2 && (len(g.members) >= t.maxMembers || t.rng.IntN(2) == 0) {
		i := t.rng.IntN(len(g.members))
		m := g.members[i]
		g.members = slices.Delete(g.members, i, i+1)
		req := kmsg.NewPtrLeaveGroupRequest()
		req.SetVersion(vLeaveGroup)
		req.Group = g.name
		reason := "the consumer is being closed"
		lm := kmsg.NewLeaveGroupRequestMember()
		lm.MemberID, lm.Reason = m.id, &reason
		req.Members = append(req.Members, lm)
		resp := kmsg.NewPtrLeaveGroupResponse()
		rm := kmsg.NewLeaveGroupResponseMember()
		rm.MemberID = m.id
		resp.Members = append(resp.Members, rm)
		t.emit(m.c.exchange(req, resp, now, t.latency()))
		t.rebalance(g, now.Add(10*time.Millisecond), nil)
		return
	}
	m := t.newMember(g)
	t.findCoordinator(g, m, now)
	t.rebalance(g, now.Add(5*time.Millisecond), m)
}

func (t *traffic) findCoordinator(g *group, m *member, at time.Time) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(vFindCoordinator)
	req.CoordinatorKeys = []string{g.name}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	c := kmsg.NewFindCoordinatorResponseCoordinator()
	c.Key, c.NodeID, c.Host, c.Port = g.name, g.coordinator, "127.0.0.1", 9092+g.coordinator
	resp.Coordinators = append(resp.Coordinators, c)
	t.emit(m.c.exchange(req, resp, at, t.latency()))
}

// heartbeats sends one heartbeat per member, answered with errCode.
func (t *traffic) heartbeats(g *group, at time.Time, errCode int16) {
	for _, m := range g.members {
		req := kmsg.NewPtrHeartbeatRequest()
		req.SetVersion(vHeartbeat)
		req.Group, req.Generation, req.MemberID = g.name, g.generation, m.id
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = errCode
		t.emit(m.c.exchange(req, resp, at.Add(time.Duration(t.rng.IntN(50))*time.Millisecond), t.latency()))
	}
}

// commits commits every member's assigned partitions.
func (t *traffic) commits(g *group, at time.Time, errCode int16) {
	for _, m := range g.members {
		if len(m.assigned) == 0 {
			continue
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(vOffsetCommit)
		req.Group, req.Generation, req.MemberID = g.name, g.generation, m.id
		resp := kmsg.NewPtrOffsetCommitResponse()
		for _, a := range m.assigned {
			rt := kmsg.NewOffsetCommitRequestTopic()
			rt.Topic = a.Topic
			st := kmsg.NewOffsetCommitResponseTopic()
			st.Topic = a.Topic
			for _, p := range a.Partitions {
				m.offset += int64(1 + t.rng.IntN(500))
				rp := kmsg.NewOffsetCommitRequestTopicPartition()
				rp.Partition, rp.Offset, rp.LeaderEpoch = p, m.offset, -1
				rt.Partitions = append(rt.Partitions, rp)
				sp := kmsg.NewOffsetCommitResponseTopicPartition()
				sp.Partition, sp.ErrorCode = p, errCode
				st.Partitions = append(st.Partitions, sp)
			}
			req.Topics = append(req.Topics, rt)
			resp.Topics = append(resp.Topics, st)
		}
		t.emit(m.c.exchange(req, resp, at, t.latency()))
	}
}

// rebalance runs one full rebalance starting at at: the members still in
// the group learn of it from their heartbeats (REBALANCE_IN_PROGRESS) and
// commit before rejoining; joiner (if any) joins with an empty member id
// first (MEMBER_ID_REQUIRED); everyone's JoinGroup completes when the last
// one arrives; the leader sends the plan in SyncGroup.
func (t *traffic) rebalance(g *group, at time.Time, joiner *member) {
	if g.generation > 0 {
		t.heartbeats(g, at, errRebalanceInProgress)
		t.commits(g, at.Add(20*time.Millisecond), 0)
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
	for i := range delays {
		delays[i] = time.Duration(30+t.rng.IntN(3000)) * time.Millisecond
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
				jm.MemberID, jm.ProtocolMetadata = o.id, subscription(o)
				resp.Members = append(resp.Members, jm)
			}
		}
		sent := at.Add(delays[i])
		t.emit(m.c.exchange(req, resp, sent, done.Sub(sent)))
	}
	t.sync(g, done.Add(time.Millisecond), leader)
	g.steadyLeft = 5 + t.rng.IntN(40)
}

// joinPair is a JoinGroup request from m and an empty response to fill.
func (t *traffic) joinPair(g *group, m *member, memberID string) (*kmsg.JoinGroupRequest, *kmsg.JoinGroupResponse) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.SetVersion(vJoinGroup)
	req.Group, req.MemberID, req.ProtocolType = g.name, memberID, "consumer"
	req.SessionTimeoutMillis, req.RebalanceTimeoutMillis = 45000, 300000
	p := kmsg.NewJoinGroupRequestProtocol()
	p.Name, p.Metadata = g.protocol, subscription(m)
	req.Protocols = append(req.Protocols, p)
	resp := kmsg.NewPtrJoinGroupResponse()
	pt := "consumer"
	resp.ProtocolType = &pt
	return req, resp
}

// subscription is m's ConsumerProtocolSubscription.
func subscription(m *member) []byte {
	s := kmsg.NewConsumerMemberMetadata()
	s.Version, s.Topics, s.Generation = 3, m.topics, -1
	for _, a := range m.assigned {
		op := kmsg.NewConsumerMemberMetadataOwnedPartition()
		op.Topic, op.Partitions = a.Topic, a.Partitions
		s.OwnedPartitions = append(s.OwnedPartitions, op)
	}
	return s.AppendTo(nil)
}

// sync assigns partitions round robin over the members and runs the
// SyncGroup round: the leader's request carries the plan, each response
// the member's own assignment.
func (t *traffic) sync(g *group, at time.Time, leader *member) {
	for _, m := range g.members {
		m.assigned = nil
	}
	k := 0
	for _, topic := range g.topics {
		for p := range g.partitions {
			m := g.members[k%len(g.members)]
			k++
			if n := len(m.assigned); n == 0 || m.assigned[n-1].Topic != topic {
				a := kmsg.NewConsumerMemberAssignmentTopic()
				a.Topic = topic
				m.assigned = append(m.assigned, a)
			}
			last := &m.assigned[len(m.assigned)-1]
			last.Partitions = append(last.Partitions, p)
		}
	}
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
				ga.MemberID, ga.MemberAssignment = o.id, assignment(o)
				req.GroupAssignment = append(req.GroupAssignment, ga)
			}
		}
		resp := kmsg.NewPtrSyncGroupResponse()
		resp.ProtocolType, resp.Protocol = &pt, &proto
		resp.MemberAssignment = assignment(m)
		t.emit(m.c.exchange(req, resp, at, done.Sub(at)))
	}
}

func assignment(m *member) []byte {
	a := kmsg.NewConsumerMemberAssignment()
	a.Version, a.Topics = 3, m.assigned
	return a.AppendTo(nil)
}

// groupHeap orders groups by when they act next.
type groupHeap []*group

func (h groupHeap) Len() int           { return len(h) }
func (h groupHeap) Less(i, j int) bool { return h[i].next.Before(h[j].next) }
func (h groupHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *groupHeap) Push(x any)        { *h = append(*h, x.(*group)) }
func (h *groupHeap) Pop() any {
	old := *h
	g := old[len(old)-1]
	*h = old[:len(old)-1]
	return g
}
