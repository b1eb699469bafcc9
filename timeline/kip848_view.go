package timeline

import "time"

// ConsumerMemberView is one KIP-848 member's history (ConsumerMemberReport)
// with typed times, and the facts the diagnosis reads beyond the report:
// its rebalance timeout, its joins and leaves, what it is still revoking
// and the session timeout inferred when it expired.
type ConsumerMemberView struct {
	MemberID, InstanceID, ClientID, ClientAddr string
	Protocol                                   string // ProtocolConsumer, ProtocolShare or ProtocolClassic
	Subscription                               []string
	// Active is set while it is a member: not seen leaving, fenced or
	// expired since it last joined.
	Active      bool
	MemberEpoch int32
	// Assignment is its current assignment (nil before its first one or
	// after a fencing); Revoking what it was told to revoke and has not
	// released yet.
	Assignment, Revoking map[string][]int32
	// RebalanceTimeout is the RebalanceTimeoutMs of its latest heartbeat
	// that carried one (the Java client's max.poll.interval.ms): how long
	// the coordinator waits for it to revoke; 0 unknown.
	RebalanceTimeout  time.Duration
	HeartbeatInterval time.Duration // the latest the coordinator gave it; 0 unknown
	LastHeartbeat     time.Time     // its latest heartbeat answered without error
	// Joins are its heartbeats at epoch 0 that were accepted (its first
	// join and each rejoin), Leaves its leave heartbeats: the latest 32
	// of each.
	Joins  []time.Time
	Leaves []LeaveView
	// Steps are the changes of its epoch or assignment (EpochReport).
	Steps  []EpochStepView
	Fences []FenceView
	// Expired is when its session was last inferred expired (the broker
	// removed it after a silence; zero if never, or if it was heard from
	// again at its epoch, which withdraws the inference), with the
	// session timeout's bounds (SessionLow 0: no lower bound).
	Expired                 time.Time
	SessionLow, SessionHigh time.Duration
}

// LeaveView is one leave heartbeat: Epoch -1, or -2 for a static member
// leaving for a restart (KIP-345: its partitions wait for it until its
// session times out).
type LeaveView struct {
	At    time.Time
	Epoch int32
}

// EpochStepView is one change of a KIP-848 member's epoch or assignment,
// as the coordinator's answer gave it at At.
type EpochStepView struct {
	At                       time.Time
	Epoch                    int32
	Assigned, Added, Revoked map[string][]int32
}

// consumerMembersView is g's KIP-848 members; nil for a group that never
// had any.
func (g *group) consumerMembersView() []ConsumerMemberView {
	cg := g.consumerRecords()
	if cg == nil {
		return nil
	}
	names := g.e.topics.named
	out := make([]ConsumerMemberView, 0, len(cg.members))
	for _, id := range sortedKeys(cg.members) {
		cm := cg.members[id]
		v := ConsumerMemberView{MemberID: id, InstanceID: cm.instanceID, ClientID: cm.clientID, ClientAddr: cm.clientAddr,
			Protocol: cm.proto(cg), Subscription: cm.subscription, Active: cm.active, MemberEpoch: cm.epoch,
			Assignment: names(cm.assigned).json(), Revoking: names(cm.revoking).json(),
			RebalanceTimeout: cm.rebalanceTimeout, HeartbeatInterval: cm.interval, LastHeartbeat: cm.lastAt,
			Joins: cm.joins, SessionLow: cm.sessionLow, SessionHigh: cm.sessionHigh}
		if cm.sessionHigh > 0 {
			v.Expired = cm.expiredAt
		}
		for _, l := range cm.leaves {
			v.Leaves = append(v.Leaves, LeaveView{At: l.at, Epoch: l.epoch})
		}
		for _, s := range cm.steps {
			v.Steps = append(v.Steps, EpochStepView{At: s.at, Epoch: s.epoch, Assigned: names(s.assigned).json(),
				Added: names(s.added).json(), Revoked: names(s.revoked).json()})
		}
		for _, f := range cm.fences {
			v.Fences = append(v.Fences, FenceView{At: f.at, Epoch: f.epoch, Error: f.err})
		}
		out = append(out, v)
	}
	return out
}
