package decode

// Kafka Streams on the classic protocol: a consumer group (protocol type
// "consumer") whose only assignor is "stream". The consumer protocol's
// UserData carries Streams' own versioned formats (Apache Kafka,
// streams/.../processor/internals/assignment):
//
//   SubscriptionInfo (SubscriptionInfoData.json, a non-flexible message,
//   versions 1-11): int32 version; v3+ int32 latestSupportedVersion; uuid
//   processId; v1-6 prevTasks and standbyTasks ([]TaskId: int32
//   topicGroupId, int32 partition); v2+ bytes userEndPoint; v7+
//   taskOffsetSums (v7-9: int32 topicGroupId, []{int32 partition, int64
//   offsetSum}; v10+: int32 topicGroupId, int32 partition, int64
//   offsetSum, nullable string namedTopology); v8+ int8 uniqueField; v9+
//   int32 errorCode; v11+ clientTags ([]{bytes key, bytes value}).
//   AssignmentInfo (hand-written DataOutputStream layout): int32 version;
//   v3+ int32 commonlySupportedVersion; active tasks (int32 count, TaskIds
//   in the order of the assigned partitions: the i-th goes with the i-th
//   partition); standby tasks (int32 count, each a TaskId and its
//   partitions); v2+ the partitions by host (v2-4 plain, v5 with a topic
//   dictionary, v6+ active and standby with one dictionary); v4+ int32
//   errorCode; v7+ int64 nextRebalanceMs (KIP-441: when the member must
//   rejoin to probe whether warm-up tasks caught up; 0 at once, the
//   maximum int64 never).
//   A TaskId in AssignmentInfo is int32 topicGroupId, int32 partition and,
//   v10+, the named topology as an int32 count of UTF-16 chars.
//
// A version newer than the fields known here is read as far as they go:
// Streams adds fields at the end.

import (
	"encoding/binary"
	"fmt"
	"strconv"
	"unicode/utf16"

	"github.com/twmb/franz-go/pkg/kbin"
)

// AssignorStreams is the name of Kafka Streams' classic-protocol assignor.
const AssignorStreams = "stream"

// Highest SubscriptionInfo and AssignmentInfo versions whose fields are all
// read; a newer one is read up to these fields.
const (
	streamsSubscriptionLatest = 11
	streamsAssignmentLatest   = 11
)

// StreamsNoRebalance is AssignmentInfo's nextRebalanceMs when no follow-up
// rebalance is scheduled (Java's Long.MAX_VALUE).
const StreamsNoRebalance = int64(1<<63 - 1)

// StreamsTaskID is a Kafka Streams task: a subtopology (topic group) and a
// partition, and the named topology it belongs to ("" for none).
type StreamsTaskID struct {
	Subtopology int32
	Partition   int32
	Topology    string `json:",omitempty"`
}

// String is the task as Streams names it: "0_1", or "name__0_1" in a named
// topology.
func (t StreamsTaskID) String() string {
	s := strconv.Itoa(int(t.Subtopology)) + "_" + strconv.Itoa(int(t.Partition))
	if t.Topology != "" {
		return t.Topology + "__" + s
	}
	return s
}

// StreamsTaskOffsetSum is a task's offset sum (SubscriptionInfo v7+): the
// sum of its changelog offsets in the member's local state, -2 for an
// active running task (Task.LATEST_OFFSET).
type StreamsTaskOffsetSum struct {
	Task      StreamsTaskID
	OffsetSum int64
}

// StreamsSubscriptionInfo is Kafka Streams' SubscriptionInfo, the UserData of
// a "stream" member's subscription.
type StreamsSubscriptionInfo struct {
	Version                int32
	LatestSupportedVersion int32  // v3+; -1 before
	ProcessID              string // the instance's process UUID
	PrevActive             []StreamsTaskID
	PrevStandby            []StreamsTaskID        // v1-6: what it ran before
	UserEndpoint           string                 // v2+ application.server ("host:port"), "" if unset
	TaskOffsetSums         []StreamsTaskOffsetSum // v7+: the tasks it has state for
	ErrorCode              int32                  // v9+
	ClientTags             map[string]string      `json:",omitempty"` // v11+ rack-aware standby tags
}

// StreamsAssignmentInfo is Kafka Streams' AssignmentInfo, the UserData of a
// "stream" member's assignment.
type StreamsAssignmentInfo struct {
	Version                  int32
	CommonlySupportedVersion int32 // v3+; -1 before
	// Active is the active tasks in the order of the assigned partitions,
	// one per partition: a task with two input partitions is listed twice.
	Active    []StreamsTaskID
	Standby   []StreamsTaskID
	ErrorCode int32 // v4+
	// NextRebalanceMs (v7+) is when the member must rejoin, Unix
	// milliseconds: 0 at once (a task moves and is revoked first), a time
	// for a KIP-441 probing rebalance, StreamsNoRebalance (also before v7)
	// for none.
	NextRebalanceMs int64
}

// decodeStreamsSubscription decodes a SubscriptionInfo, or returns nil.
func decodeStreamsSubscription(b []byte) *StreamsSubscriptionInfo {
	r := kbin.Reader{Src: b}
	s := &StreamsSubscriptionInfo{Version: r.Int32(), LatestSupportedVersion: -1}
	v := s.Version
	if v < 1 {
		return nil
	}
	if v >= 3 {
		s.LatestSupportedVersion = r.Int32()
	}
	id := r.Uuid()
	s.ProcessID = uuidText(id)
	if v <= 6 {
		s.PrevActive = readTaskIDs(&r)
		s.PrevStandby = readTaskIDs(&r)
	}
	if v >= 2 {
		s.UserEndpoint = string(r.Bytes())
	}
	if v >= 7 {
		s.TaskOffsetSums = readOffsetSums(&r, v)
	}
	if v >= 8 {
		r.Int8() // uniqueField: changes the bytes so that a rejoin is noticed
	}
	if v >= 9 {
		s.ErrorCode = r.Int32()
	}
	if v >= 11 {
		n := r.ArrayLen()
		for i := int32(0); i < n && r.Ok(); i++ {
			k, val := r.Bytes(), r.Bytes()
			if s.ClientTags == nil {
				s.ClientTags = map[string]string{}
			}
			s.ClientTags[string(k)] = string(val)
		}
	}
	if !complete(&r, v > streamsSubscriptionLatest) {
		return nil
	}
	return s
}

// readTaskIDs reads a SubscriptionInfo []TaskId (v1-6).
func readTaskIDs(r *kbin.Reader) []StreamsTaskID {
	n := r.ArrayLen()
	var out []StreamsTaskID
	for i := int32(0); i < n && r.Ok(); i++ {
		out = append(out, StreamsTaskID{Subtopology: r.Int32(), Partition: r.Int32()})
	}
	return out
}

// readOffsetSums reads SubscriptionInfo's taskOffsetSums, v7+.
func readOffsetSums(r *kbin.Reader, v int32) []StreamsTaskOffsetSum {
	n := r.ArrayLen()
	var out []StreamsTaskOffsetSum
	for i := int32(0); i < n && r.Ok(); i++ {
		sub := r.Int32()
		if v >= 10 {
			t := StreamsTaskOffsetSum{Task: StreamsTaskID{Subtopology: sub, Partition: r.Int32()}, OffsetSum: r.Int64()}
			if name := r.NullableString(); name != nil {
				t.Task.Topology = *name
			}
			out = append(out, t)
			continue
		}
		m := r.ArrayLen()
		for j := int32(0); j < m && r.Ok(); j++ {
			out = append(out, StreamsTaskOffsetSum{Task: StreamsTaskID{Subtopology: sub, Partition: r.Int32()}, OffsetSum: r.Int64()})
		}
	}
	return out
}

// decodeStreamsAssignment decodes an AssignmentInfo, or returns nil.
func decodeStreamsAssignment(b []byte) *StreamsAssignmentInfo {
	r := kbin.Reader{Src: b}
	a := &StreamsAssignmentInfo{Version: r.Int32(), CommonlySupportedVersion: -1, NextRebalanceMs: StreamsNoRebalance}
	v := a.Version
	if v < 1 {
		return nil
	}
	if v >= 3 {
		a.CommonlySupportedVersion = r.Int32()
	}
	n := r.ArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		a.Active = append(a.Active, readAssignedTask(&r, v))
	}
	n = r.ArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		a.Standby = append(a.Standby, readAssignedTask(&r, v))
		skipTopicPartitions(&r, false)
	}
	switch {
	case v >= 6:
		skipTopicDictionary(&r)
		skipHostPartitions(&r, true)
		skipHostPartitions(&r, true)
	case v == 5:
		skipTopicDictionary(&r)
		skipHostPartitions(&r, true)
	case v >= 2:
		skipHostPartitions(&r, false)
	}
	if v >= 4 {
		a.ErrorCode = r.Int32()
	}
	if v >= 7 {
		a.NextRebalanceMs = r.Int64()
	}
	if !complete(&r, v > streamsAssignmentLatest) {
		return nil
	}
	return a
}

// readAssignedTask reads an AssignmentInfo TaskId: v10+ adds the named
// topology as UTF-16 chars after an int32 count.
func readAssignedTask(r *kbin.Reader, v int32) StreamsTaskID {
	t := StreamsTaskID{Subtopology: r.Int32(), Partition: r.Int32()}
	if v >= 10 {
		span := r.Span(int(r.Int32()) * 2)
		if !r.Ok() {
			return t
		}
		units := make([]uint16, len(span)/2)
		for i := range units {
			units[i] = binary.BigEndian.Uint16(span[2*i:])
		}
		t.Topology = string(utf16.Decode(units))
	}
	return t
}

// skipTopicPartitions skips an int32 count of (topic, partition), the topic
// a string or, with a dictionary, its int32 index.
func skipTopicPartitions(r *kbin.Reader, dict bool) {
	n := r.ArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		if dict {
			r.Int32()
		} else {
			r.Span(int(r.Uint16())) // a string (Java writeUTF)
		}
		r.Int32()
	}
}

// skipTopicDictionary skips the (index, topic) dictionary of v5+.
func skipTopicDictionary(r *kbin.Reader) {
	n := r.ArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		r.Int32()
		r.Span(int(r.Uint16())) // a string (Java writeUTF)
	}
}

// skipHostPartitions skips a map of host (string, int32 port) to
// partitions.
func skipHostPartitions(r *kbin.Reader, dict bool) {
	n := r.ArrayLen()
	for i := int32(0); i < n && r.Ok(); i++ {
		r.Span(int(r.Uint16())) // a string (Java writeUTF)
		r.Int32()
		skipTopicPartitions(r, dict)
	}
}

// complete reports whether r read without running short and, unless
// trailing bytes of a newer version are allowed, to the end.
func complete(r *kbin.Reader, newer bool) bool {
	if !r.Ok() {
		return false
	}
	return newer || len(r.Src) == 0
}

// uuidText is a UUID as Java's java.util.UUID prints it.
func uuidText(u [16]byte) string {
	return fmt.Sprintf("%x-%x-%x-%x-%x", u[0:4], u[4:6], u[6:8], u[8:10], u[10:16])
}
