package decode

import "github.com/twmb/franz-go/pkg/kmsg"

// streamsCases are the KIP-1071 streams group APIs.
func streamsCases() []goldenCase {
	return []goldenCase{
		{name: "streams_group_heartbeat_join", key: 88, build: streamsHeartbeatJoin, seed: true},
		{name: "streams_group_heartbeat_status", key: 88, build: streamsHeartbeatStatus},
		{name: "streams_group_heartbeat_leave", key: 88, build: streamsHeartbeatLeave},
		{name: "streams_group_describe", key: 89, build: streamsDescribe, seed: true},
	}
}

const streamsMember = "c3RyZWFtcy1tZW1iZXItYQ"

// streamsHeartbeatJoin is a member joining at epoch 0 with a topology of
// two subtopologies (listed out of order, 10 after 2), getting epoch 4
// with active, standby and warm-up tasks.
func streamsHeartbeatJoin(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = group
	req.MemberID = streamsMember
	req.MemberEpoch = 0
	req.RackID = ptr("rack-1")
	req.RebalanceTimeoutMillis = 300000
	req.ProcessID = ptr("5f0c-process")
	req.UserEndpoint = &kmsg.StreamsGroupHeartbeatRequestUserEndpoint{Host: "10.0.0.7", Port: 7070}
	req.Topology = &kmsg.StreamsGroupHeartbeatRequestTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupHeartbeatRequestTopologySubtopology{
		{SubtopologyID: "10", SourceTopics: []string{"app-repartition"}, RepartitionSourceTopics: []kmsg.TopicInfo{{Topic: "app-repartition"}}},
		{SubtopologyID: "2", SourceTopics: []string{"words", "lines"}, RepartitionSinkTopics: []string{"app-repartition"},
			StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-counts-changelog"}}},
	}}
	req.ActiveTasks, req.StandbyTasks, req.WarmupTasks = []kmsg.TaskIDs{}, []kmsg.TaskIDs{}, []kmsg.TaskIDs{}
	req.TaskOffsets = []kmsg.TaskOffset{{SubtopologyID: "2", Partition: 1, Offset: 40}, {SubtopologyID: "10", Partition: 0, Offset: 7}}
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = streamsMember
	resp.MemberEpoch = 4
	resp.HeartbeatIntervalMillis = 5000
	resp.AcceptableRecoveryLagLegacy = 10000
	resp.AcceptableRecoveryLag = 10000
	resp.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "10", Partitions: []int32{1, 0}}, {SubtopologyID: "2", Partitions: []int32{2}}}
	resp.StandbyTasks = []kmsg.TaskIDs{{SubtopologyID: "2", Partitions: []int32{0}}}
	resp.WarmupTasks = []kmsg.TaskIDs{{SubtopologyID: "2", Partitions: []int32{1}}}
	return req, resp
}

// streamsHeartbeatStatus is a heartbeat answered with two statuses (out of
// order) and no assignment change.
func streamsHeartbeatStatus(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = group
	req.MemberID = streamsMember
	req.MemberEpoch = 4
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = streamsMember
	resp.MemberEpoch = 4
	resp.HeartbeatIntervalMillis = 5000
	resp.Status = []kmsg.StreamsGroupHeartbeatResponseStatus{
		{StatusCode: 2, StatusDetail: "Following topics are not copartitioned: [lines, words]"},
		{StatusCode: 1, StatusDetail: "Source topics lines are missing."},
	}
	return req, resp
}

// streamsHeartbeatLeave is a member leaving (epoch -1) after being fenced
// by nothing: the coordinator answers epoch -1.
func streamsHeartbeatLeave(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrStreamsGroupHeartbeatRequest()
	req.Group = group
	req.MemberID = streamsMember
	req.MemberEpoch = -1
	resp := kmsg.NewPtrStreamsGroupHeartbeatResponse()
	resp.MemberID = streamsMember
	resp.MemberEpoch = -1
	return req, resp
}

// streamsDescribe describes two groups: ours, stable with two members
// (listed out of order), and one the coordinator does not know.
func streamsDescribe(int16) (kmsg.Request, kmsg.Response) {
	req := kmsg.NewPtrStreamsGroupDescribeRequest()
	req.Groups = []string{group, "other"}
	resp := kmsg.NewPtrStreamsGroupDescribeResponse()
	g := kmsg.NewStreamsGroupDescribeResponseGroup()
	g.Group, g.State, g.Epoch, g.AssignmentEpoch = group, "Stable", 5, 5
	g.AssignorName = ptr("sticky")
	g.Topology = &kmsg.StreamsGroupDescribeResponseGroupTopology{Epoch: 1, Subtopologies: []kmsg.StreamsGroupDescribeResponseGroupTopologySubtopology{
		{SubtopologyID: "0", SourceTopics: []string{"words"}, StateChangelogTopics: []kmsg.TopicInfo{{Topic: "app-counts-changelog"}}},
	}}
	b := kmsg.NewStreamsGroupDescribeResponseGroupMember()
	b.MemberID, b.MemberEpoch, b.ClientID, b.ClientHost, b.TopologyEpoch, b.ProcessID = "member-b", 5, "app-b", "/127.0.0.1", 1, "proc-b"
	b.Assignment.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{2}}}
	b.TargetAssignment.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{1, 2}}}
	b.TaskEndOffsets = []kmsg.TaskOffset{{SubtopologyID: "0", Partition: 2, Offset: 90}}
	a := kmsg.NewStreamsGroupDescribeResponseGroupMember()
	a.MemberID, a.MemberEpoch, a.ClientID, a.ClientHost, a.TopologyEpoch, a.ProcessID = "member-a", 5, "app-a", "/127.0.0.1", 1, "proc-a"
	a.UserEndpoint = &kmsg.StreamsGroupDescribeResponseGroupMemberUserEndpoint{Host: "localhost", Port: 7071}
	a.Assignment.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0, 1}}}
	a.Assignment.StandbyTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{2}}}
	a.TargetAssignment.ActiveTasks = []kmsg.TaskIDs{{SubtopologyID: "0", Partitions: []int32{0}}}
	g.Members = []kmsg.StreamsGroupDescribeResponseGroupMember{b, a}
	other := kmsg.NewStreamsGroupDescribeResponseGroup()
	other.Group, other.ErrorCode, other.ErrorMessage = "other", 69, ptr("Group other not found.")
	resp.Groups = []kmsg.StreamsGroupDescribeResponseGroup{g, other}
	return req, resp
}
