package decode

// Metadata (key 3), as kmsg knows it (v0-v13, flexible from v9). Only the
// response's topics are decoded: names, ids, partition counts and errors,
// so that KIP-848 assignments by topic id can be named.
//
//   v0: Topics by name (empty means all); response Brokers, Topics.
//   v1: null Topics means all; IsInternal, ControllerID, broker Rack.
//   v2: ClusterID.
//   v3: ThrottleMillis.
//   v4: AllowAutoTopicCreation.
//   v5: OfflineReplicas.
//   v6: same as v5 (throttling after the response).
//   v7: partition LeaderEpoch.
//   v8: authorized operations.
//   v9: flexible.
//   v10: TopicID per topic (KIP-516).
//   v11: cluster authorized operations removed.
//   v12: topics may be requested by id; topic names nullable.
//   v13: top-level ErrorCode (rebootstrap, KIP-1102).

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// decodeMetadata reads reused structs whose strings alias the frames: it
// keeps copies (own).
func decodeMetadata(d *Decoder, dst []Event, e Event, _ kmsg.Request, resp kmsg.Response) []Event {
	m := &Metadata{}
	if p, ok := resp.(*kmsg.MetadataResponse); ok && len(p.Topics) > 0 {
		m.Topics = make([]MetadataTopic, len(p.Topics))
		for i, t := range p.Topics {
			m.Topics[i] = MetadataTopic{
				Name:       ownPtr(t.Topic),
				TopicID:    t.TopicID,
				Partitions: int32(len(t.Partitions)),
				ErrorCode:  t.ErrorCode,
			}
		}
		slices.SortFunc(m.Topics, func(a, b MetadataTopic) int {
			return compareTopic(a.Name, a.TopicID, b.Name, b.TopicID)
		})
	}
	e.Metadata = m
	return append(dst, e)
}
