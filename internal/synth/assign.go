package synth

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionRef is one partition of a group's topic.
type partitionRef struct {
	topic int // index in group.topics
	p     int32
}

// plan assigns the group's partitions to its members. When partitions are
// withheld for a cooperative follow-up rebalance it returns the first
// member that revoked some, which starts the follow-up; else nil.
//
// Eager assignors (range, roundrobin) deal every partition round robin
// over the members. cooperative-sticky balances the partitions but lets
// each member keep what it owned, up to its share; a partition that moves
// from a member still in the group is withheld in this round (its owner
// revokes it) and assigned in the follow-up.
func (g *group) plan() (revoker *member) {
	var all []partitionRef
	for i, tp := range g.topics {
		for p := range tp.partitions {
			all = append(all, partitionRef{i, p})
		}
	}
	n := len(g.members)
	share := (len(all) + n - 1) / n
	owner := map[partitionRef]*member{}
	if g.protocol == "cooperative-sticky" {
		for _, m := range g.members {
			for _, r := range g.refs(m) {
				owner[r] = m
			}
		}
	}
	target := make(map[*member][]partitionRef, n)
	var free []partitionRef
	for _, r := range all {
		if o := owner[r]; o != nil && len(target[o]) < share {
			target[o] = append(target[o], r)
			continue
		}
		free = append(free, r)
	}
	k := 0
	for _, r := range free {
		// The next member, round robin, with room under its share.
		for len(target[g.members[k%n]]) >= share {
			k++
		}
		m := g.members[k%n]
		k++
		if o := owner[r]; o != nil && o != m {
			// Its owner revokes it first.
			if revoker == nil || slices.Index(g.members, o) < slices.Index(g.members, revoker) {
				revoker = o
			}
			continue
		}
		target[m] = append(target[m], r)
	}
	for _, m := range g.members {
		m.assigned = g.topicsOf(target[m])
	}
	return revoker
}

// refs lists the partitions m is assigned.
func (g *group) refs(m *member) []partitionRef {
	var rs []partitionRef
	for _, a := range m.assigned {
		i := slices.IndexFunc(g.topics, func(tp topic) bool { return tp.name == a.Topic })
		for _, p := range a.Partitions {
			rs = append(rs, partitionRef{i, p})
		}
	}
	return rs
}

// topicsOf groups partitions by topic, in topic and partition order.
func (g *group) topicsOf(rs []partitionRef) []kmsg.ConsumerMemberAssignmentTopic {
	slices.SortFunc(rs, func(a, b partitionRef) int {
		if a.topic != b.topic {
			return a.topic - b.topic
		}
		return int(a.p - b.p)
	})
	var ts []kmsg.ConsumerMemberAssignmentTopic
	for _, r := range rs {
		if n := len(ts); n == 0 || ts[n-1].Topic != g.topics[r.topic].name {
			a := kmsg.NewConsumerMemberAssignmentTopic()
			a.Topic = g.topics[r.topic].name
			ts = append(ts, a)
		}
		ts[len(ts)-1].Partitions = append(ts[len(ts)-1].Partitions, r.p)
	}
	return ts
}
