package timeline

import (
	"iter"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// What the timeline knows now of a group's members, of who owns what and
// of what was committed, and of topics: the facts the diagnosis asks about
// as it takes each exchange, typed. One goroutine owns the engine: these
// are for it, like the rest of the engine.

// MemberFacts is what the timeline knows of one member of a group,
// classic or KIP-848.
type MemberFacts struct {
	MemberID   string
	InstanceID string // group.instance.id; "" for dynamic members
	ClientID   string // the client id of its latest requests
	ClientAddr string // the client's address, on its connection to the coordinator
	// Rack is the rack it says it runs in: its subscription's (KIP-881)
	// or its KIP-848 heartbeat's RackId; "" when it names none.
	Rack string
	// SessionTimeout and RebalanceTimeout are those of its latest
	// JoinGroup; 0 unknown. A KIP-848 member's rebalance timeout is the
	// RebalanceTimeoutMs of its latest heartbeat that carried one; its
	// session timeout is the broker's, not on the wire: 0 (see
	// ConsumerMemberView for the bounds inferred when it expired).
	SessionTimeout, RebalanceTimeout time.Duration
	// LastAlive is the time of its latest request the coordinator
	// accepted (KIP-848: its latest heartbeat answered without error); zero
	// none.
	LastAlive time.Time
	// Gone is set once it left, its session expired (inferred), it was not
	// in a new generation, it was fenced, replaced by a static member back
	// under a new member id, or the coordinator no longer knew it; a member heard from again after
	// an inferred expiry is not gone.
	Gone bool
}

// Member is what the timeline knows of member id of group: the classic
// member registry, else the group's KIP-848 members. ok is false when it
// knows nothing of it.
func (e *Engine) Member(group, id string) (MemberFacts, bool) {
	g := e.byID[group]
	if g == nil || id == "" {
		return MemberFacts{}, false
	}
	if g.dormant != nil {
		return g.dormant.member(id)
	}
	lm := g.live[id]
	var cm *cmember
	if g.consumer != nil {
		cm = g.consumer.members[id]
	}
	switch {
	case lm != nil && (cm == nil || lm.sessionTimeout() > 0):
		return lm.facts(), true
	case cm != nil:
		// A KIP-848 member's commits (OffsetCommit names its member id)
		// also enter it in the classic registry, without a JoinGroup:
		// its heartbeats are the facts.
		return cm.facts(), true
	}
	return MemberFacts{}, false
}

// Members yields every member the timeline knows of in group, classic
// then KIP-848, in no particular order.
func (e *Engine) Members(group string) iter.Seq[MemberFacts] {
	return func(yield func(MemberFacts) bool) {
		g := e.byID[group]
		if g == nil {
			return
		}
		if g.dormant != nil {
			for _, m := range g.dormant.members {
				if !yield(m) {
					return
				}
			}
			return
		}
		for _, lm := range g.live {
			if !yield(lm.facts()) {
				return
			}
		}
		if g.consumer != nil {
			for id, cm := range g.consumer.members {
				if g.live[id] == nil && !yield(cm.facts()) {
					return
				}
			}
		}
	}
}

func (lm *liveMember) facts() MemberFacts {
	return MemberFacts{MemberID: lm.id, InstanceID: lm.instanceID, ClientID: lm.clientID, ClientAddr: lm.clientAddr, Rack: lm.rack,
		SessionTimeout: lm.sessionTimeout(), RebalanceTimeout: lm.rebalanceTimeout(), LastAlive: lm.lastAlive(), Gone: lm.gone}
}

func (cm *cmember) facts() MemberFacts {
	return MemberFacts{MemberID: cm.id, InstanceID: cm.instanceID, ClientID: cm.clientID, ClientAddr: cm.clientAddr, Rack: cm.rack,
		RebalanceTimeout: cm.rebalanceTimeout, LastAlive: cm.lastAt, Gone: !cm.active}
}

// joinRack is the rack a JoinGroup's subscriptions name, the first of its
// protocols that names one; "" none.
func joinRack(jg *decode.JoinGroup) string {
	for _, p := range jg.Protocols {
		if p.Subscription != nil && p.Subscription.Rack != "" {
			return p.Subscription.Rack
		}
	}
	return ""
}

// OwnerBefore is who owned partition part of topic in group before member
// id's assignment in generation num: the member id replaced in num (a
// static restart, KIP-345) when it held the partition, else the
// partition's owner in the latest kept generation before num that
// assigned it to anyone; "" when none is known.
func (e *Engine) OwnerBefore(group string, num int32, id, topic string, part int32) string {
	g := e.byID[group]
	if g == nil {
		return ""
	}
	if gen := g.numbered(num); gen != nil && gen.frozen != nil {
		ms := g.frozenBlock().members(gen)
		if m := frozenMemberIn(ms, id); m != nil && m.replaces != "" {
			if old := frozenMemberIn(ms, m.replaces); old != nil && old.owned.has(topic, part) {
				return m.replaces
			}
		}
	} else if gen != nil {
		if m := gen.members[id]; m != nil && m.more().replaces != "" {
			if old := gen.members[m.more().replaces]; old != nil && old.resolved().has(topic, part) {
				return m.more().replaces
			}
		}
	}
	for i := len(g.gens) - 1; i >= 0; i-- {
		gen := g.gens[i]
		if gen.num >= num {
			continue
		}
		if owner := g.ownerIn(gen, topic, part); owner != "" {
			return owner
		}
	}
	return ""
}

// Committed is the last offset committed for partition part of topic in
// group, as its commits (a transactional one once its transaction
// committed) and offset fetches say; ok is false when none is known.
func (e *Engine) Committed(group, topic string, part int32) (offset int64, ok bool) {
	g := e.byID[group]
	if g == nil {
		return 0, false
	}
	co, ok := g.commitTopics[topic].lastCommitted(part)
	return co.offset, ok
}

// TopicName names a topic carried by name or, from KIP-848 on, by id: the
// name when a Metadata answer gave it, else the id's key ("#" and the id
// in Kafka's text form), as the timeline names it everywhere.
func (e *Engine) TopicName(name string, id decode.TopicID) string { return e.topics.topic(name, id) }

// PartitionCount is the topic's partition count from the latest Metadata
// answer that gave it; 0 unknown.
func (e *Engine) PartitionCount(topic string) int32 { return e.topics.count(topic) }

// Member is the engine's Member.
func (l *Live) Member(group, id string) (MemberFacts, bool) { return l.e.Member(group, id) }

// Members is the engine's Members.
func (l *Live) Members(group string) iter.Seq[MemberFacts] { return l.e.Members(group) }

// OwnerBefore is the engine's OwnerBefore.
func (l *Live) OwnerBefore(group string, num int32, id, topic string, part int32) string {
	return l.e.OwnerBefore(group, num, id, topic, part)
}

// Committed is the engine's Committed.
func (l *Live) Committed(group, topic string, part int32) (int64, bool) {
	return l.e.Committed(group, topic, part)
}

// TopicName is the engine's TopicName.
func (l *Live) TopicName(name string, id decode.TopicID) string { return l.e.TopicName(name, id) }

// PartitionCount is the engine's PartitionCount.
func (l *Live) PartitionCount(topic string) int32 { return l.e.PartitionCount(topic) }
