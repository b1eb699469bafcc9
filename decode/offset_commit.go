package decode

// OffsetCommit (key 8), as kmsg knows it (v0-v10, flexible from v8):
//
//   v0: Group, Topics[Partitions{Partition, Offset, Metadata}]; response
//       per-partition ErrorCode (there is no top-level error).
//   v1: Generation and MemberID; per-partition commit Timestamp.
//   v2: RetentionTimeMillis replaces the per-partition Timestamp.
//   v3: response ThrottleMillis.
//   v4: same as v3 (throttling after the response).
//   v5: RetentionTimeMillis removed.
//   v6: per-partition LeaderEpoch (KIP-320).
//   v7: InstanceID (KIP-345).
//   v8: flexible.
//   v9: Generation may carry a KIP-848 member epoch.
//   v10: topics named by TopicID instead of name (KIP-848).
//   Kafka 4.0 removed v0-v1 (KIP-896); kmsg still reads them.

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// offsetCommitBlock holds an OffsetCommit and, in one allocation, the
// topics of a commit of up to two topics (most commits).
type offsetCommitBlock struct {
	c      OffsetCommit
	topics [2]CommitTopic
}

// decodeOffsetCommit reads reused structs whose strings alias the frames:
// it keeps copies (own). The partitions of all topics share one array,
// each topic's slice capped at its length (an append reallocates).
func decodeOffsetCommit(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.OffsetCommitRequest)
	e.Group = own(q.Group)
	blk := &offsetCommitBlock{c: OffsetCommit{MemberID: own(q.MemberID), InstanceID: ownPtr(q.InstanceID), Generation: q.Generation}}
	c := &blk.c
	switch n := len(q.Topics); {
	case n > len(blk.topics):
		c.Topics = make([]CommitTopic, n)
	case n > 0:
		c.Topics = blk.topics[:n:n]
	}
	total := 0
	for _, t := range q.Topics {
		total += len(t.Partitions)
	}
	parts := make([]CommitPartition, total)
	for i, t := range q.Topics {
		n := len(t.Partitions)
		ct := CommitTopic{Topic: own(t.Topic), TopicID: t.TopicID, Partitions: parts[:n:n]}
		parts = parts[n:]
		for j, p := range t.Partitions {
			ct.Partitions[j] = CommitPartition{
				Partition:   p.Partition,
				Offset:      p.Offset,
				LeaderEpoch: p.LeaderEpoch,
				Metadata:    ownPtr(p.Metadata),
			}
		}
		c.Topics[i] = ct
	}
	sortCommits(c.Topics)
	if p, ok := resp.(*kmsg.OffsetCommitResponse); ok {
		added := false
		for _, t := range p.Topics {
			for _, r := range t.Partitions {
				if !setCommitResult(c.Topics, t.Topic, t.TopicID, r.Partition, r.ErrorCode) {
					c.Topics = addCommitResult(c.Topics, own(t.Topic), t.TopicID, r.Partition, r.ErrorCode)
					added = true
				}
			}
		}
		if added {
			sortCommits(c.Topics)
		}
	}
	e.OffsetCommit = c
	return append(dst, e)
}

// sortCommits sorts topics and their partitions in place.
func sortCommits(ts []CommitTopic) {
	for i := range ts {
		slices.SortFunc(ts[i].Partitions, func(a, b CommitPartition) int {
			return cmp.Compare(a.Partition, b.Partition)
		})
	}
	slices.SortFunc(ts, func(a, b CommitTopic) int {
		return compareTopic(a.Topic, a.TopicID, b.Topic, b.TopicID)
	})
}

// setCommitResult records one partition's result on the committed
// partition it answers, found by binary search in the sorted topics. It
// reports false when no such partition was committed.
func setCommitResult(ts []CommitTopic, topic string, id TopicID, partition int32, code int16) bool {
	i, ok := slices.BinarySearchFunc(ts, 0, func(t CommitTopic, _ int) int {
		return compareTopic(t.Topic, t.TopicID, topic, id)
	})
	if !ok {
		return false
	}
	ps := ts[i].Partitions
	j, ok := slices.BinarySearchFunc(ps, partition, func(p CommitPartition, want int32) int {
		return cmp.Compare(p.Partition, want)
	})
	if !ok {
		return false
	}
	ps[j].ErrorCode = code
	return true
}

// addCommitResult keeps a result for a partition that was not committed
// as a partition of its own, with offset and leader epoch -1.
func addCommitResult(ts []CommitTopic, topic string, id TopicID, partition int32, code int16) []CommitTopic {
	p := CommitPartition{Partition: partition, Offset: -1, LeaderEpoch: -1, ErrorCode: code}
	for i := range ts {
		if ts[i].Topic == topic && ts[i].TopicID == id {
			ts[i].Partitions = append(ts[i].Partitions, p)
			return ts
		}
	}
	return append(ts, CommitTopic{Topic: topic, TopicID: id, Partitions: []CommitPartition{p}})
}
