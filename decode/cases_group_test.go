package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// Golden cases for the classic group protocol: FindCoordinator, JoinGroup,
// SyncGroup, Heartbeat, LeaveGroup.

const (
	group   = "test_group_1"
	memberA = "consumer-a-1-5f2c9b1e"
	memberB = "consumer-b-1-0d81aa37"
	memberC = "consumer-c-1-77e0c412"
)

func groupCases() []goldenCase {
	return []goldenCase{
		{name: "find_coordinator", key: 10, build: findCoordinator, seed: true},
		{name: "find_coordinator_no_response", key: 10, build: func(v int16) (kmsg.Request, kmsg.Response) {
			req, _ := findCoordinator(v)
			return req, nil
		}},
		{name: "join_group_leader_range", key: 11, build: joinGroupLeaderRange, seed: true},
		{name: "join_group_leader_cooperative", key: 11, build: joinGroupLeaderCooperative},
		{name: "join_group_member_id_required", key: 11, build: joinGroupMemberIDRequired},
		{name: "join_group_follower", key: 11, build: joinGroupFollower},
		{name: "join_group_no_response", key: 11, build: func(v int16) (kmsg.Request, kmsg.Response) {
			req, _ := joinGroupLeaderRange(v)
			return req, nil
		}},
		{name: "join_group_connect", key: 11, build: joinGroupConnect},
		{name: "join_group_unknown_protocol_type", key: 11, build: joinGroupUnknownType},
		{name: "sync_group_leader_plan", key: 14, build: syncGroupLeader, before: joinedAs("consumer"), seed: true},
		{name: "sync_group_follower_empty_assignment", key: 14, build: syncGroupFollowerEmpty, before: joinedAs("consumer")},
		{name: "sync_group_rebalance_in_progress", key: 14, build: syncGroupError, before: joinedAs("consumer")},
		{name: "sync_group_connect", key: 14, build: syncGroupConnect, before: joinedAs("connect")},
		{name: "sync_group_no_join_seen", key: 14, build: syncGroupLeader},
		{name: "heartbeat_rebalance_in_progress", key: 12, build: heartbeat, seed: true},
		{name: "leave_group", key: 13, build: leaveGroup, seed: true},
		{name: "consumer_group_heartbeat_join", key: 68, build: cgHeartbeatJoin, seed: true},
		{name: "consumer_group_heartbeat_unchanged", key: 68, build: cgHeartbeatUnchanged},
	}
}

func findCoordinator(v int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrFindCoordinatorRequest()
	req.CoordinatorKey = group
	req.CoordinatorType = 0
	req.CoordinatorKeys = []string{group, "test_group_2"}
	resp := kmsg.NewPtrFindCoordinatorResponse()
	resp.NodeID, resp.Host, resp.Port = 2, "broker-2.internal", 9092
	resp.ErrorMessage = ptr("NONE")
	// Answered out of request order: events follow the request.
	resp.Coordinators = []kmsg.FindCoordinatorResponseCoordinator{
		{Key: "test_group_2", NodeID: -1, Host: "", Port: -1, ErrorCode: 15, ErrorMessage: ptr("coordinator not available")},
		{Key: group, NodeID: 2, Host: "broker-2.internal", Port: 9092},
	}
	return req, resp
}

// joinRequest is member A's JoinGroup offering range and cooperative-sticky.
func joinRequest(protocolType string) *kmsg.JoinGroupRequest {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = group
	req.SessionTimeoutMillis = 45000
	req.RebalanceTimeoutMillis = 300000
	req.MemberID = memberA
	req.InstanceID = ptr("instance-a")
	req.ProtocolType = protocolType
	req.Reason = ptr("rebalance triggered by a metadata change")
	req.Protocols = []kmsg.JoinGroupRequestProtocol{
		{Name: "range", Metadata: subscription(3, []string{"round_topic", "audit"}, nil, 4, ptr("rack-1"), nil)},
		{Name: "cooperative-sticky", Metadata: subscription(3, []string{"round_topic", "audit"},
			[]kmsg.ConsumerMemberMetadataOwnedPartition{owned("round_topic", 2, 0)}, 4, ptr("rack-1"),
			stickyUserData(4, current("round_topic", 2, 0)))},
	}
	return req
}

func joinResponse(protocol string, members ...kmsg.JoinGroupResponseMember) *kmsg.JoinGroupResponse {
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ThrottleMillis = 0
	resp.Generation = 5
	resp.ProtocolType = ptr("consumer")
	resp.Protocol = ptr(protocol)
	resp.LeaderID = memberA
	resp.MemberID = memberA
	resp.Members = members
	return resp
}

func joinGroupLeaderRange(int16) (kmsg.Request, kmsg.Response) {
	return joinRequest("consumer"), joinResponse("range",
		kmsg.JoinGroupResponseMember{MemberID: memberA, InstanceID: ptr("instance-a"),
			ProtocolMetadata: subscription(3, []string{"round_topic", "audit"}, nil, 4, ptr("rack-1"), nil)},
		kmsg.JoinGroupResponseMember{MemberID: memberB,
			ProtocolMetadata: subscription(1, []string{"round_topic"}, []kmsg.ConsumerMemberMetadataOwnedPartition{owned("round_topic", 1)}, -1, nil, []byte("app-data"))},
		kmsg.JoinGroupResponseMember{MemberID: memberC,
			ProtocolMetadata: subscription(0, []string{"round_topic"}, nil, -1, nil, nil)},
	)
}

// joinGroupLeaderCooperative has sticky user data as franz-go writes it
// (current assignment and generation) and as Apache Kafka's
// cooperative-sticky assignor writes it (only a 4-byte generation).
func joinGroupLeaderCooperative(int16) (kmsg.Request, kmsg.Response) {
	javaGeneration := []byte{0, 0, 0, 4}
	return joinRequest("consumer"), joinResponse("cooperative-sticky",
		kmsg.JoinGroupResponseMember{MemberID: memberA, InstanceID: ptr("instance-a"),
			ProtocolMetadata: subscription(3, []string{"round_topic"}, []kmsg.ConsumerMemberMetadataOwnedPartition{owned("round_topic", 2, 0)}, 4, nil,
				stickyUserData(4, current("round_topic", 2, 0)))},
		kmsg.JoinGroupResponseMember{MemberID: memberB,
			ProtocolMetadata: subscription(2, []string{"round_topic"}, []kmsg.ConsumerMemberMetadataOwnedPartition{owned("round_topic", 1)}, 4, nil, javaGeneration)},
		kmsg.JoinGroupResponseMember{MemberID: memberC,
			ProtocolMetadata: subscription(1, []string{"round_topic"}, nil, -1, nil, []byte{0xde, 0xad})},
	)
}

// joinGroupMemberIDRequired is a first join answered MEMBER_ID_REQUIRED
// (v4+, KIP-394) with the member id to rejoin with.
func joinGroupMemberIDRequired(int16) (kmsg.Request, kmsg.Response) {
	req := joinRequest("consumer")
	req.MemberID = ""
	req.InstanceID = nil
	req.Reason = nil
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.ErrorCode = 79
	resp.Generation = -1
	resp.Protocol = ptr("")
	resp.MemberID = memberA
	return req, resp
}

func joinGroupFollower(int16) (kmsg.Request, kmsg.Response) {
	req := joinRequest("consumer")
	req.MemberID = memberB
	req.InstanceID = nil
	resp := joinResponse("range")
	resp.MemberID = memberB
	return req, resp
}

func joinGroupConnect(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrJoinGroupRequest()
	req.Group = "connect-cluster"
	req.SessionTimeoutMillis = 10000
	req.RebalanceTimeoutMillis = 60000
	req.MemberID = "connect-1-4d2a"
	req.ProtocolType = "connect"
	req.Protocols = []kmsg.JoinGroupRequestProtocol{
		{Name: "sessioned", Metadata: connectMetadata(2, "http://worker-1:8083/", 17)},
		{Name: "default", Metadata: connectMetadata(0, "http://worker-1:8083/", 17)},
	}
	resp := kmsg.NewPtrJoinGroupResponse()
	resp.Generation = 3
	resp.ProtocolType = ptr("connect")
	resp.Protocol = ptr("sessioned")
	resp.LeaderID = "connect-1-4d2a"
	resp.MemberID = "connect-1-4d2a"
	resp.Members = []kmsg.JoinGroupResponseMember{
		{MemberID: "connect-1-4d2a", ProtocolMetadata: connectMetadata(2, "http://worker-1:8083/", 17)},
		{MemberID: "connect-2-9b11", ProtocolMetadata: connectMetadata(1, "http://worker-2:8083/", 17)},
	}
	return req, resp
}

// joinGroupUnknownType is a protocol type the decoder does not know: its
// bytes stay raw, even though they would decode as a subscription.
func joinGroupUnknownType(int16) (kmsg.Request, kmsg.Response) {
	req := joinRequest("sr")
	resp := joinResponse("v0",
		kmsg.JoinGroupResponseMember{MemberID: memberA, ProtocolMetadata: []byte(`{"host":"registry-1","port":8081}`)})
	resp.ProtocolType = ptr("sr")
	return req, resp
}

// joinedAs is a JoinGroup of the group with this protocol type, so that
// SyncGroup before v5 knows how to read assignments.
func joinedAs(protocolType string) func(int16) *Exchange {
	return func(int16) *Exchange {
		req := joinRequest(protocolType)
		if protocolType == "connect" {
			req.Group = "connect-cluster"
		}
		req.SetVersion(5)
		return exchange(req, nil)
	}
}

func syncGroupLeader(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = group
	req.Generation = 5
	req.MemberID = memberA
	req.InstanceID = ptr("instance-a")
	req.ProtocolType = ptr("consumer")
	req.Protocol = ptr("range")
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{
		{MemberID: memberA, MemberAssignment: assignment(3, assigned("round_topic", 1, 0), assigned("audit", 0))},
		{MemberID: memberB, MemberAssignment: assignment(0, assigned("round_topic", 2))},
		{MemberID: memberC, MemberAssignment: []byte{}},
	}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType = ptr("consumer")
	resp.Protocol = ptr("range")
	resp.MemberAssignment = assignment(3, assigned("round_topic", 1, 0), assigned("audit", 0))
	return req, resp
}

func syncGroupFollowerEmpty(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = group
	req.Generation = 5
	req.MemberID = memberC
	req.ProtocolType = ptr("consumer")
	req.Protocol = ptr("range")
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType = ptr("consumer")
	resp.Protocol = ptr("range")
	resp.MemberAssignment = []byte{}
	return req, resp
}

func syncGroupError(int16) (kmsg.Request, kmsg.Response) {
	req, _ := syncGroupFollowerEmpty(0)
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ErrorCode = 27
	return req, resp
}

func syncGroupConnect(int16) (kmsg.Request, kmsg.Response) {
	a := kmsg.NewConnectMemberAssignment()
	a.Version = 1
	a.Leader = "connect-1-4d2a"
	a.LeaderURL = "http://worker-1:8083/"
	a.ConfigOffset = 17
	a.Assignment = []kmsg.ConnectMemberAssignmentAssignment{
		{Connector: "s3-sink", Tasks: []int16{2, -1, 0}},
		{Connector: "jdbc-source", Tasks: []int16{1}},
	}
	a.Revoked = []kmsg.ConnectMemberAssignmentRevoked{{Connector: "jdbc-source", Tasks: []int16{0}}}
	a.ScheduledDelay = 5000
	b := a.AppendTo(nil)
	req := kmsg.NewPtrSyncGroupRequest()
	req.Group = "connect-cluster"
	req.Generation = 3
	req.MemberID = "connect-1-4d2a"
	req.ProtocolType = ptr("connect")
	req.Protocol = ptr("sessioned")
	req.GroupAssignment = []kmsg.SyncGroupRequestGroupAssignment{{MemberID: "connect-1-4d2a", MemberAssignment: b}}
	resp := kmsg.NewPtrSyncGroupResponse()
	resp.ProtocolType = ptr("connect")
	resp.Protocol = ptr("sessioned")
	resp.MemberAssignment = b
	return req, resp
}

func heartbeat(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrHeartbeatRequest()
	req.Group = group
	req.Generation = 5
	req.MemberID = memberB
	req.InstanceID = ptr("instance-b")
	resp := kmsg.NewPtrHeartbeatResponse()
	resp.ErrorCode = 27
	return req, resp
}

// leaveGroup is one member before v3 and a batch of two after: a dynamic
// member leaving on a poll timeout and a static member leaving by instance
// id, which the coordinator does not know.
func leaveGroup(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrLeaveGroupRequest()
	req.Group = group
	req.MemberID = memberB
	req.Members = []kmsg.LeaveGroupRequestMember{
		{MemberID: memberB, Reason: ptr("consumer poll timeout has expired.")},
		{MemberID: "", InstanceID: ptr("instance-c"), Reason: ptr("the consumer is being closed")},
	}
	resp := kmsg.NewPtrLeaveGroupResponse()
	resp.Members = []kmsg.LeaveGroupResponseMember{
		{MemberID: memberB},
		{MemberID: "", InstanceID: ptr("instance-c"), ErrorCode: 25},
	}
	return req, resp
}

func cgHeartbeatJoin(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group = group
	req.MemberID = "Ym9vdHN0cmFwLW1lbWJlcg"
	req.MemberEpoch = 0
	req.InstanceID = ptr("instance-a")
	req.RackID = ptr("rack-1")
	req.RebalanceTimeoutMillis = 300000
	req.SubscribedTopicNames = []string{"round_topic", "audit"}
	req.SubscribedTopicRegex = ptr("orders-.*")
	req.ServerAssignor = ptr("uniform")
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.MemberID = ptr("Ym9vdHN0cmFwLW1lbWJlcg")
	resp.MemberEpoch = 7
	resp.HeartbeatIntervalMillis = 5000
	resp.Assignment = &kmsg.ConsumerGroupHeartbeatResponseAssignment{Topics: []kmsg.ConsumerGroupHeartbeatResponseAssignmentTopic{
		{TopicID: topicID(0x40), Partitions: []int32{2, 0}},
		{TopicID: topicID(0x10), Partitions: []int32{1}},
	}}
	return req, resp
}

// cgHeartbeatUnchanged is a steady-state heartbeat: nulls mean unchanged,
// and the member is fenced.
func cgHeartbeatUnchanged(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrConsumerGroupHeartbeatRequest()
	req.Group = group
	req.MemberID = "Ym9vdHN0cmFwLW1lbWJlcg"
	req.MemberEpoch = 7
	req.Topics = []kmsg.ConsumerGroupHeartbeatRequestTopic{{TopicID: topicID(0x40), Partitions: []int32{2, 0}}}
	resp := kmsg.NewPtrConsumerGroupHeartbeatResponse()
	resp.ErrorCode = 110
	resp.ErrorMessage = ptr("The member epoch is fenced by the group coordinator.")
	resp.MemberEpoch = -1
	return req, resp
}
