package synth

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// partitionRef is one partition of a group's topic.
type partitionRef struct {
	topic int32 // index in group.topics
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
			all = append(all, partitionRef{int32(i), p})
		}
	}
	n := len(g.members)
	share := (len(all) + n - 1) / n
	owner := map[partitionRef]*member{}
	if g.protocol == "cooperative-sticky" {
		for _, m := range g.members {
			for _, r := range m.assigned {
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
		rs := target[m]
		slices.SortFunc(rs, func(a, b partitionRef) int {
			return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.p, b.p))
		})
		m.assigned = slices.Clone(rs) // without append's spare room
	}
	return revoker
}

// topicsOf groups partitions, in topic and partition order, by topic.
func (g *group) topicsOf(rs []partitionRef) []kmsg.ConsumerMemberAssignmentTopic {
	var ts []kmsg.ConsumerMemberAssignmentTopic
	for i, r := range rs {
		if i == 0 || r.topic != rs[i-1].topic {
			a := kmsg.NewConsumerMemberAssignmentTopic()
			a.Topic = g.topics[r.topic].name
			ts = append(ts, a)
		}
		ts[len(ts)-1].Partitions = append(ts[len(ts)-1].Partitions, r.p)
	}
	return ts
}
