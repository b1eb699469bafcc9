package decode

// The consumer protocol (protocol type "consumer") embedded in JoinGroup
// and SyncGroup, decoded with kmsg:
//
//   ConsumerProtocolSubscription (kmsg.ConsumerMemberMetadata): int16
//   version; v0 Topics, UserData; v1 OwnedPartitions (KIP-429); v2
//   GenerationID (KIP-792); v3 RackID (KIP-881).
//   ConsumerProtocolAssignment (kmsg.ConsumerMemberAssignment): int16
//   version, AssignedPartitions, UserData. Zero bytes is a valid, empty
//   assignment.
//   Sticky assignors' UserData (kmsg.StickyMemberMetadata, unversioned):
//   the member's current assignment and, since KIP-341, its generation.
//   Apache Kafka's cooperative-sticky assignor instead writes 4 bytes: only
//   its generation (CooperativeStickyAssignor
//   COOPERATIVE_STICKY_ASSIGNOR_USER_DATA_V0); kmsg has no type for it.
//   Kafka Streams' "stream" assignor's UserData: see streams_userdata.go.

import (
	"slices"

	"github.com/twmb/franz-go/pkg/kbin"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// Assignor names whose UserData is sticky metadata.
const (
	assignorSticky            = "sticky"
	assignorCooperativeSticky = "cooperative-sticky"
)

// decodeSubscription decodes consumer protocol metadata, or returns nil.
// b must not be shared with the exchange: UserData aliases it.
func decodeSubscription(assignor string, b []byte) *Subscription {
	var m kmsg.ConsumerMemberMetadata
	if err := m.ReadFrom(b); err != nil {
		return nil
	}
	slices.Sort(m.Topics)
	s := &Subscription{
		Version:    m.Version,
		Topics:     m.Topics,
		Generation: m.Generation,
		Rack:       str(m.Rack),
		UserData:   m.UserData,
		Sticky:     decodeSticky(assignor, m.UserData),
	}
	if assignor == AssignorStreams {
		s.Streams = decodeStreamsSubscription(m.UserData)
	}
	if m.OwnedPartitions != nil {
		s.OwnedPartitions = make([]TopicPartitions, len(m.OwnedPartitions))
		for i, o := range m.OwnedPartitions {
			s.OwnedPartitions[i] = TopicPartitions{Topic: o.Topic, Partitions: o.Partitions}
		}
		sortTopics(s.OwnedPartitions)
	}
	return s
}

// decodeSticky decodes the sticky assignors' UserData, or returns nil when
// the assignor is not sticky or the bytes do not decode.
func decodeSticky(assignor string, userData []byte) *StickyUserData {
	if assignor != assignorSticky && assignor != assignorCooperativeSticky || len(userData) == 0 {
		return nil
	}
	if assignor == assignorCooperativeSticky && len(userData) == 4 {
		r := kbin.Reader{Src: userData}
		return &StickyUserData{Generation: r.Int32()}
	}
	var m kmsg.StickyMemberMetadata
	if err := m.ReadFrom(userData); err != nil {
		return nil
	}
	s := &StickyUserData{Generation: m.Generation}
	if len(m.CurrentAssignment) > 0 {
		s.CurrentAssignment = make([]TopicPartitions, len(m.CurrentAssignment))
		for i, a := range m.CurrentAssignment {
			s.CurrentAssignment[i] = TopicPartitions{Topic: a.Topic, Partitions: a.Partitions}
		}
		sortTopics(s.CurrentAssignment)
	}
	return s
}

// decodeAssignment decodes a consumer protocol assignment, or returns nil.
// Zero bytes decode to an empty assignment: the member gets nothing. The
// assignor names the UserData's layout ("" unknown).
func decodeAssignment(assignor string, b []byte) *Assignment {
	if len(b) == 0 {
		return &Assignment{}
	}
	var m kmsg.ConsumerMemberAssignment
	if err := m.ReadFrom(b); err != nil {
		return nil
	}
	a := &Assignment{
		Version:    m.Version,
		Partitions: make([]TopicPartitions, len(m.Topics)),
		UserData:   m.UserData,
	}
	for i, t := range m.Topics {
		a.Partitions[i] = TopicPartitions{Topic: t.Topic, Partitions: t.Partitions}
	}
	sortTopics(a.Partitions)
	if assignor == AssignorStreams {
		a.Streams = decodeStreamsAssignment(m.UserData)
	}
	return a
}
