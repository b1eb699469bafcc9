package synth

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Versions the simulated clients speak: Kafka 3.x/4.x consumers.
const (
	vApiVersions     = 3
	vMetadata        = 12
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
	brokers                = 3
)

// member is one consumer of a group.
type member struct {
	host int    // its client host (see Traffic.host)
	c    client // connection to the group's coordinator
	// boot is its bootstrap connection, with the fetch path on (see
	// Options.Mix): ApiVersions, Metadata, FindCoordinator.
	boot client
	id   string // assigned by the coordinator
	// assigned is its partitions, in topic and partition order.
	assigned []partitionRef
	// refreshLeft is how many rounds remain before its next metadata
	// refresh.
	refreshLeft int
}

// topic is one topic a group consumes.
type topic struct {
	name       string
	id         [16]byte
	partitions int32
	// offsets are the committed offsets by partition.
	offsets []int64
}

// group is one simulated consumer group and its state machine.
type group struct {
	name        string
	coordinator int32
	protocol    string
	// topics never change: a job's next run has its own.
	topics     []topic
	members    []*member
	minSize    int
	maxSize    int
	generation int32
	// steadyLeft is how many heartbeat rounds remain before the next
	// rebalance.
	steadyLeft int
	next       time.Time // when the group acts next
	started    bool
	// job is set for a short-lived group (Options.Jobs): its slot, run
	// and when its members leave.
	job *job
}

// job is a short-lived group's run.
type job struct {
	slot, run int
	ends      time.Time
}

// newGroup sets up the i-th group, starting within the first 5 seconds.
func (t *Traffic) newGroup(i int) *group {
	g := &group{
		name:        fmt.Sprintf("group-%04d", i),
		coordinator: int32(i % brokers),
		protocol:    []string{"range", "cooperative-sticky", "roundrobin"}[i%3],
		next:        t.opts.Start.Add(time.Duration(t.rng.IntN(5000)) * time.Millisecond),
	}
	size := t.opts.Mix.groupSize(t.rng, t.opts.MaxMembers)
	g.minSize, g.maxSize = t.opts.Mix.sizeBounds(size, t.opts.MaxMembers)
	t.setup(g, size)
	return g
}

// newJob sets up run run of the short-lived group in slot slot (see
// Options.Jobs), starting at start: 1 to 4 members (one more while one
// comes and goes) of the range assignor, for 5 to 60 minutes.
func (t *Traffic) newJob(slot, run int, start time.Time) *group {
	g := &group{
		name:        fmt.Sprintf("job-%03d-run-%d", slot, run),
		coordinator: int32(slot % brokers),
		protocol:    "range",
		next:        start,
		job:         &job{slot: slot, run: run, ends: start.Add(5*time.Minute + t.jitter(55*time.Minute))},
	}
	size := 1 + t.rng.IntN(4)
	g.minSize, g.maxSize = size, size+1
	t.setup(g, size)
	return g
}

// setup gives g its topics and its size members.
func (t *Traffic) setup(g *group, size int) {
	partitions := 3 + t.rng.IntN(10)
	if size > 12 {
		partitions = 12 + t.rng.IntN(37)
	}
	for j := range 1 + t.rng.IntN(3) {
		name := fmt.Sprintf("%s-topic-%d", g.name, j)
		g.topics = append(g.topics, topic{name: name, id: topicID(name), partitions: int32(partitions), offsets: make([]int64, partitions)})
	}
	for range size {
		g.members = append(g.members, t.newMember(g))
	}
}

func (t *Traffic) newMember(g *group) *member {
	n := t.host()
	cid := fmt.Sprintf("consumer-%d", n)
	m := &member{host: n, c: t.conn(n, cid, g.coordinator)}
	if t.mix.fetchPath {
		m.boot = t.conn(n, cid, -1)
		m.refreshLeft = 1 + t.rng.IntN(t.rounds(t.mix.refreshEvery))
	}
	return m
}

// step runs the group's next action at g.next and schedules the one after.
func (t *Traffic) step(g *group) {
	now := g.next
	end := now
	switch {
	case g.job != nil && !now.Before(g.job.ends):
		// The run is over: its members leave, and the next run in the slot
		// starts within 10 minutes under a new id.
		for _, m := range g.members {
			t.leave(g, m, now.Add(t.jitter(50*time.Millisecond)))
		}
		*g = *t.newJob(g.job.slot, g.job.run+1, now.Add(time.Second+t.jitter(10*time.Minute)))
		return
	case !g.started:
		g.started = true
		for _, m := range g.members {
			t.startMember(g, m, now)
		}
		end = t.rebalance(g, now.Add(5*time.Millisecond), nil, nil)
	case g.steadyLeft > 0:
		g.steadyLeft--
		t.heartbeats(g, now, 0, nil)
		if g.steadyLeft%2 == 0 {
			t.commits(g, now.Add(t.jitter(time.Second)), 0, nil)
		}
		t.fetchPath(g, now)
	default:
		end = t.membershipChange(g, now)
	}
	g.next = end.Add(t.opts.Heartbeat + t.jitter(200*time.Millisecond))
}

// startMember is a consumer starting: it finds the coordinator, and with
// the fetch path on it first learns versions and metadata on its bootstrap
// connection, and versions on its coordinator connection and on one
// connection to each broker it will fetch from.
func (t *Traffic) startMember(g *group, m *member, at time.Time) {
	if !t.mix.fetchPath {
		t.findCoordinator(g, &m.c, at)
		return
	}
	t.apiVersions(&m.boot, at)
	t.metadata(g, &m.boot, at.Add(time.Millisecond))
	t.findCoordinator(g, &m.boot, at.Add(2*time.Millisecond))
	t.apiVersions(&m.c, at.Add(3*time.Millisecond))
	for b := range int32(brokers) {
		c := t.conn(m.host, m.c.clientID, b)
		t.apiVersions(&c, at.Add(4*time.Millisecond))
	}
}

// membershipChange makes a member leave or a new one join, and rebalances.
// It returns when the rebalance ends.
func (t *Traffic) membershipChange(g *group, now time.Time) time.Time {
	if len(g.members) > g.minSize && (len(g.members) >= g.maxSize || t.rng.IntN(2) == 0) {
		i := t.rng.IntN(len(g.members))
		m := g.members[i]
		g.members = slices.Delete(g.members, i, i+1)
		t.leave(g, m, now)
		return t.rebalance(g, now.Add(10*time.Millisecond), nil, nil)
	}
	m := t.newMember(g)
	t.startMember(g, m, now)
	return t.rebalance(g, now.Add(10*time.Millisecond), m, nil)
}

// leave is m's LeaveGroup at at.
func (t *Traffic) leave(g *group, m *member, at time.Time) {
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
	t.emit(m.c.exchange(req, resp, at, t.latency()))
}

func (t *Traffic) findCoordinator(g *group, c *client, at time.Time) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.SetVersion(vFindCoordinator)
	req.CoordinatorKeys = []string{g.name}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	fc := kmsg.NewFindCoordinatorResponseCoordinator()
	fc.Key, fc.NodeID, fc.Host, fc.Port = g.name, g.coordinator, brokerHost(g.coordinator), 9092
	resp.Coordinators = append(resp.Coordinators, fc)
	t.emit(c.exchange(req, resp, at, t.latency()))
}

// heartbeats sends one heartbeat per member but skip, answered with
// errCode.
func (t *Traffic) heartbeats(g *group, at time.Time, errCode int16, skip *member) {
	for _, m := range g.members {
		if m == skip {
			continue
		}
		req := kmsg.NewPtrHeartbeatRequest()
		req.SetVersion(vHeartbeat)
		req.Group, req.Generation, req.MemberID = g.name, g.generation, m.id
		resp := kmsg.NewPtrHeartbeatResponse()
		resp.ErrorCode = errCode
		t.emit(m.c.exchange(req, resp, at.Add(t.jitter(50*time.Millisecond)), t.latency()))
	}
}

// commits commits the assigned partitions of every member but skip.
func (t *Traffic) commits(g *group, at time.Time, errCode int16, skip *member) {
	for _, m := range g.members {
		if len(m.assigned) == 0 || m == skip {
			continue
		}
		req := kmsg.NewPtrOffsetCommitRequest()
		req.SetVersion(vOffsetCommit)
		req.Group, req.Generation, req.MemberID = g.name, g.generation, m.id
		resp := kmsg.NewPtrOffsetCommitResponse()
		for i, r := range m.assigned {
			tp := &g.topics[r.topic]
			if i == 0 || r.topic != m.assigned[i-1].topic {
				rt := kmsg.NewOffsetCommitRequestTopic()
				rt.Topic = tp.name
				req.Topics = append(req.Topics, rt)
				st := kmsg.NewOffsetCommitResponseTopic()
				st.Topic = tp.name
				resp.Topics = append(resp.Topics, st)
			}
			tp.offsets[r.p] += int64(1 + t.rng.IntN(500))
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = r.p, tp.offsets[r.p], -1
			rt := &req.Topics[len(req.Topics)-1]
			rt.Partitions = append(rt.Partitions, rp)
			sp := kmsg.NewOffsetCommitResponseTopicPartition()
			sp.Partition, sp.ErrorCode = r.p, errCode
			st := &resp.Topics[len(resp.Topics)-1]
			st.Partitions = append(st.Partitions, sp)
		}
		t.emit(m.c.exchange(req, resp, at.Add(t.jitter(50*time.Millisecond)), t.latency()))
	}
}

// topicID is a topic's id, derived from its name.
func topicID(name string) [16]byte {
	sum := sha256.Sum256([]byte(name))
	return [16]byte(sum[:16])
}
