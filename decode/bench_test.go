package decode

import (
	"fmt"
	"testing"

	"github.com/twmb/franz-go/pkg/kmsg"
)

// Benchmarks of the decoders on realistic large frames. Run with
// go test -run XXX -bench . ./decode

func benchDecode(b *testing.B, x *Exchange, before *Exchange) {
	b.Helper()
	d := NewDecoder()
	if before != nil {
		if _, err := d.Decode(before); err != nil {
			b.Fatal(err)
		}
	}
	b.SetBytes(int64(len(x.Request) + len(x.Response)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := d.Decode(x); err != nil {
			b.Fatal(err)
		}
	}
}

// benchTopics are 10 topics a member subscribes to.
func benchTopics() []string {
	ts := make([]string, 10)
	for i := range ts {
		ts[i] = fmt.Sprintf("orders-%02d", i)
	}
	return ts
}

// BenchmarkDecodeJoinGroupLeader: the leader's response listing 100
// cooperative-sticky members, each subscribed to 10 topics and owning 3
// partitions of each.
func BenchmarkDecodeJoinGroupLeader(b *testing.B) {
	topics := benchTopics()
	var members []kmsg.JoinGroupResponseMember
	for m := range 100 {
		var own []kmsg.ConsumerMemberMetadataOwnedPartition
		var cur []kmsg.StickyMemberMetadataCurrentAssignment
		for _, t := range topics {
			ps := []int32{int32(3 * m), int32(3*m + 1), int32(3*m + 2)}
			own = append(own, owned(t, ps...))
			cur = append(cur, current(t, ps...))
		}
		members = append(members, kmsg.JoinGroupResponseMember{
			MemberID:         fmt.Sprintf("consumer-%03d-5f2c9b1e-0d81-4a37-77e0", m),
			ProtocolMetadata: subscription(3, topics, own, 4, ptr("rack-1"), stickyUserData(4, cur...)),
		})
	}
	req := joinRequest("consumer")
	resp := joinResponse("cooperative-sticky", members...)
	benchDecode(b, exchange(at(req, 9), resp), nil)
}

// BenchmarkDecodeSyncGroupPlan: the leader's SyncGroup (v3, protocol type
// remembered) with a plan for 100 members of 10 topics each.
func BenchmarkDecodeSyncGroupPlan(b *testing.B) {
	topics := benchTopics()
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group, req.Generation, req.MemberID = group, 5, memberA
	for m := range 100 {
		var as []kmsg.ConsumerMemberAssignmentTopic
		for _, t := range topics {
			as = append(as, assigned(t, int32(3*m), int32(3*m+1), int32(3*m+2)))
		}
		req.GroupAssignment = append(req.GroupAssignment, kmsg.SyncGroupRequestGroupAssignment{
			MemberID: fmt.Sprintf("consumer-%03d-5f2c9b1e-0d81-4a37-77e0", m), MemberAssignment: assignment(3, as...),
		})
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.MemberAssignment = req.GroupAssignment[0].MemberAssignment
	benchDecode(b, exchange(at(req, 3), resp), joinedAs("consumer")(3))
}

// BenchmarkDecodeOffsetCommit: a commit of 10 topics of 30 partitions.
func BenchmarkDecodeOffsetCommit(b *testing.B) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group, req.Generation, req.MemberID = group, 5, memberA
	resp := kmsg.NewPtrOffsetCommitResponse()
	for _, t := range benchTopics() {
		rt := kmsg.OffsetCommitRequestTopic{Topic: t}
		pt := kmsg.OffsetCommitResponseTopic{Topic: t}
		for p := range int32(30) {
			rp := kmsg.NewOffsetCommitRequestTopicPartition()
			rp.Partition, rp.Offset, rp.LeaderEpoch = 29-p, int64(1000+p), 3
			rt.Partitions = append(rt.Partitions, rp)
			pt.Partitions = append(pt.Partitions, kmsg.OffsetCommitResponseTopicPartition{Partition: p})
		}
		req.Topics = append(req.Topics, rt)
		resp.Topics = append(resp.Topics, pt)
	}
	benchDecode(b, exchange(at(req, 9), resp), nil)
}

// BenchmarkDecodeHeartbeat: the most frequent group exchange.
func BenchmarkDecodeHeartbeat(b *testing.B) {
	req, resp := heartbeat(4)
	benchDecode(b, exchange(at(req, 4), resp), nil)
}

// BenchmarkDecodeMetadataRemembered: a client's Metadata refresh of 10
// topics of 12 partitions on 3 brokers, answered as before: the memo's
// lookup (metadata_memo.go), as most Metadata exchanges are decoded.
func BenchmarkDecodeMetadataRemembered(b *testing.B) {
	req := kmsg.NewPtrMetadataRequest()
	req.SetVersion(12)
	resp := kmsg.NewPtrMetadataResponse()
	for n := range int32(3) {
		resp.Brokers = append(resp.Brokers, kmsg.MetadataResponseBroker{NodeID: n, Host: fmt.Sprintf("broker-%d.kafka.internal", n), Port: 9092})
	}
	for i, t := range benchTopics() {
		req.Topics = append(req.Topics, kmsg.MetadataRequestTopic{Topic: ptr(t), TopicID: topicID(byte(i))})
		rt := kmsg.NewMetadataResponseTopic()
		rt.Topic, rt.TopicID = ptr(t), topicID(byte(i))
		for p := range int32(12) {
			rp := kmsg.NewMetadataResponseTopicPartition()
			rp.Partition, rp.Leader, rp.Replicas, rp.ISR = p, p%3, []int32{p % 3, (p + 1) % 3, (p + 2) % 3}, []int32{p % 3, (p + 1) % 3, (p + 2) % 3}
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	x := exchange(req, resp)
	benchDecode(b, x, x)
}
