package pipeline

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/kproxy-dev/kproxy/decode"
)

// TestEventLogLevel: Heartbeat, OffsetCommit, OffsetFetch and
// TxnOffsetCommit exchanges without an error, and KIP-848 heartbeats that
// change nothing, are logged at debug; with an error, and every other
// group exchange, at info; non-group events (EndTxn too) not at all.
func TestEventLogLevel(t *testing.T) {
	commit := func(errCode int16) *decode.OffsetCommit {
		return &decode.OffsetCommit{MemberID: "m-1", Generation: 3, Topics: []decode.CommitTopic{
			{Topic: "t", Partitions: []decode.CommitPartition{{Partition: 0}, {Partition: 1, ErrorCode: errCode}}}}}
	}
	tests := []struct {
		name  string
		event decode.Event
		want  zapcore.Level // zapcore.InvalidLevel: no line
	}{
		{"heartbeat", decode.Event{APIKey: 12, Heartbeat: &decode.Heartbeat{}}, zapcore.DebugLevel},
		{"heartbeat rebalancing", decode.Event{APIKey: 12, Heartbeat: &decode.Heartbeat{ErrorCode: 27}}, zapcore.InfoLevel},
		{"commit", decode.Event{APIKey: 8, OffsetCommit: commit(0)}, zapcore.DebugLevel},
		{"commit failed on one partition", decode.Event{APIKey: 8, OffsetCommit: commit(22)}, zapcore.InfoLevel},
		{"fetch", decode.Event{APIKey: 9, OffsetFetch: &decode.OffsetFetch{}}, zapcore.DebugLevel},
		{"fetch failed", decode.Event{APIKey: 9, OffsetFetch: &decode.OffsetFetch{ErrorCode: 16}}, zapcore.InfoLevel},
		{"join", decode.Event{APIKey: 11, JoinGroup: &decode.JoinGroup{}}, zapcore.InfoLevel},
		{"sync", decode.Event{APIKey: 14, SyncGroup: &decode.SyncGroup{}}, zapcore.InfoLevel},
		{"leave", decode.Event{APIKey: 13, LeaveGroup: &decode.LeaveGroup{}}, zapcore.InfoLevel},
		{"find coordinator", decode.Event{APIKey: 10, FindCoordinator: &decode.FindCoordinator{}}, zapcore.InfoLevel},
		{"KIP-848 join", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{AssignedEpoch: 3}}, zapcore.InfoLevel},
		{"KIP-848 heartbeat, nothing changed", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3}}, zapcore.DebugLevel},
		{"KIP-848 heartbeat, no response", decode.Event{APIKey: 68, ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3}}, zapcore.InfoLevel},
		{"KIP-848 heartbeat, new epoch", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 4}}, zapcore.InfoLevel},
		{"KIP-848 heartbeat, new assignment", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3, Assignment: []decode.TopicIDPartitions{}}}, zapcore.InfoLevel},
		{"KIP-848 full heartbeat of a member owning nothing", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3,
			SubscribedTopicNames: []string{"t"}, ServerAssignor: ptr("uniform"), OwnedPartitions: []decode.TopicIDPartitions{}, Assignment: []decode.TopicIDPartitions{}}}, zapcore.DebugLevel},
		{"KIP-848 full heartbeat, assignment as owned", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3,
			SubscribedTopicNames: []string{"t"}, OwnedPartitions: idParts(1, 0, 2), Assignment: idParts(1, 2, 0)}}, zapcore.DebugLevel},
		{"KIP-848 full heartbeat, assignment moved", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3,
			SubscribedTopicNames: []string{"t"}, OwnedPartitions: idParts(1, 0, 2), Assignment: idParts(1, 0)}}, zapcore.InfoLevel},
		{"KIP-848 full heartbeat, topic moved", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3,
			SubscribedTopicNames: []string{"t"}, OwnedPartitions: idParts(1, 0), Assignment: idParts(2, 0)}}, zapcore.InfoLevel},
		{"KIP-848 heartbeat, fenced", decode.Event{APIKey: 68, RespondedAt: time.Unix(1, 0), ConsumerGroupHeartbeat: &decode.ConsumerGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3, ErrorCode: 110}}, zapcore.InfoLevel},
		{"transactional commit", decode.Event{APIKey: 28, TxnOffsetCommit: &decode.TxnOffsetCommit{}}, zapcore.DebugLevel},
		{"streams heartbeat, nothing changed", decode.Event{APIKey: 88, RespondedAt: time.Unix(1, 0), StreamsGroupHeartbeat: &decode.StreamsGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3}}, zapcore.DebugLevel},
		{"streams heartbeat, new tasks", decode.Event{APIKey: 88, RespondedAt: time.Unix(1, 0), StreamsGroupHeartbeat: &decode.StreamsGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3, Standby: []decode.StreamsTasks{}}}, zapcore.InfoLevel},
		{"streams heartbeat, a status", decode.Event{APIKey: 88, RespondedAt: time.Unix(1, 0), StreamsGroupHeartbeat: &decode.StreamsGroupHeartbeat{MemberEpoch: 3, AssignedEpoch: 3, Status: []decode.StreamsStatus{{Code: 1}}}}, zapcore.InfoLevel},
		{"streams join", decode.Event{APIKey: 88, RespondedAt: time.Unix(1, 0), StreamsGroupHeartbeat: &decode.StreamsGroupHeartbeat{AssignedEpoch: 3}}, zapcore.InfoLevel},
		{"end txn", decode.Event{APIKey: 26, EndTxn: &decode.EndTxn{}}, zapcore.InvalidLevel},
		{"metadata", decode.Event{APIKey: 3, Metadata: &decode.Metadata{}}, zapcore.InvalidLevel},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			core, logs := observer.New(zapcore.DebugLevel)
			(&exchangeLog{log: zap.New(core)}).AddEvents([]decode.Event{tt.event})
			all := logs.All()
			if tt.want == zapcore.InvalidLevel {
				if len(all) != 0 {
					t.Fatalf("%d lines; want none", len(all))
				}
				return
			}
			if len(all) != 1 || all[0].Message != "group exchange" || all[0].Level != tt.want {
				t.Fatalf("got %v; want one group exchange line at %v", all, tt.want)
			}
			if got := all[0].ContextMap()["api"]; got != kmsg.NameForKey(tt.event.APIKey) {
				t.Errorf("api %v; want %s", got, kmsg.NameForKey(tt.event.APIKey))
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// idParts is partitions ps of the topic whose id starts with b.
func idParts(b byte, ps ...int32) []decode.TopicIDPartitions {
	return []decode.TopicIDPartitions{{TopicID: [16]byte{b}, Partitions: ps}}
}

// TestInfoLogsNoHeartbeat: at info, a pipeline fed healthy heartbeats logs
// nothing, and one answered REBALANCE_IN_PROGRESS logs one line.
func TestInfoLogsNoHeartbeat(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	p := New(Config{Log: zap.New(core)})
	xs := []*decode.Exchange{heartbeat(1, 0, 1), heartbeat(2, 0, 2), heartbeat(3, 27, 3)}
	if err := p.Run(context.Background(), Slice(xs)); err != nil {
		t.Fatal(err)
	}
	all := logs.All()
	if len(all) != 1 || all[0].ContextMap()["error"] != "REBALANCE_IN_PROGRESS" {
		t.Fatalf("got %v; want only the REBALANCE_IN_PROGRESS heartbeat", all)
	}
}
