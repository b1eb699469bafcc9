package timeline

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// StreamsView is a streams group's story (StreamsReport) with typed
// times, for the diagnosis: its members' task lanes and fencings, the
// statuses the coordinator raised and the warm-ups it ran.
type StreamsView struct {
	GroupEpoch int32
	// AcceptableRecoveryLag is the changelog lag under which a warm-up
	// counts as caught up; -1 unknown.
	AcceptableRecoveryLag int64
	Members               []StreamsMemberView // sorted by member id
	Statuses              []StreamsStatusView // in the order raised
	Warmups               []StreamsWarmupView // in the order assigned
}

// StreamsMemberView is one member of a streams group.
type StreamsMemberView struct {
	MemberID, InstanceID, ProcessID, ClientID, ClientAddr string
	LeftAt                                                time.Time // when it left or was fenced; zero while active
	// Lane is its tasks over time: each step holds from At until the next
	// step (or LeftAt).
	Lane   []StreamsStepView
	Fences []FenceView
}

// StreamsStepView is a member's tasks from one response on.
type StreamsStepView struct {
	At                      time.Time
	Epoch                   int32
	Active, Standby, Warmup []string
}

// FenceView is one fencing of a member.
type FenceView struct {
	At    time.Time
	Epoch int32
	Error string
}

// StreamsStatusView is one status the coordinator raised.
type StreamsStatusView struct {
	Name                string
	RaisedAt, ClearedAt time.Time // ClearedAt zero while raised
}

// StreamsWarmupView is one warm-up task on one member.
type StreamsWarmupView struct {
	Task, MemberID string
	// AssignedAt, PromotedAt (zero if never) and EndedAt (when taken away
	// unpromoted or the member left; zero if promoted or running).
	AssignedAt, PromotedAt, EndedAt time.Time
	Lag                             int64 // the last changelog lag the member reported; -1 unknown
}

// streamsView is g's streams story as a StreamsView; nil for a group that
// is not a streams group.
func (g *group) streamsView() *StreamsView {
	st := g.streams
	if st == nil {
		return nil
	}
	v := &StreamsView{GroupEpoch: st.epoch, AcceptableRecoveryLag: st.recoveryLag}
	for _, id := range sortedKeys(st.members) {
		m := st.members[id]
		mv := StreamsMemberView{MemberID: id, InstanceID: m.instanceID, ProcessID: m.processID, ClientID: m.clientID,
			ClientAddr: m.clientAddr, LeftAt: m.leftAt}
		for _, s := range m.steps {
			mv.Lane = append(mv.Lane, StreamsStepView{At: s.at, Epoch: s.epoch, Active: taskStrings(s.active),
				Standby: taskStrings(s.standby), Warmup: taskStrings(s.warmup)})
		}
		for _, f := range m.fences {
			mv.Fences = append(mv.Fences, FenceView{At: f.at, Epoch: f.epoch, Error: f.err})
		}
		v.Members = append(v.Members, mv)
	}
	for _, s := range st.statuses {
		v.Statuses = append(v.Statuses, StreamsStatusView{Name: decode.StreamsStatusName(s.code), RaisedAt: s.raised, ClearedAt: s.clearedAt})
	}
	for _, w := range st.warmups {
		v.Warmups = append(v.Warmups, StreamsWarmupView{Task: w.task.String(), MemberID: w.member, AssignedAt: w.at,
			PromotedAt: w.promotedAt, EndedAt: w.endAt, Lag: w.lag})
	}
	return v
}
