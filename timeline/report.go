package timeline

import (
	"fmt"
	"slices"
	"time"
)

// Report is the JSON document of everything the engine saw: one entry per
// group with its generations. docs/timeline-json.md documents every field;
// the field names are stable. Times are RFC 3339 with nanoseconds in UTC;
// durations are milliseconds; null means unknown.
type Report struct {
	Groups []GroupReport `json:"groups"`
}

// GroupReport is one consumer group.
type GroupReport struct {
	Group            string                 `json:"group"`
	GroupProtocol    string                 `json:"groupProtocol"`
	ProtocolType     string                 `json:"protocolType"`
	FirstSeen        string                 `json:"firstSeen"`
	LastSeen         string                 `json:"lastSeen"`
	Coordinator      *CoordinatorReport     `json:"coordinator"`
	Generations      []GenerationReport     `json:"generations"`
	PendingRebalance *PendingReport         `json:"pendingRebalance"`
	Storms           []StormReport          `json:"storms"`
	ConsumerMembers  []ConsumerMemberReport `json:"consumerMembers"`
	Unknown          []UnknownReport        `json:"unknown"`
}

// CoordinatorReport is the group's coordinator from FindCoordinator.
type CoordinatorReport struct {
	NodeID int32  `json:"nodeId"`
	Host   string `json:"host"`
	Port   int32  `json:"port"`
}

// GenerationReport is one generation (KIP-848: one group epoch) and the
// rebalance that formed it.
type GenerationReport struct {
	Generation              int32               `json:"generation"`
	Status                  string              `json:"status"`
	ProtocolType            string              `json:"protocolType"`
	Protocol                string              `json:"protocol"`
	Mode                    string              `json:"mode"`
	Leader                  string              `json:"leader"`
	LeaderChange            *LeaderChangeReport `json:"leaderChange"`
	Trigger                 TriggerReport       `json:"trigger"`
	StartedAt               *string             `json:"startedAt"`
	StartIsUpperBound       bool                `json:"startIsUpperBound"`
	JoinCompletedAt         *string             `json:"joinCompletedAt"`
	StableAt                *string             `json:"stableAt"`
	StopTheWorldMs          *float64            `json:"stopTheWorldMs"`
	JoinMs                  *float64            `json:"joinMs"`
	SyncMs                  *float64            `json:"syncMs"`
	LeaderPlanMs            *float64            `json:"leaderPlanMs"`
	ReconcileMs             *float64            `json:"reconcileMs"`
	RebalanceTimeoutMs      *float64            `json:"rebalanceTimeoutMs"`
	WaitedFor               string              `json:"waitedFor"`
	MemberListComplete      bool                `json:"memberListComplete"`
	Members                 []MemberReport      `json:"members"`
	Departed                []DepartureReport   `json:"departed"`
	RejoinsWithoutRebalance []RejoinReport      `json:"rejoinsWithoutRebalance"`
	Unassigned              map[string][]int32  `json:"unassigned"`
	MembersWithNothing      []string            `json:"membersWithNothing"`
	CommitsDuringRevocation []CommitReport      `json:"commitsDuringRevocation"`
	SuspectCommits          []SuspectReport     `json:"suspectCommits"`
	FollowUpOf              *int32              `json:"followUpOf"`
	FollowUpChain           int                 `json:"followUpChain"`
	Unsettled               string              `json:"unsettled"`
	Unknown                 []UnknownReport     `json:"unknown"`
}

// LeaderChangeReport says why the leader is not the previous one.
type LeaderChangeReport struct {
	Previous string `json:"previous"`
	Reason   string `json:"reason"`
}

// TriggerReport is what moved the group out of Stable.
type TriggerReport struct {
	Kind   string  `json:"kind"`
	Member string  `json:"member"`
	Reason string  `json:"reason"`
	At     *string `json:"at"`
}

// MemberReport is one member of a generation.
type MemberReport struct {
	MemberID           string             `json:"memberId"`
	InstanceID         string             `json:"instanceId"`
	ClientID           string             `json:"clientId"`
	ClientAddr         string             `json:"clientAddr"`
	Status             string             `json:"status"`
	Replaces           string             `json:"replaces"`
	ReplacedBy         string             `json:"replacedBy"`
	Observed           bool               `json:"observed"`
	JoinedAt           *string            `json:"joinedAt"`
	JoinWaitMs         *float64           `json:"joinWaitMs"`
	JoinRetried        bool               `json:"joinRetried"`
	JoinReason         string             `json:"joinReason"`
	SyncedAt           *string            `json:"syncedAt"`
	StopTheWorldMs     *float64           `json:"stopTheWorldMs"`
	SessionTimeoutMs   *float64           `json:"sessionTimeoutMs"`
	RebalanceTimeoutMs *float64           `json:"rebalanceTimeoutMs"`
	Subscription       []string           `json:"subscription"`
	OwnedPartitions    map[string][]int32 `json:"ownedPartitions"`
	Rack               string             `json:"rack"`
	Assignment         map[string][]int32 `json:"assignment"`
	Added              map[string][]int32 `json:"added"`
	Revoked            map[string][]int32 `json:"revoked"`
	Kept               map[string][]int32 `json:"kept"`
	MemberEpoch        *int32             `json:"memberEpoch"`
}

// DepartureReport is a member of the previous generation that is not in
// this one.
type DepartureReport struct {
	MemberID   string             `json:"memberId"`
	InstanceID string             `json:"instanceId"`
	How        string             `json:"how"`
	Reason     string             `json:"reason"`
	At         *string            `json:"at"`
	Partitions map[string][]int32 `json:"partitions"`
}

// RejoinReport is a JoinGroup answered within the generation, without a
// rebalance (static member restart, KIP-345).
type RejoinReport struct {
	At         string `json:"at"`
	MemberID   string `json:"memberId"`
	InstanceID string `json:"instanceId"`
	Replaces   string `json:"replaces"`
	ClientID   string `json:"clientId"`
	ClientAddr string `json:"clientAddr"`
}

// CommitReport is an OffsetCommit made between the start of the rebalance
// and the member's own SyncGroup response.
type CommitReport struct {
	MemberID   string                      `json:"memberId"`
	At         string                      `json:"at"`
	Generation int32                       `json:"generation"`
	Offsets    map[string]map[int32]int64  `json:"offsets"`
	Errors     map[string]map[int32]string `json:"errors,omitempty"`
	LatencyMs  *float64                    `json:"latencyMs"`
	Result     string                      `json:"result"`
	Failed     bool                        `json:"failed"`
}

// SuspectReport is a committed partition the next owner will re-process.
type SuspectReport struct {
	MemberID        string   `json:"memberId"`
	At              string   `json:"at"`
	Generation      int32    `json:"generation"`
	Topic           string   `json:"topic"`
	Partition       int32    `json:"partition"`
	Offset          int64    `json:"offset"`
	CommittedOffset *int64   `json:"committedOffset"`
	CommittedBy     string   `json:"committedBy"`
	Owner           string   `json:"owner"`
	Reasons         []string `json:"reasons"`
}

// StormReport is a run of rebalances that reached the storm threshold.
type StormReport struct {
	From            string         `json:"from"`
	To              string         `json:"to"`
	Rebalances      int            `json:"rebalances"`
	Generations     []int32        `json:"generations"`
	DominantTrigger string         `json:"dominantTrigger"`
	Triggers        map[string]int `json:"triggers"`
	Members         []string       `json:"members"`
	Ongoing         bool           `json:"ongoing"`
	EndedAt         *string        `json:"endedAt"`
}

// PendingReport is a rebalance that started but formed no generation yet.
type PendingReport struct {
	Generation        int32         `json:"generation"`
	StartedAt         *string       `json:"startedAt"`
	StartIsUpperBound bool          `json:"startIsUpperBound"`
	Trigger           TriggerReport `json:"trigger"`
	// CommitsDuringRevocation are the commits made since it started.
	CommitsDuringRevocation []CommitReport `json:"commitsDuringRevocation"`
}

// ConsumerMemberReport is one KIP-848 member's history.
type ConsumerMemberReport struct {
	MemberID        string             `json:"memberId"`
	InstanceID      string             `json:"instanceId"`
	ClientID        string             `json:"clientId"`
	ClientAddr      string             `json:"clientAddr"`
	Rack            string             `json:"rack"`
	Subscription    []string           `json:"subscription"`
	SubscribedRegex string             `json:"subscribedRegex"`
	ServerAssignor  string             `json:"serverAssignor"`
	Active          bool               `json:"active"`
	JoinedAt        *string            `json:"joinedAt"`
	LeftAt          *string            `json:"leftAt"`
	MemberEpoch     int32              `json:"memberEpoch"`
	Assignment      map[string][]int32 `json:"assignment"`
	Epochs          []EpochReport      `json:"epochs"`
	Fences          []FenceReport      `json:"fences"`
}

// EpochReport is one change of a KIP-848 member's epoch or assignment.
type EpochReport struct {
	At         string             `json:"at"`
	Epoch      int32              `json:"epoch"`
	Assignment map[string][]int32 `json:"assignment"`
	Added      map[string][]int32 `json:"added"`
	Revoked    map[string][]int32 `json:"revoked"`
}

// FenceReport is a KIP-848 member fenced by the coordinator.
type FenceReport struct {
	At    string `json:"at"`
	Epoch int32  `json:"epoch"`
	Error string `json:"error"`
}

// UnknownReport is something kproxy could not see, stated instead of
// guessed.
type UnknownReport struct {
	What string `json:"what"`
	Why  string `json:"why"`
}

// Report builds the JSON document from the engine's state. It does not
// change the state: calling it at any time, any number of times, is safe.
func (e *Engine) Report() *Report {
	r := &Report{Groups: []GroupReport{}}
	ids := make([]string, 0, len(e.groups))
	for _, g := range e.groups {
		ids = append(ids, g.id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		r.Groups = append(r.Groups, e.byID[id].report())
	}
	return r
}

func (g *group) report() GroupReport {
	gr := GroupReport{Group: g.id, GroupProtocol: "classic", ProtocolType: g.protocolType,
		FirstSeen: stamp(g.firstSeen), LastSeen: stamp(g.lastSeen),
		Generations: []GenerationReport{}, Storms: []StormReport{}, ConsumerMembers: []ConsumerMemberReport{},
		Unknown: unknowns(g.notes)}
	if g.consumer != nil {
		gr.GroupProtocol = "consumer"
		gr.ConsumerMembers = g.consumerMembersReport()
	}
	if g.dropped > 0 {
		gr.Unknown = append(gr.Unknown, UnknownReport{What: "droppedGenerations",
			Why: fmt.Sprintf("the %d oldest generations were dropped from memory (more than %d kept)", g.dropped, g.e.cfg.MaxGenerations)})
	}
	if c := g.coordinator; c != nil {
		gr.Coordinator = &CoordinatorReport{NodeID: c.NodeID, Host: c.Host, Port: c.Port}
	}
	for _, gen := range g.gens {
		gr.Generations = append(gr.Generations, g.generationReport(gen, -1))
	}
	if n := g.next; n != nil && n.empty == nil {
		gr.PendingRebalance = &PendingReport{Generation: n.num, StartedAt: stampPtr(n.start),
			StartIsUpperBound: n.startBound, Trigger: triggerReport(n.trigger), CommitsDuringRevocation: []CommitReport{}}
		for _, c := range n.commits {
			gr.PendingRebalance.CommitsDuringRevocation = append(gr.PendingRebalance.CommitsDuringRevocation, g.commitReport(&c))
		}
	}
	for _, st := range g.storm.storms {
		gr.Storms = append(gr.Storms, stormReport(st))
	}
	return gr
}

func unknowns(us []unknown) []UnknownReport {
	out := make([]UnknownReport, 0, len(us))
	for _, u := range us {
		out = append(out, UnknownReport{What: u.what, Why: u.why})
	}
	return out
}

func triggerReport(t trigger) TriggerReport {
	return TriggerReport{Kind: t.kind, Member: t.member, Reason: t.reason, At: stampPtr(t.at)}
}

// generationReport renders one generation. A generation that has not yet
// closed its join phase is rendered as far as it is known. Members after
// the first maxMembers (when not negative) have only their id and
// replacement: enough for a summary block capped at maxMembers lines (see
// summaryLines), which counts them without showing them.
func (g *group) generationReport(gen *generation, maxMembers int) GenerationReport {
	names := g.e.topics.named
	if gen.mode != ModeConsumer {
		names = func(p partitions) partitions { return p }
	}
	mode := gen.mode
	if mode == "" {
		mode = modeOf(gen)
	}
	r := GenerationReport{
		Generation: gen.num, Status: gen.phase.String(), ProtocolType: gen.protocolType, Protocol: gen.protocol,
		Mode: mode, Leader: gen.leader, Trigger: triggerReport(gen.trigger),
		StartedAt: stampPtr(gen.start), StartIsUpperBound: gen.startBound,
		JoinCompletedAt: stampPtr(gen.joinEnd), StableAt: stampPtr(gen.stableAt),
		WaitedFor: gen.slowest, MemberListComplete: gen.listSeen,
		Members: make([]MemberReport, 0, len(gen.members)), Departed: []DepartureReport{}, RejoinsWithoutRebalance: []RejoinReport{},
		Unassigned: names(gen.unassigned).json(), MembersWithNothing: append([]string{}, gen.nothing...),
		CommitsDuringRevocation: []CommitReport{}, SuspectCommits: []SuspectReport{},
		FollowUpChain: gen.chain, Unsettled: gen.unsettled, Unknown: unknowns(gen.unknown),
	}
	if gen.midway {
		r.Status = "observed"
		r.StableAt = nil
	}
	if gen.prevLeader != "" {
		r.LeaderChange = &LeaderChangeReport{Previous: gen.prevLeader, Reason: gen.leaderReason}
	}
	if gen.followUpOf != 0 {
		f := gen.followUpOf
		r.FollowUpOf = &f
	}
	if gen.rebalanceTimeout > 0 {
		r.RebalanceTimeoutMs = msPtr(gen.rebalanceTimeout, true)
	}
	g.durations(gen, &r)
	for i, id := range gen.memberIDs() {
		m := gen.members[id]
		if maxMembers >= 0 && i >= maxMembers {
			r.Members = append(r.Members, MemberReport{MemberID: m.id, ReplacedBy: m.replacedBy})
			continue
		}
		r.Members = append(r.Members, memberReport(gen, m, names))
	}
	for _, d := range gen.departed {
		r.Departed = append(r.Departed, DepartureReport{MemberID: d.member, InstanceID: d.instanceID, How: d.how,
			Reason: d.reason, At: stampPtr(d.at), Partitions: names(d.lost).json()})
	}
	for _, rj := range gen.rejoins {
		r.RejoinsWithoutRebalance = append(r.RejoinsWithoutRebalance, RejoinReport{At: stamp(rj.at), MemberID: rj.member,
			InstanceID: rj.instanceID, Replaces: rj.replaces, ClientID: rj.clientID, ClientAddr: rj.clientAddr})
	}
	for _, c := range gen.commits {
		r.CommitsDuringRevocation = append(r.CommitsDuringRevocation, g.commitReport(&c))
	}
	for _, s := range gen.suspects {
		sr := SuspectReport{MemberID: s.member, At: stamp(s.at), Generation: s.generation, Topic: s.topic,
			Partition: s.partition, Offset: s.offset, CommittedBy: s.committedBy, Owner: s.owner,
			Reasons: append([]string{}, s.reasons...)}
		if s.committedKnown {
			v := s.committed
			sr.CommittedOffset = &v
		}
		r.SuspectCommits = append(r.SuspectCommits, sr)
	}
	return r
}

// durations fills the generation's timings: stop-the-world from the start
// to the last SyncGroup response, its join and sync phases, and how long
// the leader took to send its plan.
func (g *group) durations(gen *generation, r *GenerationReport) {
	known := func(ts ...time.Time) bool {
		for _, t := range ts {
			if t.IsZero() {
				return false
			}
		}
		return true
	}
	if gen.mode == ModeConsumer {
		zero := 0.0
		r.StopTheWorldMs = &zero
		r.ReconcileMs = msPtr(gen.stableAt.Sub(gen.start), known(gen.start, gen.stableAt))
		return
	}
	if gen.midway || gen.phase == phaseEmpty {
		return
	}
	r.StopTheWorldMs = msPtr(gen.stableAt.Sub(gen.start), known(gen.start, gen.stableAt))
	r.JoinMs = msPtr(gen.joinEnd.Sub(gen.start), known(gen.start, gen.joinEnd))
	r.SyncMs = msPtr(gen.stableAt.Sub(gen.joinEnd), known(gen.joinEnd, gen.stableAt))
	from := gen.joinEnd
	if l := gen.members[gen.leader]; l != nil && !l.joinRespAt.IsZero() {
		from = l.joinRespAt
	}
	r.LeaderPlanMs = msPtr(gen.planAt.Sub(from), gen.planSeen && known(from, gen.planAt))
}

func memberReport(gen *generation, m *member, names func(partitions) partitions) MemberReport {
	mr := MemberReport{MemberID: m.id, InstanceID: m.instanceID, ClientID: m.clientID, ClientAddr: m.clientAddr,
		Status: m.status, Replaces: m.replaces, ReplacedBy: m.replacedBy, Observed: m.joinSeen,
		JoinedAt: stampPtr(m.joinAt), JoinRetried: m.retried, JoinReason: m.reason, SyncedAt: stampPtr(m.syncedAt),
		Rack: m.rack, Assignment: names(m.resolved()).json(), Added: names(m.added).json(),
		Revoked: names(m.revoked).json(), Kept: names(m.kept).json()}
	if mr.Status == "" {
		mr.Status = "unobserved"
		if gen.midway {
			mr.Status = "member"
		}
	}
	if m.subscription != nil {
		mr.Subscription = append([]string{}, m.subscription...)
	}
	if m.owned != nil {
		mr.OwnedPartitions = m.owned.json()
	}
	if m.joinSeen && gen.mode != ModeConsumer {
		mr.JoinWaitMs = msPtr(m.joinRespAt.Sub(m.joinAt), !m.joinRespAt.IsZero())
		mr.SessionTimeoutMs = msPtr(m.sessionTimeout, m.sessionTimeout > 0)
		mr.RebalanceTimeoutMs = msPtr(m.rebalanceTimeout, m.rebalanceTimeout > 0)
	}
	if m.synced && !m.joinAt.IsZero() {
		mr.StopTheWorldMs = msPtr(m.syncedAt.Sub(m.joinAt), gen.mode != ModeConsumer)
	}
	if gen.mode == ModeConsumer {
		e := m.epoch
		mr.MemberEpoch = &e
		mr.SyncedAt = stampPtr(m.reachedAt)
		mr.Kept = nil
	}
	return mr
}

func (g *group) commitReport(c *commit) CommitReport {
	cr := CommitReport{MemberID: c.member, At: stamp(c.at), Generation: c.generation, Offsets: g.commitOffsets(c),
		Errors: g.commitErrors(c), Failed: c.failed, Result: "ok"}
	switch {
	case !c.responded:
		cr.Result = "unknown"
	case c.failed:
		cr.Result = "failed"
	}
	cr.LatencyMs = msPtr(c.latency, c.responded)
	return cr
}

func stormReport(st *storm) StormReport {
	kind, _ := st.dominant()
	sr := StormReport{From: stamp(st.from), To: stamp(st.to), Rebalances: st.count, DominantTrigger: kind,
		Triggers: st.triggers(), Members: st.members(), Ongoing: !st.ended}
	if sr.Members == nil {
		sr.Members = []string{}
	}
	for _, m := range st.marks {
		sr.Generations = append(sr.Generations, m.gen)
	}
	if st.ended {
		sr.EndedAt = stampPtr(st.endedAt)
	}
	return sr
}

func (g *group) consumerMembersReport() []ConsumerMemberReport {
	out := []ConsumerMemberReport{}
	names := g.e.topics.named
	for _, id := range sortedKeys(g.consumer.members) {
		cm := g.consumer.members[id]
		r := ConsumerMemberReport{MemberID: id, InstanceID: cm.instanceID, ClientID: cm.clientID, ClientAddr: cm.clientAddr,
			Rack: cm.rack, Subscription: cm.subscription, SubscribedRegex: cm.regex, ServerAssignor: cm.assignor,
			Active: cm.active, JoinedAt: stampPtr(cm.joinedAt), LeftAt: stampPtr(cm.leftAt), MemberEpoch: cm.epoch,
			Assignment: names(cm.assigned).json(), Epochs: []EpochReport{}, Fences: []FenceReport{}}
		for _, s := range cm.steps {
			r.Epochs = append(r.Epochs, EpochReport{At: stamp(s.at), Epoch: s.epoch, Assignment: names(s.assigned).json(),
				Added: names(s.added).json(), Revoked: names(s.revoked).json()})
		}
		for _, f := range cm.fences {
			r.Fences = append(r.Fences, FenceReport{At: stamp(f.at), Epoch: f.epoch, Error: f.err})
		}
		out = append(out, r)
	}
	return out
}
