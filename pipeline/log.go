package pipeline

import (
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"

	"github.com/kproxy-dev/kproxy/decode"
)

// exchangeLog writes one line per group event, an EventConsumer placed
// before the others.
type exchangeLog struct {
	log *zap.Logger
}

// routineAPIs are the group APIs a healthy consumer repeats every few
// seconds for as long as it runs: their exchanges without an error are
// logged at debug, so that a busy cluster at info logs per rebalance, not
// per heartbeat (issue 11, point 4; issue 15, point 4). Every other group
// exchange, and these with an error, are logged at info.
var routineAPIs = map[int16]bool{
	kmsg.Heartbeat.Int16():       true, // every heartbeat.interval.ms per member
	kmsg.OffsetCommit.Int16():    true, // auto-commit every auto.commit.interval.ms
	kmsg.OffsetFetch.Int16():     true, // on every assignment, and by tools and lag exporters
	kmsg.TxnOffsetCommit.Int16(): true, // every transaction of an exactly-once application
}

// routineConsumerHeartbeat reports whether a KIP-848 ConsumerGroupHeartbeat
// changed nothing, the consumer protocol's form of a Heartbeat (sent every
// heartbeat interval): answered without error at the member epoch it
// sent, and with no new assignment. A response carries the assignment
// when it changed, and also on every full request (KIP-848: one naming
// the subscription and the owned partitions), which clients send when
// they own nothing (franz-go) or after an error; such an assignment equal
// to the partitions the request said the member owns is no change. The
// subscription and assignor a full request repeats are not compared: a
// change of either that moves partitions shows in the response's epoch or
// assignment, and the timeline tells it. A join, a leave, a new epoch or
// assignment is logged at info.
func routineConsumerHeartbeat(e *decode.Event) bool {
	h := e.ConsumerGroupHeartbeat
	return h != nil && e.Responded() && h.ErrorCode == 0 && h.MemberEpoch > 0 && h.AssignedEpoch == h.MemberEpoch &&
		(h.Assignment == nil || (h.OwnedPartitions != nil && samePartitions(h.Assignment, h.OwnedPartitions)))
}

// samePartitions reports whether a and b name the same partitions, in
// whatever order.
func samePartitions(a, b []decode.TopicIDPartitions) bool {
	count := func(tps []decode.TopicIDPartitions) map[[16]byte]map[int32]bool {
		m := map[[16]byte]map[int32]bool{}
		for _, tp := range tps {
			if len(tp.Partitions) == 0 {
				continue
			}
			if m[tp.TopicID] == nil {
				m[tp.TopicID] = map[int32]bool{}
			}
			for _, p := range tp.Partitions {
				m[tp.TopicID][p] = true
			}
		}
		return m
	}
	ma, mb := count(a), count(b)
	if len(ma) != len(mb) {
		return false
	}
	for id, ps := range ma {
		qs := mb[id]
		if len(ps) != len(qs) {
			return false
		}
		for p := range ps {
			if !qs[p] {
				return false
			}
		}
	}
	return true
}

// routineShareHeartbeat is routineConsumerHeartbeat for a KIP-932
// ShareGroupHeartbeat.
func routineShareHeartbeat(e *decode.Event) bool {
	h := e.ShareGroupHeartbeat
	return h != nil && e.Responded() && h.ErrorCode == 0 && h.MemberEpoch > 0 && h.AssignedEpoch == h.MemberEpoch &&
		h.Assignment == nil && h.SubscribedTopicNames == nil
}

// routineStreamsHeartbeat is routineConsumerHeartbeat for a KIP-1071
// StreamsGroupHeartbeat: task offsets change on every heartbeat and are
// not news.
func routineStreamsHeartbeat(e *decode.Event) bool {
	h := e.StreamsGroupHeartbeat
	return h != nil && e.Responded() && h.ErrorCode == 0 && h.MemberEpoch > 0 && h.AssignedEpoch == h.MemberEpoch &&
		h.Active == nil && h.Standby == nil && h.Warmup == nil && h.Topology == nil && len(h.Status) == 0
}

// eventLevel is the level of an event's line, given its error code.
func eventLevel(apiKey int16, errorCode int16) zapcore.Level {
	if routineAPIs[apiKey] && errorCode == 0 {
		return zapcore.DebugLevel
	}
	return zapcore.InfoLevel
}

// AddEvents logs each group event.
func (l *exchangeLog) AddEvents(events []decode.Event) {
	for i := range events {
		l.event(&events[i])
	}
}

func (l *exchangeLog) event(e *decode.Event) {
	if !decode.GroupAPI(e.APIKey) {
		return
	}
	f := e.Summary()
	level := eventLevel(e.APIKey, f.ErrorCode)
	if routineConsumerHeartbeat(e) || routineShareHeartbeat(e) || routineStreamsHeartbeat(e) {
		level = zapcore.DebugLevel
	}
	ce := l.log.Check(level, "group exchange")
	if ce == nil {
		return
	}
	ce.Write(
		zap.String("group", e.Group),
		zap.String("member_id", f.Member),
		zap.String("instance_id", f.Instance),
		zap.Int32("generation", f.Generation),
		zap.String("api", decode.APIName(e.APIKey)),
		zap.Int16("api_version", e.APIVersion),
		zap.String("error", decode.ErrorName(f.ErrorCode)),
		zap.Duration("latency", e.Latency()),
		zap.String("client_id", e.ClientID),
		zap.String("client_addr", e.ClientAddr),
		zap.Int32("broker_id", e.BrokerID),
	)
}
