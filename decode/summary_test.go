package decode

import (
	"testing"
	"time"
)

func TestEventSummary(t *testing.T) {
	responded := time.Unix(1, 0)
	instance := "i-1"
	tests := []struct {
		name string
		ev   Event
		want Summary
	}{
		{"join answered takes the assigned id and generation",
			Event{RespondedAt: responded, JoinGroup: &JoinGroup{InstanceID: "i", AssignedMemberID: "m-1", Generation: 4}},
			Summary{Member: "m-1", Instance: "i", Generation: 4}},
		{"join refused has no generation",
			Event{RespondedAt: responded, JoinGroup: &JoinGroup{AssignedMemberID: "m-1", Generation: -1, ErrorCode: 79}},
			Summary{Member: "m-1", Generation: -1, ErrorCode: 79}},
		{"join unanswered",
			Event{JoinGroup: &JoinGroup{MemberID: "m-1"}},
			Summary{Member: "m-1", Generation: -1}},
		{"batched leave lists members and the first member error",
			Event{LeaveGroup: &LeaveGroup{Members: []LeavingMember{{MemberID: "a", InstanceID: "ia"}, {MemberID: "b", ErrorCode: 25}}}},
			Summary{Member: "a,b", Instance: "ia", Generation: -1, ErrorCode: 25}},
		{"commit reports the first partition error",
			Event{OffsetCommit: &OffsetCommit{MemberID: "a", Generation: 2, Topics: []CommitTopic{{Topic: "t", Partitions: []CommitPartition{{Partition: 0}, {Partition: 1, ErrorCode: 27}}}}}},
			Summary{Member: "a", Generation: 2, ErrorCode: 27}},
		{"consumer heartbeat answered takes the assigned epoch",
			Event{RespondedAt: responded, ConsumerGroupHeartbeat: &ConsumerGroupHeartbeat{MemberID: "m", MemberEpoch: 3, InstanceID: &instance, AssignedEpoch: 5}},
			Summary{Member: "m", Instance: "i-1", Generation: 5, Epoch: true}},
		{"consumer heartbeat fenced keeps the epoch it sent",
			Event{RespondedAt: responded, ConsumerGroupHeartbeat: &ConsumerGroupHeartbeat{MemberID: "m", MemberEpoch: 3, ErrorCode: 110}},
			Summary{Member: "m", Generation: 3, Epoch: true, ErrorCode: 110}},
		{"find coordinator has only an error",
			Event{FindCoordinator: &FindCoordinator{ErrorCode: 15}},
			Summary{Generation: -1, ErrorCode: 15}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := tt.ev.Summary(); got != tt.want {
				t.Errorf("got %+v; want %+v", got, tt.want)
			}
		})
	}
}
