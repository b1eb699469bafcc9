package decode

// OffsetFetch (key 9), as kmsg knows it (v0-v10, flexible from v6):
//
//   v0: Group, Topics[Partitions] (offsets in ZooKeeper); response
//       Topics[Partitions{Partition, Offset, Metadata, ErrorCode}].
//   v1: offsets stored in Kafka.
//   v2: null Topics means all topics; response top-level ErrorCode.
//   v3: response ThrottleMillis.
//   v4: same as v3 (throttling after the response).
//   v5: response per-partition LeaderEpoch.
//   v6: flexible.
//   v7: RequireStable (KIP-447).
//   v8: batched: Groups[{Group, Topics}] in request and response, each with
//       its own ErrorCode (KIP-709); one Event per group.
//   v9: per-group MemberID and MemberEpoch (KIP-848).
//   v10: topics named by TopicID instead of name.
//   Kafka 4.0 removed v0 (KIP-896); kmsg still reads it.

import (
	"cmp"
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func decodeOffsetFetch(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.OffsetFetchRequest)
	p, _ := resp.(*kmsg.OffsetFetchResponse)
	if q.Version < 8 {
		return append(dst, offsetFetchSingle(e, q, p))
	}
	return offsetFetchBatched(dst, e, q, p)
}

// offsetFetchSingle is the v0-v7 layout: one group.
func offsetFetchSingle(e Event, q *kmsg.OffsetFetchRequest, p *kmsg.OffsetFetchResponse) Event {
	e.Group = q.Group
	f := &OffsetFetch{MemberEpoch: -1}
	if q.Topics != nil {
		f.Requested = make([]TopicPartitions, len(q.Topics))
		for i, t := range q.Topics {
			f.Requested[i] = TopicPartitions{Topic: t.Topic, Partitions: t.Partitions}
		}
		sortTopics(f.Requested)
	}
	if p != nil {
		f.ErrorCode = p.ErrorCode
		if len(p.Topics) > 0 {
			f.Offsets = make([]FetchedTopic, len(p.Topics))
		}
		for i, t := range p.Topics {
			ft := FetchedTopic{Topic: t.Topic, Partitions: make([]FetchedPartition, len(t.Partitions))}
			for j, r := range t.Partitions {
				ft.Partitions[j] = FetchedPartition{Partition: r.Partition, Offset: r.Offset, ErrorCode: r.ErrorCode}
			}
			f.Offsets[i] = ft
		}
		sortFetched(f.Offsets)
	}
	e.OffsetFetch = f
	return e
}

// offsetFetchBatched is the v8+ layout: one Event per requested group, in
// request order, answered by the response's group of the same name,
// appended to dst.
func offsetFetchBatched(dst []Event, base Event, q *kmsg.OffsetFetchRequest, p *kmsg.OffsetFetchResponse) []Event {
	events := dst
	for _, g := range q.Groups {
		e := base
		e.Group = g.Group
		f := &OffsetFetch{MemberID: str(g.MemberID), MemberEpoch: g.MemberEpoch}
		if g.Topics != nil {
			f.Requested = make([]TopicPartitions, len(g.Topics))
			for i, t := range g.Topics {
				f.Requested[i] = TopicPartitions{Topic: t.Topic, TopicID: t.TopicID, Partitions: t.Partitions}
			}
			sortTopics(f.Requested)
		}
		if p != nil {
			if r := responseGroup(p.Groups, g.Group); r != nil {
				f.ErrorCode = r.ErrorCode
				f.Offsets = fetchedTopics(r.Topics)
			}
		}
		e.OffsetFetch = f
		events = append(events, e)
	}
	return events
}

// responseGroup finds a group's answer in a batched response, or nil.
func responseGroup(gs []kmsg.OffsetFetchResponseGroup, group string) *kmsg.OffsetFetchResponseGroup {
	for i := range gs {
		if gs[i].Group == group {
			return &gs[i]
		}
	}
	return nil
}

// fetchedTopics converts one group's offsets from a batched response.
func fetchedTopics(ts []kmsg.OffsetFetchResponseGroupTopic) []FetchedTopic {
	if len(ts) == 0 {
		return nil
	}
	out := make([]FetchedTopic, len(ts))
	for i, t := range ts {
		ft := FetchedTopic{Topic: t.Topic, TopicID: t.TopicID, Partitions: make([]FetchedPartition, len(t.Partitions))}
		for j, r := range t.Partitions {
			ft.Partitions[j] = FetchedPartition{Partition: r.Partition, Offset: r.Offset, ErrorCode: r.ErrorCode}
		}
		out[i] = ft
	}
	sortFetched(out)
	return out
}

// sortFetched sorts topics and their partitions in place.
func sortFetched(ts []FetchedTopic) {
	for i := range ts {
		slices.SortFunc(ts[i].Partitions, func(a, b FetchedPartition) int {
			return cmp.Compare(a.Partition, b.Partition)
		})
	}
	slices.SortFunc(ts, func(a, b FetchedTopic) int {
		return compareTopic(a.Topic, a.TopicID, b.Topic, b.TopicID)
	})
}
