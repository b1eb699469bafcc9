package timeline

import (
	"slices"
	"strings"
	"time"
)

// The typed view of the timeline: what a program on the timeline's
// goroutine (the diagnosis) reads of the groups, with times as time.Time
// and durations as time.Duration, built from the engine's state. It says
// what the report says (Report, GroupReport), without the report's
// strings: the report is the JSON form for output, the view the form for
// programs. TestViewsAgreeWithReport keeps the two in step.

// GroupView is one kept history of a group (a re-created group has one
// per incarnation, see incarnation.go).
type GroupView struct {
	Group string
	// LastSeen is the time of the group's last response seen.
	LastSeen    time.Time
	Generations []GenerationView // in the order they formed
	Storms      []StormView
	Streams     *StreamsView // a streams group's story (KIP-1071); nil for other groups
	// ConsumerMembers is the KIP-848 members of a consumer or share group
	// (ConsumerMemberReport, and what the diagnosis needs beyond it),
	// sorted by member id; nil for other groups.
	ConsumerMembers []ConsumerMemberView
	// Migrations is the group's online migrations between the classic
	// and the consumer protocol, in order (MigrationReport).
	Migrations []MigrationView
}

// MigrationView is one online migration (MigrationReport).
type MigrationView struct {
	Direction string // MigrationUpgrade or MigrationDowngrade
	// Started is when StartedBy, the first member of the new protocol,
	// joined.
	Started   time.Time
	StartedBy string
	// Converted is when the group changed type, at group epoch
	// Generation, by ConvertedBy; zero while a downgrade waits for it.
	Converted   time.Time
	Generation  int32
	ConvertedBy string
	// Completed is when LastMember, the last member of the old protocol,
	// was gone; zero while some remain.
	Completed  time.Time
	LastMember string
}

// GenerationView is one generation (KIP-848: one group epoch) and the
// rebalance that formed it (GenerationReport).
type GenerationView struct {
	Generation int32
	// Status is GenerationReport.Status: "observed" for a generation first
	// seen after its rebalance.
	Status   string
	Protocol string // the chosen assignor (KIP-848: the server assignor)
	Mode     string // ModeEager, ModeCooperative, ModeConsumer, ModeShare or ModeUnknown
	Leader   string // "" unknown, and for KIP-848
	// Started, JoinCompleted and Stable are the rebalance's start, the end
	// of its join phase and when it was stable; zero unknown (Stable is
	// zero for an "observed" generation).
	Started, JoinCompleted, Stable time.Time
	// StopTheWorld is Stable − Started (0 for KIP-848); -1 unknown.
	StopTheWorld time.Duration
	// RebalanceTimeout is the largest rebalance timeout among the members;
	// 0 unknown.
	RebalanceTimeout time.Duration
	// FollowUpOf is the generation whose cooperative revocations caused
	// this one; 0 when it is not a follow-up.
	FollowUpOf int32
	Members    []GenerationMember // sorted by member id
	Departed   []DepartureView
	Rejoins    []RejoinView // rejoins without a rebalance (static restarts, KIP-345)
	// Unassigned is the partitions known to exist that no member got; nil
	// when some assignment is unknown.
	Unassigned         map[string][]int32
	MembersWithNothing []string
	Suspects           []SuspectView
}

// GenerationMember is one member's part in a generation (MemberReport).
type GenerationMember struct {
	MemberID, InstanceID string
	// Status is MemberReport.Status: "joined", "rejoined", "replaced",
	// "unobserved" or "member".
	Status string
	// Joined is when its JoinGroup (its first attempt) arrived; zero
	// unknown.
	Joined       time.Time
	Subscription []string           // nil unknown
	Assignment   map[string][]int32 // nil unknown
	// StreamsStandby is a classic Kafka Streams member's standby tasks,
	// KIP-441 warm-ups among them ("0_1"); nil for other members.
	StreamsStandby []string
	// Reached is, in a KIP-848 group epoch, when the member's epoch first
	// reached it: it had revoked what the epoch's target assignment took
	// from it. Zero while it had not, and in classic generations.
	Reached time.Time
	// Protocol is its group protocol (MemberReport.Protocol):
	// ProtocolClassic, ProtocolConsumer or ProtocolShare.
	Protocol string
}

// DepartureView is a member of the previous generation that is not in
// this one (DepartureReport).
type DepartureView struct {
	MemberID, InstanceID string
	How                  string // DepartLeft, DepartSessionTimeout, DepartDropped, ...
	Reason               string
	At                   time.Time          // zero unknown
	Partitions           map[string][]int32 // what it owned; nil unknown
}

// RejoinView is a JoinGroup answered within a generation, without a
// rebalance (RejoinReport).
type RejoinView struct {
	At                   time.Time
	MemberID, InstanceID string
	Replaces             string // the member id a restarted static member took over from; "" if none
	ClientID, ClientAddr string
}

// SuspectView is a committed partition the next owner will re-process
// (SuspectReport).
type SuspectView struct {
	MemberID   string
	At         time.Time
	Generation int32
	Topic      string
	Partition  int32
	Offset     int64
	// Committed is the partition's last committed offset before this
	// commit, by CommittedBy, when CommittedKnown.
	Committed      int64
	CommittedKnown bool
	CommittedBy    string
	Owner          string   // the partition's owner in that generation; "" unknown
	Reasons        []string // SuspectNotOwned and/or SuspectBackwards
}

// StormView is a run of rebalances that reached the storm threshold
// (StormReport).
type StormView struct {
	From, To        time.Time // the starts of its first and latest rebalances
	Rebalances      int
	Generations     []int32
	DominantTrigger string
	Triggers        map[string]int
	Growth          int      // rebalances that took the group past its peak membership
	Members         []string // most frequent first
	// Ended is the last rebalance plus the window; zero while the storm is
	// ongoing.
	Ended time.Time
}

// Views is the typed views of the kept histories of the groups ids (nil:
// every group), sorted by group id, a re-created group's histories in the
// order they began. Groups not kept are left out. Like Report, it does
// not change the engine's state.
func (e *Engine) Views(ids []string) []GroupView {
	var want map[string]bool
	if ids != nil {
		want = make(map[string]bool, len(ids))
		for _, id := range ids {
			want[id] = true
		}
	}
	var out []GroupView
	for _, g := range e.groups {
		if want == nil || want[g.id] {
			out = append(out, g.view())
		}
	}
	slices.SortStableFunc(out, func(a, b GroupView) int { return strings.Compare(a.Group, b.Group) })
	return out
}

// Views is the engine's Views of what is kept, built now rather than taken
// from the last snapshot: for the diagnosis, which reads the generations
// an entry just told of.
func (l *Live) Views(ids []string) []GroupView { return l.e.Views(ids) }

func (g *group) view() GroupView {
	if d := g.dormant; d != nil {
		return d.view()
	}
	v := GroupView{Group: g.id, LastSeen: g.lastSeen, Generations: make([]GenerationView, 0, len(g.gens)), Streams: g.streamsView(),
		Migrations: g.migrationsView()}
	var frozen frozenBlock // decompressed at the first frozen generation
	for _, gen := range g.gens {
		if gen.frozen != nil {
			if frozen == nil {
				buf := scratch()
				defer scratchDone(buf)
				frozen = g.frozenBlockIn(buf)
			}
			v.Generations = append(v.Generations, frozen.view(gen))
			continue
		}
		v.Generations = append(v.Generations, g.generationView(gen))
	}
	for _, st := range g.storm.storms {
		v.Storms = append(v.Storms, st.view())
	}
	v.ConsumerMembers = g.consumerMembersView()
	return v
}

// view is the storm as GroupView and the report (stormReport) show it.
func (st *storm) view() StormView {
	kind, _ := st.dominant()
	sv := StormView{From: st.from, To: st.to, Rebalances: st.count, DominantTrigger: kind,
		Triggers: st.triggers(), Growth: st.growth(), Members: st.members()}
	for _, m := range st.marks {
		sv.Generations = append(sv.Generations, m.gen)
	}
	if st.ended {
		sv.Ended = st.endedAt
	}
	return sv
}

// generationView is generationReport's facts, typed (gen not frozen).
func (g *group) generationView(gen *generation) GenerationView {
	names := g.e.topics.named
	if !epochMode(gen.mode) {
		names = func(p partitions) partitions { return p }
	}
	v := GenerationView{Generation: gen.num, Status: gen.phase.String(), Protocol: gen.protocol, Mode: gen.mode,
		Leader: gen.leader, Started: gen.start, JoinCompleted: gen.joinEnd, Stable: gen.stableAt,
		StopTheWorld: -1, RebalanceTimeout: max(gen.rebalanceTimeout, 0), FollowUpOf: gen.followUpOf,
		Members: make([]GenerationMember, 0, len(gen.members)), Unassigned: names(gen.unassigned).json(),
		MembersWithNothing: gen.nothing}
	if v.Mode == "" {
		v.Mode = modeOf(gen)
	}
	if gen.midway {
		v.Status, v.Stable = "observed", time.Time{}
	}
	switch {
	case epochMode(gen.mode):
		v.StopTheWorld = 0
	case !gen.midway && gen.phase != phaseEmpty && !gen.start.IsZero() && !gen.stableAt.IsZero():
		v.StopTheWorld = gen.stableAt.Sub(gen.start)
	}
	for _, id := range gen.memberIDs() {
		m := gen.members[id]
		gm := GenerationMember{MemberID: m.id, InstanceID: m.who.instanceID, Status: m.status.String(), Joined: m.joinAt(),
			Subscription: m.who.subscription, Assignment: names(m.resolved()).json(), Protocol: memberProtocol(gen, m)}
		if gm.Status == "" {
			gm.Status = "unobserved"
			if gen.midway {
				gm.Status = "member"
			}
		}
		if epochMode(gen.mode) {
			gm.Reached = m.reachedAt()
		}
		if a := m.streamsAssigned(); a != nil {
			gm.StreamsStandby = taskStrings(classicTasks(a.Standby))
		}
		v.Members = append(v.Members, gm)
	}
	for _, d := range gen.departed {
		v.Departed = append(v.Departed, DepartureView{MemberID: d.member, InstanceID: d.instanceID, How: d.how,
			Reason: d.reason, At: d.at, Partitions: names(d.lost).json()})
	}
	for _, rj := range gen.rejoins {
		v.Rejoins = append(v.Rejoins, RejoinView{At: rj.at, MemberID: rj.member, InstanceID: rj.instanceID,
			Replaces: rj.replaces, ClientID: rj.clientID, ClientAddr: rj.clientAddr})
	}
	v.Suspects = suspectsView(gen, v.Suspects)
	return v
}

// suspectsView is vs with gen's suspect commits added.
func suspectsView(gen *generation, vs []SuspectView) []SuspectView {
	for _, s := range gen.suspects {
		vs = append(vs, SuspectView{MemberID: s.member, At: s.at, Generation: s.generation, Topic: s.topic,
			Partition: s.partition, Offset: s.offset, Committed: s.committed, CommittedKnown: s.committedKnown,
			CommittedBy: s.committedBy, Owner: s.owner, Reasons: s.reasons})
	}
	return vs
}
