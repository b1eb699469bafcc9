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
// topics of a commit of up to two topics (most commits); its partitions
// get an array of their own.
type offsetCommitBlock struct {
	c      OffsetCommit
	topics [2]CommitTopic
}

// onePartCommit and twoPartCommit hold a commit of one partition, or two
// of up to two topics, whole in one allocation: over half the commits, at
// no more bytes than a block and an array. Larger blocks cost more in
// collections than the allocations they saved (docs/benchmarks.md,
// Replay).
type onePartCommit struct {
	c      OffsetCommit
	topics [1]CommitTopic
	parts  [1]CommitPartition
}

type twoPartCommit struct {
	c      OffsetCommit
	topics [2]CommitTopic
	parts  [2]CommitPartition
}

// decodeOffsetCommit reads reused structs whose strings alias the frames:
// it keeps copies (copier), all in one allocation. The partitions of all
// topics share one array, each topic's slice capped at its length (an
// append reallocates). Structs are filled field by field where they lie,
// the event too (appended first): a struct built whole and then copied
// is loaded right after its fields were stored, and the loads wait for
// the stores (a store-to-load forwarding stall).
func decodeOffsetCommit(d *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.OffsetCommitRequest)
	dst = append(dst, e)
	ev := &dst[len(dst)-1]
	total, strs := 0, len(q.Group)+len(q.MemberID)+lenPtr(q.InstanceID)
	for i := range q.Topics {
		t := &q.Topics[i]
		total += len(t.Partitions)
		strs += len(t.Topic)
		for j := range t.Partitions {
			strs += lenPtr(t.Partitions[j].Metadata)
		}
	}
	var sc copier
	sc.grow(strs)
	ev.Group = sc.own(q.Group)
	var c *OffsetCommit
	var topics []CommitTopic // the block's, for up to its number of topics
	var parts []CommitPartition
	switch n := len(q.Topics); {
	case total == 1 && n == 1:
		b := new(onePartCommit)
		c, topics, parts = &b.c, b.topics[:], b.parts[:]
	case total == 2 && n <= 2:
		b := new(twoPartCommit)
		c, topics, parts = &b.c, b.topics[:], b.parts[:]
	default:
		b := new(offsetCommitBlock)
		c, topics, parts = &b.c, b.topics[:], make([]CommitPartition, total)
	}
	c.MemberID = sc.own(q.MemberID)
	c.InstanceID = sc.ownPtr(q.InstanceID)
	c.Generation = q.Generation
	switch n := len(q.Topics); {
	case n > len(topics):
		c.Topics = make([]CommitTopic, n)
	case n > 0:
		c.Topics = topics[:n:n]
	}
	for i := range q.Topics {
		t := &q.Topics[i]
		n := len(t.Partitions)
		ct := &c.Topics[i]
		ct.Topic = sc.own(t.Topic)
		ct.TopicID = t.TopicID
		ct.Partitions = parts[:n:n]
		parts = parts[n:]
		for j := range t.Partitions {
			p, cp := &t.Partitions[j], &ct.Partitions[j]
			cp.Partition = p.Partition
			cp.Offset = p.Offset
			cp.LeaderEpoch = p.LeaderEpoch
			cp.Metadata = sc.ownPtr(p.Metadata)
		}
	}
	sortCommits(c.Topics)
	if p, ok := resp.(*kmsg.OffsetCommitResponse); ok {
		added := false
		var at commitHint
		for ti := range p.Topics {
			t := &p.Topics[ti]
			for ri := range t.Partitions {
				r := &t.Partitions[ri]
				i, j, ok := 0, 0, false
				if !added { // the topics stay sorted until a result is added
					i, j, ok = at.find(c.Topics, t.Topic, t.TopicID, r.Partition)
				}
				if !ok {
					i, j, ok = searchCommit(c.Topics, t.Topic, t.TopicID, r.Partition)
				}
				if !ok {
					c.Topics = addCommitResult(c.Topics, own(t.Topic), t.TopicID, r.Partition, r.ErrorCode)
					added = true
					continue
				}
				c.Topics[i].Partitions[j].ErrorCode = r.ErrorCode
				at = commitHint{i, j + 1}
			}
		}
		if added {
			sortCommits(c.Topics)
		}
	}
	ev.OffsetCommit = c
	return dst
}

// sortCommits sorts topics and their partitions in place. Most commits
// come sorted, and a strictly increasing list is left as it is (which is
// what sorting it gives).
func sortCommits(ts []CommitTopic) {
	for i := range ts {
		ps := ts[i].Partitions
		sorted := true
		for j := 1; j < len(ps) && sorted; j++ {
			sorted = ps[j-1].Partition < ps[j].Partition
		}
		if !sorted {
			slices.SortFunc(ps, func(a, b CommitPartition) int {
				return cmp.Compare(a.Partition, b.Partition)
			})
		}
	}
	for i := 1; i < len(ts); i++ {
		if compareTopic(ts[i-1].Topic, ts[i-1].TopicID, ts[i].Topic, ts[i].TopicID) >= 0 {
			slices.SortFunc(ts, func(a, b CommitTopic) int {
				return compareTopic(a.Topic, a.TopicID, b.Topic, b.TopicID)
			})
			return
		}
	}
}

// commitHint is just after the committed partition whose result was set
// last. A response usually lists the committed topics and partitions in
// the order of the sorted request, so the next result is usually there.
type commitHint struct{ t, p int }

// find returns the committed partition at the hint, or the first of the
// next topic, when it is the one a result for topic and partition answers
// and is the first such in the sorted topics (what searchCommit finds).
func (h commitHint) find(ts []CommitTopic, topic string, id TopicID, partition int32) (int, int, bool) {
	i, j := h.t, h.p
	if i < len(ts) && j == len(ts[i].Partitions) {
		i, j = i+1, 0
	}
	if i >= len(ts) || j >= len(ts[i].Partitions) {
		return 0, 0, false
	}
	t := &ts[i]
	if t.Partitions[j].Partition != partition || t.Topic != topic || t.TopicID != id {
		return 0, 0, false
	}
	if j > 0 && t.Partitions[j-1].Partition == partition ||
		i > 0 && ts[i-1].Topic == topic && ts[i-1].TopicID == id {
		return 0, 0, false // an equal one comes first
	}
	return i, j, true
}

// searchCommit finds the committed partition a result for topic and
// partition answers by binary search in the sorted topics, the first of
// equal ones. It reports false when no such partition was committed.
func searchCommit(ts []CommitTopic, topic string, id TopicID, partition int32) (int, int, bool) {
	i, ok := slices.BinarySearchFunc(ts, 0, func(t CommitTopic, _ int) int {
		return compareTopic(t.Topic, t.TopicID, topic, id)
	})
	if !ok {
		return 0, 0, false
	}
	j, ok := slices.BinarySearchFunc(ts[i].Partitions, partition, func(p CommitPartition, want int32) int {
		return cmp.Compare(p.Partition, want)
	})
	return i, j, ok
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
