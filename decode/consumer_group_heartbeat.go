package decode

// ConsumerGroupHeartbeat (key 68), the KIP-848 consumer group protocol, as
// kmsg knows it (v0-v1, always flexible):
//
//   v0: Group, MemberID, MemberEpoch (0 join, -1 leave, -2 static leave),
//       InstanceID, RackID, RebalanceTimeoutMillis, SubscribedTopicNames,
//       ServerAssignor, owned Topics by TopicID; null fields mean
//       "unchanged since the last heartbeat". Response ErrorCode,
//       ErrorMessage, MemberID, MemberEpoch, HeartbeatIntervalMillis,
//       Assignment (null when unchanged).
//   v1: SubscribedTopicRegex; the client generates its member id.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kmsg"
)

func decodeConsumerGroupHBeat(_ *Decoder, dst []Event, e Event, req kmsg.Request, resp kmsg.Response) []Event {
	q := req.(*kmsg.ConsumerGroupHeartbeatRequest)
	e.Group = q.Group
	h := &ConsumerGroupHeartbeat{
		MemberID:             q.MemberID,
		MemberEpoch:          q.MemberEpoch,
		InstanceID:           q.InstanceID,
		RackID:               q.RackID,
		SubscribedTopicNames: q.SubscribedTopicNames,
		SubscribedTopicRegex: q.SubscribedTopicRegex,
		ServerAssignor:       q.ServerAssignor,
	}
	slices.Sort(h.SubscribedTopicNames)
	if q.RebalanceTimeoutMillis > 0 {
		h.RebalanceTimeout = millis(q.RebalanceTimeoutMillis)
	}
	if q.Topics != nil {
		h.OwnedPartitions = make([]TopicIDPartitions, len(q.Topics))
		for i, t := range q.Topics {
			h.OwnedPartitions[i] = TopicIDPartitions{TopicID: t.TopicID, Partitions: t.Partitions}
		}
		sortTopicIDs(h.OwnedPartitions)
	}
	if p, ok := resp.(*kmsg.ConsumerGroupHeartbeatResponse); ok {
		h.ErrorCode = p.ErrorCode
		h.ErrorMessage = str(p.ErrorMessage)
		h.AssignedMemberID = str(p.MemberID)
		h.AssignedEpoch = p.MemberEpoch
		h.HeartbeatInterval = millis(p.HeartbeatIntervalMillis)
		if p.Assignment != nil {
			h.Assignment = make([]TopicIDPartitions, len(p.Assignment.Topics))
			for i, t := range p.Assignment.Topics {
				h.Assignment[i] = TopicIDPartitions{TopicID: t.TopicID, Partitions: t.Partitions}
			}
			sortTopicIDs(h.Assignment)
		}
	}
	e.ConsumerGroupHeartbeat = h
	return append(dst, e)
}
