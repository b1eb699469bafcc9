package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// Golden cases for offsets (OffsetCommit, OffsetFetch) and Metadata.

func offsetCases() []goldenCase {
	return []goldenCase{
		{name: "offset_commit", key: 8, build: offsetCommit, seed: true},
		{name: "offset_commit_no_response", key: 8, build: func(v int16) (kmsg.Request, kmsg.Response) {
			req, _ := offsetCommit(v)
			return req, nil
		}},
		{name: "offset_fetch", key: 9, build: offsetFetch, seed: true},
		{name: "offset_fetch_all_topics", key: 9, build: offsetFetchAll},
		{name: "txn_offset_commit", key: 28, build: txnOffsetCommit, seed: true},
		{name: "end_txn_commit", key: 26, build: endTxn(true, 0), seed: true},
		{name: "end_txn_abort_fenced", key: 26, build: endTxn(false, 90)},
	}
}

func otherCases() []goldenCase {
	return []goldenCase{
		{name: "metadata", key: 3, build: metadata, seed: true},
	}
}

// offsetCommit commits two topics in map order during a revocation; one
// partition fails with ILLEGAL_GENERATION, and the broker answers one
// partition that was not committed. From v10 topics are named by id.
func offsetCommit(v int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrOffsetCommitRequest()
	req.Group = group
	req.Generation = 5
	req.MemberID = memberA
	req.InstanceID = ptr("instance-a")
	req.RetentionTimeMillis = -1
	part := func(p int32, off int64) kmsg.OffsetCommitRequestTopicPartition {
		x := kmsg.NewOffsetCommitRequestTopicPartition()
		x.Partition, x.Offset, x.LeaderEpoch, x.Metadata = p, off, 3, ptr("")
		x.Timestamp = 1767323045006
		return x
	}
	req.Topics = []kmsg.OffsetCommitRequestTopic{
		{Topic: "round_topic", TopicID: topicID(0x40), Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(2, 11), part(0, 12), part(1, 9)}},
		{Topic: "audit", TopicID: topicID(0x10), Partitions: []kmsg.OffsetCommitRequestTopicPartition{part(0, 1001)}},
	}
	resp := kmsg.NewPtrOffsetCommitResponse()
	resp.Topics = []kmsg.OffsetCommitResponseTopic{
		{Topic: "audit", TopicID: topicID(0x10), Partitions: []kmsg.OffsetCommitResponseTopicPartition{{Partition: 0}}},
		{Topic: "round_topic", TopicID: topicID(0x40), Partitions: []kmsg.OffsetCommitResponseTopicPartition{
			{Partition: 0}, {Partition: 1, ErrorCode: 22}, {Partition: 2}, {Partition: 7, ErrorCode: 3},
		}},
	}
	if v >= 10 {
		for i := range req.Topics {
			req.Topics[i].Topic = ""
		}
		for i := range resp.Topics {
			resp.Topics[i].Topic = ""
		}
	}
	return req, resp
}

// offsetFetch asks for one group before v8, and two groups after: the
// second one is still loading (COORDINATOR_LOAD_IN_PROGRESS).
func offsetFetch(v int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.Topics = []kmsg.OffsetFetchRequestTopic{
		{Topic: "round_topic", Partitions: []int32{2, 0, 1}},
		{Topic: "audit", Partitions: []int32{0}},
	}
	req.RequireStable = true
	name := func(s string) string {
		if v >= 10 {
			return ""
		}
		return s
	}
	req.Groups = []kmsg.OffsetFetchRequestGroup{
		{Group: group, MemberID: ptr(memberA), MemberEpoch: 7, Topics: []kmsg.OffsetFetchRequestGroupTopic{
			{Topic: name("round_topic"), TopicID: topicID(0x40), Partitions: []int32{2, 0, 1}},
		}},
		{Group: "test_group_2", MemberEpoch: -1},
	}
	fp := func(p int32, off int64, code int16) kmsg.OffsetFetchResponseTopicPartition {
		x := kmsg.NewOffsetFetchResponseTopicPartition()
		x.Partition, x.Offset, x.LeaderEpoch, x.Metadata, x.ErrorCode = p, off, 3, ptr(""), code
		return x
	}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.Topics = []kmsg.OffsetFetchResponseTopic{
		{Topic: "round_topic", Partitions: []kmsg.OffsetFetchResponseTopicPartition{fp(1, 9, 0), fp(0, 12, 0), fp(2, -1, 0)}},
		{Topic: "audit", Partitions: []kmsg.OffsetFetchResponseTopicPartition{fp(0, 1001, 0)}},
	}
	gp := func(p int32, off int64) kmsg.OffsetFetchResponseGroupTopicPartition {
		return kmsg.OffsetFetchResponseGroupTopicPartition{Partition: p, Offset: off, LeaderEpoch: 3, Metadata: ptr("")}
	}
	resp.Groups = []kmsg.OffsetFetchResponseGroup{
		{Group: "test_group_2", ErrorCode: 14},
		{Group: group, Topics: []kmsg.OffsetFetchResponseGroupTopic{
			{Topic: name("round_topic"), TopicID: topicID(0x40), Partitions: []kmsg.OffsetFetchResponseGroupTopicPartition{gp(2, -1), gp(0, 12), gp(1, 9)}},
		}},
	}
	return req, resp
}

// offsetFetchAll asks for every topic (null topics, v2+; v0 and v1 send an
// empty list) and is refused: the member's generation is stale.
func offsetFetchAll(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrOffsetFetchRequest()
	req.Group = group
	req.Groups = []kmsg.OffsetFetchRequestGroup{{Group: group, MemberID: ptr(memberA), MemberEpoch: 6}}
	resp := kmsg.NewPtrOffsetFetchResponse()
	resp.ErrorCode = 113
	resp.Groups = []kmsg.OffsetFetchResponseGroup{{Group: group, ErrorCode: 113}}
	return req, resp
}

func metadata(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrMetadataRequest()
	req.Topics = []kmsg.MetadataRequestTopic{{Topic: ptr("round_topic")}, {Topic: ptr("missing")}}
	resp := kmsg.NewPtrMetadataResponse()
	resp.Brokers = []kmsg.MetadataResponseBroker{{NodeID: 1, Host: "broker-1.internal", Port: 9092}}
	resp.ClusterID = ptr("kproxy-test")
	resp.ControllerID = 1
	parts := func(n int) []kmsg.MetadataResponseTopicPartition {
		ps := make([]kmsg.MetadataResponseTopicPartition, n)
		for i := range ps {
			ps[i] = kmsg.NewMetadataResponseTopicPartition()
			ps[i].Partition, ps[i].Leader, ps[i].Replicas, ps[i].ISR = int32(i), 1, []int32{1}, []int32{1}
		}
		return ps
	}
	resp.Topics = []kmsg.MetadataResponseTopic{
		{Topic: ptr("round_topic"), TopicID: topicID(0x40), Partitions: parts(3)},
		{Topic: ptr("missing"), ErrorCode: 3, Partitions: parts(0)},
	}
	return req, resp
}

// txnOffsetCommit adds two topics' offsets, in map order, to producer
// 4001's transaction (epoch 7) for member A of generation 5; one partition
// is refused with ILLEGAL_GENERATION (a zombie's commit, KIP-447), and the
// broker answers one partition that was not sent. From v6 topics are
// named by id.
func txnOffsetCommit(v int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrTxnOffsetCommitRequest()
	req.TransactionalID = "eos-app-0"
	req.Group = group
	req.ProducerID, req.ProducerEpoch = 4001, 7
	req.Generation = 5
	req.MemberID = memberA
	req.InstanceID = ptr("instance-a")
	part := func(p int32, off int64) kmsg.TxnOffsetCommitRequestTopicPartition {
		x := kmsg.NewTxnOffsetCommitRequestTopicPartition()
		x.Partition, x.Offset, x.LeaderEpoch, x.Metadata = p, off, 3, ptr("")
		return x
	}
	req.Topics = []kmsg.TxnOffsetCommitRequestTopic{
		{Topic: "round_topic", TopicID: topicID(0x40), Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{part(2, 11), part(0, 12)}},
		{Topic: "audit", TopicID: topicID(0x10), Partitions: []kmsg.TxnOffsetCommitRequestTopicPartition{part(0, 1001)}},
	}
	resp := kmsg.NewPtrTxnOffsetCommitResponse()
	resp.Topics = []kmsg.TxnOffsetCommitResponseTopic{
		{Topic: "audit", TopicID: topicID(0x10), Partitions: []kmsg.TxnOffsetCommitResponseTopicPartition{{Partition: 0}}},
		{Topic: "round_topic", TopicID: topicID(0x40), Partitions: []kmsg.TxnOffsetCommitResponseTopicPartition{
			{Partition: 0}, {Partition: 2, ErrorCode: 22}, {Partition: 7, ErrorCode: 3},
		}},
	}
	if v >= 6 {
		for i := range req.Topics {
			req.Topics[i].Topic = ""
		}
		for i := range resp.Topics {
			resp.Topics[i].Topic = ""
		}
	}
	return req, resp
}

// endTxn ends producer 4001's transaction (epoch 7), committing or
// aborting it, answered with code; v5+ answers the next epoch, 8.
func endTxn(commit bool, code int16) func(int16) (kmsg.Request, kmsg.Response) {
	return func(int16) (kmsg.Request, kmsg.Response) {
		req := kmsg.NewPtrEndTxnRequest()
		req.TransactionalID = "eos-app-0"
		req.ProducerID, req.ProducerEpoch, req.Commit = 4001, 7, commit
		resp := kmsg.NewPtrEndTxnResponse()
		resp.ErrorCode = code
		resp.ProducerID, resp.ProducerEpoch = 4001, 8
		return req, resp
	}
}
