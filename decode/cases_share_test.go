package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// shareCases are the KIP-932 share group APIs.
func shareCases() []goldenCase {
	return []goldenCase{
		{name: "share_group_heartbeat_join", key: 76, build: shareHeartbeatJoin, seed: true},
		{name: "share_group_heartbeat_leave", key: 76, build: shareHeartbeatLeave},
		{name: "share_fetch", key: 78, build: shareFetch, seed: true},
		{name: "share_acknowledge", key: 79, build: shareAcknowledge, seed: true},
	}
}

const shareMember = "c2hhcmUtbWVtYmVyLWE"

// shareHeartbeatJoin is a member joining at epoch 0 and getting epoch 3
// with partitions of two topics, listed out of order.
func shareHeartbeatJoin(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID = group
	req.MemberID = shareMember
	req.MemberEpoch = 0
	req.RackID = ptr("rack-1")
	req.SubscribedTopicNames = []string{"round_topic", "audit"}
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID = ptr(shareMember)
	resp.MemberEpoch = 3
	resp.HeartbeatIntervalMillis = 5000
	resp.Assignment = &kmsg.ShareGroupHeartbeatResponseAssignment{TopicPartitions: []kmsg.ShareGroupHeartbeatResponseAssignmentTopicPartition{
		{TopicID: topicID(0x40), Partitions: []int32{2, 0}},
		{TopicID: topicID(0x10), Partitions: []int32{1}},
	}}
	return req, resp
}

// shareHeartbeatLeave is a member leaving (epoch -1): the coordinator
// answers with epoch -1 and no assignment.
func shareHeartbeatLeave(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrShareGroupHeartbeatRequest()
	req.GroupID = group
	req.MemberID = shareMember
	req.MemberEpoch = -1
	resp := kmsg.NewPtrShareGroupHeartbeatResponse()
	resp.MemberID = ptr(shareMember)
	resp.MemberEpoch = -1
	return req, resp
}

// shareFetch acknowledges two batches (one type for a range, one per
// offset) and acquires two ranges, one of them delivered before; the
// records are bytes kproxy never reads.
func shareFetch(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrShareFetchRequest()
	req.GroupID = ptr(group)
	req.MemberID = ptr(shareMember)
	req.ShareSessionEpoch = 4
	req.MaxWaitMillis, req.MinBytes, req.MaxBytes, req.MaxRecords, req.BatchSize = 500, 1, 52428800, 500, 500
	req.Topics = []kmsg.ShareFetchRequestTopic{
		{TopicID: topicID(0x40), Partitions: []kmsg.ShareFetchRequestTopicPartition{
			{Partition: 2, AcknowledgementBatches: []kmsg.ShareFetchRequestTopicPartitionAcknowledgementBatch{
				{FirstOffset: 20, LastOffset: 24, AcknowledgeTypes: []int8{1, 1, 2, 3, 0}},
				{FirstOffset: 10, LastOffset: 19, AcknowledgeTypes: []int8{1}},
			}},
		}},
		{TopicID: topicID(0x10), Partitions: []kmsg.ShareFetchRequestTopicPartition{{Partition: 1}}},
	}
	resp := kmsg.NewPtrShareFetchResponse()
	resp.AcquisitionLockTimeoutMillis = 30000
	resp.Topics = []kmsg.ShareFetchResponseTopic{
		{TopicID: topicID(0x40), Partitions: []kmsg.ShareFetchResponseTopicPartition{
			{Partition: 2, Records: []byte("record batches, never decoded"), AcquiredRecords: []kmsg.ShareFetchResponseTopicPartitionAcquiredRecord{
				{FirstOffset: 25, LastOffset: 29, DeliveryCount: 1},
				{FirstOffset: 22, LastOffset: 22, DeliveryCount: 2},
			}},
		}},
		{TopicID: topicID(0x10), Partitions: []kmsg.ShareFetchResponseTopicPartition{
			{Partition: 1, ErrorCode: 6, ErrorMessage: ptr("not leader"), AcknowledgeErrorCode: 0},
		}},
	}
	return req, resp
}

// shareAcknowledge releases a batch; the broker refuses one partition's
// acknowledgement (INVALID_RECORD_STATE: the acquisition lock expired).
func shareAcknowledge(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrShareAcknowledgeRequest()
	req.GroupID = ptr(group)
	req.MemberID = ptr(shareMember)
	req.ShareSessionEpoch = 5
	req.Topics = []kmsg.ShareAcknowledgeRequestTopic{
		{TopicID: topicID(0x40), Partitions: []kmsg.ShareAcknowledgeRequestTopicPartition{
			{Partition: 2, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
				{FirstOffset: 25, LastOffset: 29, AcknowledgeTypes: []int8{2}},
			}},
			{Partition: 0, AcknowledgementBatches: []kmsg.ShareAcknowledgeRequestTopicPartitionAcknowledgementBatch{
				{FirstOffset: 3, LastOffset: 4, AcknowledgeTypes: []int8{3, 1}},
			}},
		}},
	}
	resp := kmsg.NewPtrShareAcknowledgeResponse()
	resp.Topics = []kmsg.ShareAcknowledgeResponseTopic{
		{TopicID: topicID(0x40), Partitions: []kmsg.ShareAcknowledgeResponseTopicPartition{
			{Partition: 2, ErrorCode: 121},
			{Partition: 0},
		}},
	}
	return req, resp
}
