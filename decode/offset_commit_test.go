package decode

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// TestOffsetCommitShapes decodes random commits (up to five topics, some
// named twice, of up to nine partitions, some listed twice, in any order)
// and random responses (in the request's sorted order, shuffled, missing
// results, results for partitions not committed) and checks each event
// against a plain decoding: copy, sort everything, find each result by
// binary search. The decoder's shortcuts (one block for small commits,
// sorted lists left alone, results found in request order) must not show.
func TestOffsetCommitShapes(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	d := NewDecoder()
	for n := range 3000 {
		req := kmsg.NewPtrOffsetCommitRequest()
		req.Group, req.Generation, req.MemberID = group, 5, memberA
		if rng.IntN(3) == 0 {
			req.InstanceID = ptr("instance-a")
		}
		resp := kmsg.NewPtrOffsetCommitResponse()
		for range rng.IntN(6) {
			topic := fmt.Sprintf("t%d", rng.IntN(4))
			rt := kmsg.OffsetCommitRequestTopic{Topic: topic}
			var rs []kmsg.OffsetCommitResponseTopicPartition
			for range rng.IntN(10) {
				p := kmsg.NewOffsetCommitRequestTopicPartition()
				p.Partition, p.Offset, p.LeaderEpoch = int32(rng.IntN(12)), rng.Int64N(1000), 3
				if rng.IntN(4) == 0 {
					p.Metadata = ptr(fmt.Sprintf("m%d", rng.IntN(100)))
				}
				rt.Partitions = append(rt.Partitions, p)
				if rng.IntN(8) != 0 {
					rs = append(rs, kmsg.OffsetCommitResponseTopicPartition{Partition: p.Partition, ErrorCode: int16(rng.IntN(30))})
				}
			}
			if rng.IntN(8) == 0 {
				rs = append(rs, kmsg.OffsetCommitResponseTopicPartition{Partition: 20, ErrorCode: 3})
			}
			if rng.IntN(2) == 0 { // most requests come sorted
				slices.SortFunc(rt.Partitions, func(a, b kmsg.OffsetCommitRequestTopicPartition) int {
					return cmp.Compare(a.Partition, b.Partition)
				})
				slices.SortFunc(rs, func(a, b kmsg.OffsetCommitResponseTopicPartition) int {
					return cmp.Compare(a.Partition, b.Partition)
				})
			} else {
				rng.Shuffle(len(rs), func(i, j int) { rs[i], rs[j] = rs[j], rs[i] })
			}
			req.Topics = append(req.Topics, rt)
			resp.Topics = append(resp.Topics, kmsg.OffsetCommitResponseTopic{Topic: topic, Partitions: rs})
		}
		if rng.IntN(2) == 0 {
			slices.SortStableFunc(req.Topics, func(a, b kmsg.OffsetCommitRequestTopic) int { return cmp.Compare(a.Topic, b.Topic) })
			slices.SortStableFunc(resp.Topics, func(a, b kmsg.OffsetCommitResponseTopic) int { return cmp.Compare(a.Topic, b.Topic) })
		} else {
			rng.Shuffle(len(resp.Topics), func(i, j int) { resp.Topics[i], resp.Topics[j] = resp.Topics[j], resp.Topics[i] })
		}
		v := int16(2 + rng.IntN(8)) // v2-v9: topics by name
		evs, err := d.Decode(exchange(at(req, v), resp))
		if err != nil {
			t.Fatalf("commit %d: %v", n, err)
		}
		if len(evs) != 1 {
			t.Fatalf("commit %d: %d events; want 1", n, len(evs))
		}
		want := plainOffsetCommit(req, resp, v)
		if got := evs[0].OffsetCommit; !reflect.DeepEqual(got, want) {
			t.Fatalf("commit %d v%d:\n got %+v\nwant %+v", n, v, got, want)
		}
	}
}

// plainOffsetCommit is the OffsetCommit event of req and resp, the
// straightforward way, as decodeOffsetCommit did before its shortcuts
// (its sorts are not stable: partitions listed twice stay in the order
// slices.SortFunc leaves them in).
func plainOffsetCommit(req *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, v int16) *OffsetCommit {
	c := &OffsetCommit{MemberID: req.MemberID, Generation: req.Generation}
	if req.InstanceID != nil && v >= 7 {
		c.InstanceID = *req.InstanceID
	}
	for _, t := range req.Topics {
		ct := CommitTopic{Topic: t.Topic, Partitions: []CommitPartition{}}
		for _, p := range t.Partitions {
			cp := CommitPartition{Partition: p.Partition, Offset: p.Offset, LeaderEpoch: -1}
			if v >= 6 {
				cp.LeaderEpoch = p.LeaderEpoch
			}
			if p.Metadata != nil {
				cp.Metadata = *p.Metadata
			}
			ct.Partitions = append(ct.Partitions, cp)
		}
		c.Topics = append(c.Topics, ct)
	}
	sortAll := func() {
		for _, t := range c.Topics {
			slices.SortFunc(t.Partitions, func(a, b CommitPartition) int { return cmp.Compare(a.Partition, b.Partition) })
		}
		slices.SortFunc(c.Topics, func(a, b CommitTopic) int { return cmp.Compare(a.Topic, b.Topic) })
	}
	sortAll()
	added := false
	for _, t := range resp.Topics {
		for _, r := range t.Partitions {
			i, ok := slices.BinarySearchFunc(c.Topics, t.Topic, func(ct CommitTopic, name string) int { return cmp.Compare(ct.Topic, name) })
			if ok {
				var j int
				if j, ok = slices.BinarySearchFunc(c.Topics[i].Partitions, r.Partition, func(p CommitPartition, want int32) int {
					return cmp.Compare(p.Partition, want)
				}); ok {
					c.Topics[i].Partitions[j].ErrorCode = r.ErrorCode
					continue
				}
			}
			added = true
			p := CommitPartition{Partition: r.Partition, Offset: -1, LeaderEpoch: -1, ErrorCode: r.ErrorCode}
			if k := slices.IndexFunc(c.Topics, func(ct CommitTopic) bool { return ct.Topic == t.Topic }); k >= 0 {
				c.Topics[k].Partitions = append(c.Topics[k].Partitions, p)
			} else {
				c.Topics = append(c.Topics, CommitTopic{Topic: t.Topic, Partitions: []CommitPartition{p}})
			}
		}
	}
	if added {
		sortAll()
	}
	return c
}
