package timeline

import (
	"fmt"
	"slices"
	"strings"
	"time"
)

// Report is the JSON document of everything the engine saw: one entry per
// group with its generations. docs/timeline-json.md documents every field;
// the field names are stable. Times are RFC 3339 with nanoseconds in UTC;
// durations are milliseconds; null means unknown.
type Report struct {
	Groups []GroupReport `json:"groups"` // every group seen, sorted by group id
	// Unobserved is what the timeline could not see: group exchanges too
	// large for the proxy to keep; absent when none.
	Unobserved *UnobservedReport `json:"unobserved,omitempty"`
}

// GroupReport is one consumer group.
type GroupReport struct {
	Group            string                 `json:"group"`            // the group id
	GroupProtocol    string                 `json:"groupProtocol"`    // "classic" (JoinGroup/SyncGroup), "consumer" (KIP-848 ConsumerGroupHeartbeat), "share" (KIP-932 ShareGroupHeartbeat) or "streams" (KIP-1071 StreamsGroupHeartbeat)
	ProtocolType     string                 `json:"protocolType"`     // the embedded protocol type: "consumer", "connect", ...; "" if never seen
	FirstSeen        string                 `json:"firstSeen"`        // time of the group's first request kproxy saw
	LastSeen         string                 `json:"lastSeen"`         // time of the group's last response kproxy saw
	Coordinator      *CoordinatorReport     `json:"coordinator"`      // the last FindCoordinator answer; null if none seen
	Generations      []GenerationReport     `json:"generations"`      // in the order they formed (ascending numbers)
	PendingRebalance *PendingReport         `json:"pendingRebalance"` // a rebalance that formed no generation by the end of the input; null if none
	Storms           []StormReport          `json:"storms"`           // runs of rebalances that reached the storm threshold
	ConsumerMembers  []ConsumerMemberReport `json:"consumerMembers"`  // KIP-848: each member's epoch history; empty for classic groups
	Unknown          []UnknownReport        `json:"unknown"`          // what kproxy could not see about the group as a whole
	Share            *ShareReport           `json:"share"`            // KIP-932: the share group's records; null for other groups
	Streams          *StreamsReport         `json:"streams"`          // KIP-1071: the streams group's epochs, members and tasks; null for other groups
	Migrations       []MigrationReport      `json:"migrations"`       // online migrations between the classic and the consumer protocol, in order
}

// MigrationReport is one online migration of a group between the classic
// protocol and KIP-848's consumer protocol (see migration.go).
type MigrationReport struct {
	Direction string `json:"direction"` // "upgrade" (classic to consumer) or "downgrade" (consumer to classic)
	StartedAt string `json:"startedAt"` // the first member of the new protocol joined
	StartedBy string `json:"startedBy"` // that member
	// ConvertedAt is when the group changed type: an upgrade at the first
	// consumer-protocol join, a downgrade when its last consumer-protocol
	// member was gone; null while a downgrade waits for it.
	ConvertedAt *string `json:"convertedAt"`
	Generation  *int32  `json:"generation"`  // the generation (group epoch) the group was at when it changed type; null while not converted
	ConvertedBy string  `json:"convertedBy"` // the member whose join (upgrade) or departure (downgrade) converted it; "" while not converted
	// CompletedAt is when no member of the old protocol remained; null
	// while some do.
	CompletedAt *string `json:"completedAt"`
	LastMember  string  `json:"lastMember"` // the last member of the old protocol to go; "" while not complete, or if none remained
}

// CoordinatorReport is the group's coordinator from FindCoordinator.
type CoordinatorReport struct {
	NodeID int32  `json:"nodeId"` // the coordinator's broker node id
	Host   string `json:"host"`   // the coordinator's host
	Port   int32  `json:"port"`   // the coordinator's port
}

// GenerationReport is one generation (KIP-848: one group epoch) and the
// rebalance that formed it.
type GenerationReport struct {
	Generation int32 `json:"generation"` // the generation id (KIP-848: the group epoch)
	// Status is "joining" (JoinGroup responses arriving), "syncing" (waiting
	// for SyncGroup responses; KIP-848: members reconciling), "stable" (every
	// member kproxy can see has its assignment; KIP-848: every active member
	// reached this epoch), "superseded" (a new rebalance began first),
	// "empty" (the last member left) or "observed" (first seen after its
	// rebalance: start, trigger and joins unknown).
	Status       string `json:"status"`
	ProtocolType string `json:"protocolType"` // "consumer", "connect", ...
	// Protocol is the assignor chosen by the group ("range",
	// "cooperative-sticky", ...); KIP-848: the server assignor a member
	// asked for.
	Protocol string `json:"protocol"`
	// Mode is "eager" (every member revokes everything before rejoining),
	// "cooperative" (KIP-429: only what moves is revoked), "consumer"
	// (KIP-848), "share" (KIP-932) or "unknown".
	Mode              string              `json:"mode"`
	Leader            string              `json:"leader"`            // the leader's member id; "" unknown, and for KIP-848 (no leader)
	LeaderChange      *LeaderChangeReport `json:"leaderChange"`      // why the leader differs from the previous generation's; null when it does not
	Trigger           TriggerReport       `json:"trigger"`           // what moved the group out of Stable
	StartedAt         *string             `json:"startedAt"`         // the start of the rebalance: the time of its trigger; null unknown
	StartIsUpperBound bool                `json:"startIsUpperBound"` // the cause was not seen: StartedAt is the first sign, the real start may be earlier
	JoinCompletedAt   *string             `json:"joinCompletedAt"`   // when the coordinator answered the JoinGroups (end of the join phase); null unknown
	StableAt          *string             `json:"stableAt"`          // the last SyncGroup response (KIP-848: the last member reaching the epoch); null unknown
	// StopTheWorldMs is StableAt − StartedAt in milliseconds: how long the
	// group could not consume. Always 0 for KIP-848; null unknown.
	StopTheWorldMs *float64 `json:"stopTheWorldMs"`
	JoinMs         *float64 `json:"joinMs"` // JoinCompletedAt − StartedAt in milliseconds; null unknown or KIP-848
	SyncMs         *float64 `json:"syncMs"` // StableAt − JoinCompletedAt in milliseconds; null unknown or KIP-848
	// LeaderPlanMs is the milliseconds from the leader's JoinGroup response
	// to its SyncGroup request: how long it took to compute the plan; null
	// unknown or KIP-848.
	LeaderPlanMs       *float64 `json:"leaderPlanMs"`
	ReconcileMs        *float64 `json:"reconcileMs"`        // KIP-848 only: StableAt − StartedAt in milliseconds; null otherwise or unknown
	RebalanceTimeoutMs *float64 `json:"rebalanceTimeoutMs"` // the largest rebalance timeout among the members (the join phase deadline), milliseconds; null unknown
	// WaitedFor is the member whose JoinGroup arrived last: the one the group
	// waited for ("" with fewer than two members seen).
	WaitedFor               string            `json:"waitedFor"`
	MemberListComplete      bool              `json:"memberListComplete"`      // the leader's JoinGroup response, the only one listing every member, was seen
	Members                 []MemberReport    `json:"members"`                 // sorted by member id
	Departed                []DepartureReport `json:"departed"`                // members of the previous generation that are not in this one
	RejoinsWithoutRebalance []RejoinReport    `json:"rejoinsWithoutRebalance"` // JoinGroups answered within this generation (static member restart, KIP-345)
	// Unassigned is the partitions known to exist (previous assignment,
	// Metadata) that no member got; null when some assignment is unknown.
	Unassigned         map[string][]int32 `json:"unassigned"`
	MembersWithNothing []string           `json:"membersWithNothing"` // members assigned no partition
	// CommitsDuringRevocation are the OffsetCommits and TxnOffsetCommits
	// made between the start of the rebalance and the committing member's
	// own SyncGroup response (KIP-848: while the member had partitions to
	// revoke).
	CommitsDuringRevocation []CommitReport `json:"commitsDuringRevocation"`
	// SuspectCommits are the commits that make the next owner re-process
	// records, attached to the generation the commit named.
	SuspectCommits []SuspectReport `json:"suspectCommits"`
	FollowUpOf     *int32          `json:"followUpOf"`    // cooperative: the generation whose revocations caused this one; null when not a follow-up
	FollowUpChain  int             `json:"followUpChain"` // consecutive follow-ups up to this one; 0 when not a follow-up
	// Unsettled says why the cooperative chain is flagged as not settling
	// (too many follow-ups in a row, or revoked partitions never reassigned
	// by the end of the input); "" when it is fine.
	Unsettled string          `json:"unsettled"`
	Unknown   []UnknownReport `json:"unknown"` // what kproxy could not see about this generation
}

// LeaderChangeReport says why the leader is not the previous one.
type LeaderChangeReport struct {
	Previous string `json:"previous"` // the previous generation's leader
	Reason   string `json:"reason"`   // why the leader changed, in words
}

// TriggerReport is what moved the group out of Stable.
type TriggerReport struct {
	// Kind is "member_joined", "member_left" (LeaveGroup; KIP-848 epoch
	// −1/−2), "session_timeout" (inferred: no accepted request within the
	// member's session timeout), "subscription_changed", "leader_rejoined",
	// "member_rejoined", "member_fenced", "cooperative_follow_up",
	// "probing_rebalance" (classic Kafka Streams, KIP-441: the rejoin its
	// assignment scheduled) or "unknown".
	Kind   string `json:"kind"`
	Member string `json:"member"` // the member id concerned; "" for "unknown"
	// Reason is the client's reason verbatim (JoinGroup v8+, LeaveGroup v5+,
	// KIP-800); for "session_timeout" the evidence; for
	// "subscription_changed" without a client reason, "[old] → [new]"; for
	// "unknown", why.
	Reason string  `json:"reason"`
	At     *string `json:"at"` // when it happened; null unknown
}

// MemberReport is one member of a generation.
type MemberReport struct {
	MemberID   string `json:"memberId"`   // the member id
	InstanceID string `json:"instanceId"` // group.instance.id; "" for dynamic members
	ClientID   string `json:"clientId"`   // the client id of its requests
	ClientAddr string `json:"clientAddr"` // the client's address
	// Status is "joined" (new to the group), "rejoined" (a member of the
	// previous generation), "replaced" (a static member back under a new
	// member id), "unobserved" (listed by the leader, its own traffic never
	// seen through this kproxy) or "member" (KIP-848 member that was already
	// there, or a member seen in an "observed" generation).
	Status             string             `json:"status"`
	Replaces           string             `json:"replaces"`           // static membership: the member id this one took over from; "" if none
	ReplacedBy         string             `json:"replacedBy"`         // static membership: the member id that replaced this one; "" if none
	Observed           bool               `json:"observed"`           // its JoinGroup for this generation was seen
	JoinedAt           *string            `json:"joinedAt"`           // when its JoinGroup (its first attempt) arrived; null unknown
	JoinWaitMs         *float64           `json:"joinWaitMs"`         // how long its JoinGroup was held (waiting for the others), milliseconds; null unknown or KIP-848
	JoinRetried        bool               `json:"joinRetried"`        // it joined through MEMBER_ID_REQUIRED and a retry (KIP-394)
	JoinReason         string             `json:"joinReason"`         // the client's JoinGroup reason (v8+)
	SyncedAt           *string            `json:"syncedAt"`           // its SyncGroup response (KIP-848: when it reached the epoch); null unknown
	StopTheWorldMs     *float64           `json:"stopTheWorldMs"`     // milliseconds from its JoinGroup to its own assignment; null unknown or KIP-848
	SessionTimeoutMs   *float64           `json:"sessionTimeoutMs"`   // session timeout from its JoinGroup, milliseconds; null unknown or KIP-848
	RebalanceTimeoutMs *float64           `json:"rebalanceTimeoutMs"` // rebalance timeout from its JoinGroup, milliseconds; null unknown or KIP-848
	Subscription       []string           `json:"subscription"`       // subscribed topics; null unknown
	OwnedPartitions    map[string][]int32 `json:"ownedPartitions"`    // what it said it still owned when rejoining (subscription v1+; cooperative members); null unknown
	Rack               string             `json:"rack"`               // subscription v3+ rack id (KIP-848: RackID)
	Assignment         map[string][]int32 `json:"assignment"`         // what it got: its SyncGroup response, else the leader's plan; null unknown
	Added              map[string][]int32 `json:"added"`              // gained against what it owned in the previous generation (a new member owned nothing; KIP-848: during this epoch); null unknown
	Revoked            map[string][]int32 `json:"revoked"`            // lost against what it owned in the previous generation (KIP-848: during this epoch); null unknown
	Kept               map[string][]int32 `json:"kept"`               // kept from what it owned in the previous generation; null unknown, and always for KIP-848
	MemberEpoch        *int32             `json:"memberEpoch"`        // KIP-848 member epoch; null for classic groups
	// Protocol is the member's group protocol: "classic" (JoinGroup,
	// SyncGroup: every member of a classic generation, and the classic
	// members of a consumer group during an online migration),
	// "consumer" (KIP-848 ConsumerGroupHeartbeat) or "share" (KIP-932).
	Protocol string `json:"protocol"`
	// Streams is a classic Kafka Streams member's ("stream" assignor)
	// SubscriptionInfo and AssignmentInfo: its tasks; null for others.
	Streams *ClassicStreamsReport `json:"streams"`
}

// DepartureReport is a member of the previous generation that is not in
// this one.
type DepartureReport struct {
	MemberID   string `json:"memberId"`   // the departed member's id
	InstanceID string `json:"instanceId"` // group.instance.id; "" for dynamic members
	// How is "left" (LeaveGroup), "session_timeout" (inferred),
	// "dropped_at_deadline" (did not rejoin before the join phase ended),
	// "fenced", or "unknown" (KIP-848: not seen leaving).
	How string `json:"how"`
	// Reason is the client's reason ("left"), the evidence
	// ("session_timeout"), the deadline ("dropped_at_deadline") or the error
	// ("fenced"); "" if none.
	Reason     string             `json:"reason"`
	At         *string            `json:"at"`         // when it departed; null unknown
	Partitions map[string][]int32 `json:"partitions"` // what it owned; null unknown
}

// RejoinReport is a JoinGroup answered within the generation, without a
// rebalance (static member restart, KIP-345).
type RejoinReport struct {
	At         string `json:"at"`         // when the JoinGroup arrived
	MemberID   string `json:"memberId"`   // the member id it was answered with
	InstanceID string `json:"instanceId"` // group.instance.id; "" for dynamic members
	Replaces   string `json:"replaces"`   // the old member id whose assignment a restarted static member took over; "" if none
	ClientID   string `json:"clientId"`   // the client id of the JoinGroup
	ClientAddr string `json:"clientAddr"` // the client's address
}

// CommitReport is an OffsetCommit or TxnOffsetCommit made between the
// start of the rebalance and the member's own SyncGroup response.
type CommitReport struct {
	MemberID   string                     `json:"memberId"`   // the committing member
	At         string                     `json:"at"`         // request time
	Generation int32                      `json:"generation"` // the generation (KIP-848: member epoch) the commit used
	Offsets    map[string]map[int32]int64 `json:"offsets"`    // what it committed: topic → partition → offset
	// Errors is topic → partition → error name for the partitions that
	// failed only (REBALANCE_IN_PROGRESS, ILLEGAL_GENERATION, ...); absent
	// when every partition succeeded.
	Errors    map[string]map[int32]string `json:"errors,omitempty"`
	LatencyMs *float64                    `json:"latencyMs"` // request to response, milliseconds; null without a response
	Result    string                      `json:"result"`    // "ok", "failed", or "unknown" (no response seen)
	// Failed says some partition failed: those offsets are lost and the next
	// owner re-processes from the last good commit.
	Failed bool `json:"failed"`
	// Transaction is set for a TxnOffsetCommit (exactly-once): its offsets
	// count only if the transaction commits. Absent for an OffsetCommit.
	Transaction *TransactionReport `json:"transaction,omitempty"`
	// MemberEpoch is set for a KIP-848 commit whose epoch (Generation) was
	// not its member's: the member's epoch as its heartbeats last showed
	// it. Absent otherwise.
	MemberEpoch *int32 `json:"memberEpoch,omitempty"`
	// AssignmentEpochs is set for a KIP-848 commit at an epoch behind its
	// member's: topic → partition → the member epoch since which the
	// member held the partition (KIP-1251's assignment epoch, as its
	// heartbeats showed it), -1 when it did not hold it.
	AssignmentEpochs map[string]map[int32]int32 `json:"assignmentEpochs,omitempty"`
}

// TransactionReport is the transaction a TxnOffsetCommit added its offsets
// to, and its fate, learned from the same producer's EndTxn.
type TransactionReport struct {
	TransactionalID string `json:"transactionalId"` // the producer's transactional.id
	ProducerID      int64  `json:"producerId"`      // the producer id of the commit
	ProducerEpoch   int16  `json:"producerEpoch"`   // the producer epoch of the commit
	// Outcome is "committed" (EndTxn commit succeeded: the offsets are the
	// group's committed offsets), "aborted" (EndTxn abort succeeded: they
	// were discarded, the next owner re-processes from the last committed
	// offset) or "pending" (no successful EndTxn seen for that producer and
	// epoch: the offsets count only if the transaction committed).
	Outcome string  `json:"outcome"`
	EndedAt *string `json:"endedAt"` // the EndTxn's response time; null while pending
}

// SuspectReport is a committed partition the next owner will re-process.
type SuspectReport struct {
	MemberID        string   `json:"memberId"`        // the committing member
	At              string   `json:"at"`              // request time of the commit
	Generation      int32    `json:"generation"`      // the generation (KIP-848: member epoch) the commit named
	Topic           string   `json:"topic"`           // the committed partition's topic
	Partition       int32    `json:"partition"`       // the committed partition
	Offset          int64    `json:"offset"`          // the offset committed
	CommittedOffset *int64   `json:"committedOffset"` // the partition's last committed offset before this commit; null unknown
	CommittedBy     string   `json:"committedBy"`     // the member that committed CommittedOffset; "" unknown
	Owner           string   `json:"owner"`           // the partition's owner in that generation; "" unknown
	Reasons         []string `json:"reasons"`         // "not_owned" (not its partition in that generation) and/or "backwards"
}

// StormReport is a run of rebalances that reached the storm threshold.
type StormReport struct {
	From            string         `json:"from"`            // the start of its first rebalance
	To              string         `json:"to"`              // the start of its latest rebalance
	Rebalances      int            `json:"rebalances"`      // how many rebalances it counts
	Generations     []int32        `json:"generations"`     // the generations its rebalances formed
	DominantTrigger string         `json:"dominantTrigger"` // the most frequent trigger kind (ties by name)
	Triggers        map[string]int `json:"triggers"`        // rebalances by trigger kind
	Growth          int            `json:"growth"`          // rebalances that took the group past its peak membership (forming, scaling out)
	Members         []string       `json:"members"`         // the members named by the triggers, most frequent first
	Ongoing         bool           `json:"ongoing"`         // the input ended within the window of its last rebalance
	EndedAt         *string        `json:"endedAt"`         // the last rebalance plus the window; null while ongoing
}

// PendingReport is a rebalance that started but formed no generation yet.
type PendingReport struct {
	Generation        int32         `json:"generation"`        // the expected generation number
	StartedAt         *string       `json:"startedAt"`         // the start of the rebalance: the time of its trigger; null unknown
	StartIsUpperBound bool          `json:"startIsUpperBound"` // the cause was not seen: StartedAt is the first sign, the real start may be earlier
	Trigger           TriggerReport `json:"trigger"`           // what moved the group out of Stable
	// CommitsDuringRevocation are the commits made since it started.
	CommitsDuringRevocation []CommitReport `json:"commitsDuringRevocation"`
}

// ConsumerMemberReport is one KIP-848 member's history.
type ConsumerMemberReport struct {
	MemberID        string             `json:"memberId"`        // the member id
	InstanceID      string             `json:"instanceId"`      // group.instance.id; "" for dynamic members
	ClientID        string             `json:"clientId"`        // the client id of its heartbeats
	ClientAddr      string             `json:"clientAddr"`      // the client's address
	Rack            string             `json:"rack"`            // its RackID; "" if none
	Subscription    []string           `json:"subscription"`    // subscribed topic names; null unknown
	SubscribedRegex string             `json:"subscribedRegex"` // its subscribed topic regex; "" if none
	ServerAssignor  string             `json:"serverAssignor"`  // the server assignor it asked for; "" if none
	Active          bool               `json:"active"`          // still a member: not seen leaving or fenced since it last joined
	JoinedAt        *string            `json:"joinedAt"`        // when it last joined (epoch 0); null unknown
	LeftAt          *string            `json:"leftAt"`          // when it was last seen leaving (epoch −1/−2); null if not seen
	MemberEpoch     int32              `json:"memberEpoch"`     // its latest member epoch
	Assignment      map[string][]int32 `json:"assignment"`      // its current assignment; null before its first one or after a fencing
	Epochs          []EpochReport      `json:"epochs"`          // every change of its epoch or assignment
	Fences          []FenceReport      `json:"fences"`          // every fencing
	Protocol        string             `json:"protocol"`        // "consumer", "share", or "classic" for a classic member of a consumer group (online migration)
}

// EpochReport is one change of a KIP-848 member's epoch or assignment.
type EpochReport struct {
	At         string             `json:"at"`         // when the change was seen
	Epoch      int32              `json:"epoch"`      // the member epoch after the change
	Assignment map[string][]int32 `json:"assignment"` // the assignment after the change; null unknown
	Added      map[string][]int32 `json:"added"`      // partitions added by the change
	Revoked    map[string][]int32 `json:"revoked"`    // partitions revoked by the change
}

// FenceReport is a KIP-848 member fenced by the coordinator.
type FenceReport struct {
	At    string `json:"at"`    // when it was fenced
	Epoch int32  `json:"epoch"` // the member epoch it was fenced at
	Error string `json:"error"` // FENCED_MEMBER_EPOCH, STALE_MEMBER_EPOCH or UNKNOWN_MEMBER_ID
}

// UnknownReport is something kproxy could not see, stated instead of
// guessed.
type UnknownReport struct {
	What string `json:"what"` // a short key: "rebalance", "members", "previousGeneration", ...
	Why  string `json:"why"`  // in words, what kproxy could not see and why
}

// Report builds the JSON document from the engine's state. It does not
// change the state: calling it at any time, any number of times, is safe.
func (e *Engine) Report() *Report {
	r := &Report{Groups: []GroupReport{}}
	// By id; a re-created group's histories in the order they began
	// (incarnation.go).
	groups := slices.Clone(e.groups)
	slices.SortStableFunc(groups, func(a, b *group) int { return strings.Compare(a.id, b.id) })
	for _, g := range groups {
		r.Groups = append(r.Groups, g.report())
	}
	r.Unobserved = e.unobserved.report()
	return r
}

func (g *group) report() GroupReport {
	if d := g.dormant; d != nil {
		return *d.report()
	}
	gr := GroupReport{Group: g.id, GroupProtocol: "classic", ProtocolType: g.protocolType,
		FirstSeen: stamp(g.firstSeen), LastSeen: stamp(g.lastSeen),
		Generations: []GenerationReport{}, Storms: []StormReport{}, ConsumerMembers: []ConsumerMemberReport{},
		Unknown: unknowns(g.notes), Migrations: g.migrationsReport()}
	if g.consumerRecords() != nil {
		gr.ConsumerMembers = g.consumerMembersReport()
	}
	if g.consumer != nil {
		gr.GroupProtocol = "consumer"
		if g.consumer.share != nil {
			gr.GroupProtocol, gr.Share = "share", g.shareReport()
		}
	}
	if g.streams != nil {
		gr.GroupProtocol, gr.Streams = "streams", g.streamsReport(g.e.now)
	}
	if g.dropped > 0 {
		gr.Unknown = append(gr.Unknown, UnknownReport{What: "droppedGenerations",
			Why: fmt.Sprintf("the %d oldest generations were dropped from memory (more than %d kept)", g.dropped, g.e.cfg.MaxGenerations)})
	}
	if c := g.coordinator; c != nil {
		gr.Coordinator = &CoordinatorReport{NodeID: c.NodeID, Host: c.Host, Port: c.Port}
	}
	var frozen frozenBlock // decompressed at the first frozen generation
	for _, gen := range g.gens {
		if gen.frozen != nil {
			if frozen == nil {
				buf := scratch()
				defer scratchDone(buf)
				frozen = g.frozenBlockIn(buf)
			}
			gr.Generations = append(gr.Generations, frozen.report(gen))
			continue
		}
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

// generationReport renders one generation, not frozen. A generation that has not yet
// closed its join phase is rendered as far as it is known. Members after
// the first maxMembers (when not negative) have only their id and
// replacement: enough for a summary block capped at maxMembers lines (see
// summaryLines), which counts them without showing them.
func (g *group) generationReport(gen *generation, maxMembers int) GenerationReport {
	names := g.e.topics.named
	if !epochMode(gen.mode) {
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
		FollowUpChain: int(gen.chain), Unsettled: gen.unsettled, Unknown: unknowns(gen.unknown),
	}
	if gen.midway {
		r.Status = "observed"
		r.StableAt = nil
	}
	if lc := gen.leaderChange; lc != nil {
		r.LeaderChange = &LeaderChangeReport{Previous: lc.prev, Reason: lc.reason}
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
			r.Members = append(r.Members, MemberReport{MemberID: m.id, ReplacedBy: m.more().replacedBy})
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
	if gen.rejoinsDropped > 0 {
		r.Unknown = append(r.Unknown, UnknownReport{What: "droppedRejoins",
			Why: fmt.Sprintf("%d more rejoins without a rebalance were not kept (the first %d are), nor the members they brought that were replaced in turn: the timeline's entries tell them all", gen.rejoinsDropped, maxRejoins)})
	}
	for _, c := range gen.commits {
		r.CommitsDuringRevocation = append(r.CommitsDuringRevocation, g.commitReport(&c))
	}
	suspectsReport(gen, &r)
	return r
}

// suspectsReport adds gen's suspect commits to r, its report.
func suspectsReport(gen *generation, r *GenerationReport) {
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
	if gen.suspectsDropped > 0 {
		r.Unknown = append(r.Unknown, UnknownReport{What: "droppedSuspectCommits",
			Why: fmt.Sprintf("%d more suspect commits were not kept (the first %d are): the timeline's entries tell them all", gen.suspectsDropped, maxSuspects)})
	}
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
	if epochMode(gen.mode) {
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
	if l := gen.members[gen.leader]; l != nil && !l.joinRespAt().IsZero() {
		from = l.joinRespAt()
	}
	r.LeaderPlanMs = msPtr(gen.planAt.Sub(from), gen.planSeen && known(from, gen.planAt))
}

func memberReport(gen *generation, m *member, names func(partitions) partitions) MemberReport {
	added, revoked, kept := m.moves()
	mr := MemberReport{MemberID: m.id, InstanceID: m.who.instanceID, ClientID: m.who.clientID, ClientAddr: m.who.clientAddr,
		Status: m.status.String(), Replaces: m.more().replaces, ReplacedBy: m.more().replacedBy, Observed: m.joinSeen,
		JoinedAt: stampPtr(m.joinAt()), JoinRetried: m.retried, JoinReason: m.reason, SyncedAt: stampPtr(m.syncedAt()),
		Rack: m.who.rack, Assignment: names(m.resolved()).json(), Added: names(added).json(),
		Revoked: names(revoked).json(), Kept: names(kept).json()}
	if mr.Status == "" {
		mr.Status = "unobserved"
		if gen.midway {
			mr.Status = "member"
		}
	}
	if m.who.subscription != nil {
		mr.Subscription = append([]string{}, m.who.subscription...)
	}
	if m.owned != nil {
		mr.OwnedPartitions = m.owned.json()
	}
	mr.Streams = classicStreamsReport(gen, m)
	if m.joinSeen && !epochMode(gen.mode) {
		mr.JoinWaitMs = msPtr(m.joinRespAt().Sub(m.joinAt()), !m.joinRespAt().IsZero())
		mr.SessionTimeoutMs = msPtr(m.who.sessionTimeout, m.who.sessionTimeout > 0)
		mr.RebalanceTimeoutMs = msPtr(m.who.rebalanceTimeout, m.who.rebalanceTimeout > 0)
	}
	if m.synced && !m.joinAt().IsZero() {
		mr.StopTheWorldMs = msPtr(m.syncedAt().Sub(m.joinAt()), !epochMode(gen.mode))
	}
	mr.Protocol = memberProtocol(gen, m)
	if epochMode(gen.mode) {
		e := m.epoch
		mr.MemberEpoch = &e
		mr.SyncedAt = stampPtr(m.reachedAt())
		mr.Kept = nil
	}
	return mr
}

func (g *group) commitReport(c *commit) CommitReport {
	cr := CommitReport{MemberID: c.member, At: stamp(c.at()), Generation: c.generation, Offsets: commitOffsets(c),
		Errors: commitErrors(c), Failed: c.failed, Result: "ok"}
	switch {
	case !c.responded:
		cr.Result = "unknown"
	case c.failed:
		cr.Result = "failed"
	}
	cr.LatencyMs = msPtr(c.latency, c.responded)
	cr.Transaction = txnReport(c)
	if c.epochs() != nil {
		e := c.epochs().memberEpoch
		cr.MemberEpoch, cr.AssignmentEpochs = &e, assignmentEpochs(c)
	}
	return cr
}

// stormReport renders st's view (storm.view) for the report.
func stormReport(st *storm) StormReport {
	v := st.view()
	sr := StormReport{From: stamp(v.From), To: stamp(v.To), Rebalances: v.Rebalances, Generations: v.Generations,
		DominantTrigger: v.DominantTrigger, Triggers: v.Triggers, Growth: v.Growth, Members: v.Members, Ongoing: v.Ended.IsZero()}
	if sr.Members == nil {
		sr.Members = []string{}
	}
	if !v.Ended.IsZero() {
		sr.EndedAt = stampPtr(v.Ended)
	}
	return sr
}

func (g *group) consumerMembersReport() []ConsumerMemberReport {
	out := []ConsumerMemberReport{}
	names := g.e.topics.named
	cg := g.consumerRecords()
	for _, id := range sortedKeys(cg.members) {
		cm := cg.members[id]
		r := ConsumerMemberReport{MemberID: id, InstanceID: cm.instanceID, ClientID: cm.clientID, ClientAddr: cm.clientAddr,
			Rack: cm.rack, Subscription: cm.subscription, SubscribedRegex: cm.regex, ServerAssignor: cm.assignor,
			Active: cm.active, JoinedAt: stampPtr(cm.joinedAt), LeftAt: stampPtr(cm.leftAt), MemberEpoch: cm.epoch,
			Assignment: names(cm.assigned).json(), Epochs: []EpochReport{}, Fences: []FenceReport{}, Protocol: cm.proto(cg)}
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
