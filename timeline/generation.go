package timeline

import (
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// phase is where a generation is in its life.
type phase uint8

const (
	phasePreparing  phase = iota // a rebalance was detected; no JoinGroup response yet
	phaseJoining                 // JoinGroup responses for this generation are arriving
	phaseSyncing                 // the join phase is over; SyncGroup responses are arriving
	phaseStable                  // every observed member has its assignment
	phaseSuperseded              // a new rebalance began before it was stable
	phaseEmpty                   // the group emptied: a generation without members
)

func (p phase) String() string {
	return [...]string{"preparing", "joining", "syncing", "stable", "superseded", "empty"}[p]
}

// Trigger kinds: what moved a group out of Stable.
const (
	TriggerMemberJoined        = "member_joined"
	TriggerMemberLeft          = "member_left"
	TriggerSessionTimeout      = "session_timeout"
	TriggerSubscriptionChanged = "subscription_changed"
	TriggerLeaderRejoined      = "leader_rejoined"
	TriggerMemberRejoined      = "member_rejoined"
	TriggerMemberFenced        = "member_fenced"
	TriggerFollowUp            = "cooperative_follow_up"
	TriggerProbingRebalance    = "probing_rebalance" // KIP-441: a classic Kafka Streams member rejoined when its assignment said to
	TriggerUnknown             = "unknown"
)

// Rebalance modes.
const (
	ModeEager       = "eager"
	ModeCooperative = "cooperative"
	ModeConsumer    = "consumer" // KIP-848: no group-wide stop
	ModeShare       = "share"    // KIP-932 share group: epochs as KIP-848's, members may share partitions
	ModeUnknown     = "unknown"
)

// epochMode reports whether generations of mode are group epochs whose
// members reconcile one by one (KIP-848 and KIP-932), not a stop-the-world
// rebalance.
func epochMode(mode string) bool { return mode == ModeConsumer || mode == ModeShare }

// Departure kinds: how a member left a generation.
const (
	DepartLeft           = "left"
	DepartSessionTimeout = "session_timeout"
	DepartDropped        = "dropped_at_deadline"
	DepartFenced         = "fenced"
	DepartReplaced       = "replaced"
	DepartUnknown        = "unknown"
)

// generation is one generation of a group (KIP-848: one group epoch) and the
// rebalance that formed it. A group keeps up to ten. Its record is what a
// frozen generation keeps too (frozen.go: number, phase, mode, times,
// leader, suspects, serial, caches); the rest, read only while it is
// whole, is its wholeGeneration, dropped when it is frozen.
type generation struct {
	num int32
	// suspectsDropped counts the suspects beyond maxSuspects (keepSuspect).
	suspectsDropped int32
	phase           phase
	// midway is set when kproxy first saw the group in this generation,
	// after its rebalance: its start, trigger and joins are unknown.
	midway bool

	mode     string
	leader   string
	start    time.Time
	joinEnd  time.Time
	stableAt time.Time
	suspects []suspect
	index    memberIndex // what is cached of its members (index.go)
	// serial tells the generations kept by a group apart (1, 2, ...: see
	// group.keep), for the caches of what a member owned in it
	// (ownedCache).
	serial uint64
	prev   *generation
	// frozen is what a frozen generation keeps besides (frozen.go); nil
	// while it is whole.
	frozen *frozen
	// wholeGeneration is frozenWhole once it is frozen (a frozen
	// generation's report and view come from its group's frozen block).
	*wholeGeneration
}

// wholeGeneration is what a generation keeps while it is whole (not
// frozen): the small fields together and the counts int32, without padding
// between them. Every frozen generation points at the one frozenWhole,
// which nothing may write: the handlers reach only the generations
// checked against (classic.go skips a frozen one), and clip skips frozen
// generations.
type wholeGeneration struct {
	followUpOf int32 // the generation this one follows up (cooperative), 0 if none
	// listSize is how many members the leader's JoinGroup response
	// listed; joined the members whose JoinGroup for this generation was
	// seen; waiting the awaited members without their SyncGroup response
	// yet.
	listSize, joined, waiting int32
	chain                     int32 // consecutive follow-ups up to and including this one
	// rejoinsDropped counts the rejoins beyond maxRejoins (keepRejoin).
	rejoinsDropped int32

	// listSeen is set when the leader's JoinGroup response, the only one
	// listing every member, was seen.
	listSeen bool
	planSeen bool
	// startBound is set when the start is only an upper bound: the first
	// REBALANCE_IN_PROGRESS seen, with no cause observed before it.
	startBound bool
	announced  bool // a rebalance_started entry was emitted

	protocolType string
	protocol     string

	// leaderChange is how the leader changed from the previous
	// generation's, nil when it did not (see group.leaderChange).
	leaderChange *leaderChange
	planAt       time.Time
	planBy       string

	evidenceAt time.Time
	trigger    trigger
	// toldKind and toldMember are the kind and member of the trigger the
	// rebalance_started entry named.
	toldKind, toldMember string

	slowest          string // the member the group waited for
	rebalanceTimeout time.Duration

	members  map[string]*member
	departed []departure
	rejoins  []rejoin
	commits  []commit
	unknown  []unknown

	unsettled string

	unassigned partitions
	nothing    []string
	empty      *departure // set on a preparing generation when the last member left
}

// member is one member's part in a generation. A generation keeps one per
// member while it is kept, so the record holds what changes from one
// generation to the next, in 192 bytes, a size class (TestMemberSize);
// who the member is (identity) and what few members have (memberExtra)
// are shared or left out, and what moved is derived (moves).
type member struct {
	id  string
	who *identity // never nil; shared, never changed (see setWho)

	joinSeen bool
	retried  bool // MEMBER_ID_REQUIRED then the retry: one join
	// awaited is set while the generation waits for this member's
	// SyncGroup response: it was seen joining, or it is listed by the
	// leader and kproxy has seen its traffic before.
	awaited bool
	synced  bool
	// requested is set when its JoinGroup request named a member id (not
	// a new member).
	requested bool
	status    memberStatus
	epoch     int32 // KIP-848 member epoch

	// The arrival of its first JoinGroup attempt, its JoinGroup
	// response and its SyncGroup response, and (KIP-848) when it first
	// reached the generation's epoch, in Unix nanoseconds (see unixnano;
	// joinAt, joinRespAt, syncedAt and reachedAt read them).
	joinNs, joinRespNs, syncedNs, reachedNs int64
	reason                                  string

	owned partitions // cooperative: what it still held when rejoining

	// assignment is from its own SyncGroup response, planned from the
	// leader's plan; setAssignment and setPlanned set them.
	assignment partitions
	planned    partitions

	// before is what it owned before the generation, as computeDiff found
	// it: nil when unknown or not yet found. What moved is derived from it
	// and the assignment (moves).
	before partitions

	extra *memberExtra // nil: none of its facts are set
}

func (m *member) joinAt() time.Time     { return unixnano.Time(m.joinNs) }
func (m *member) joinRespAt() time.Time { return unixnano.Time(m.joinRespNs) }
func (m *member) syncedAt() time.Time   { return unixnano.Time(m.syncedNs) }
func (m *member) reachedAt() time.Time  { return unixnano.Time(m.reachedNs) }

// identity is who a member is and how it asked to be treated. The records
// of one member in a group's kept generations share one while it stays the
// same: it is never changed once made, setWho makes a new one.
type identity struct {
	instanceID string
	clientID   string
	clientAddr string
	rack       string
	// protocol is the member's protocol (ProtocolClassic, ...) in a
	// consumer or share group's epoch; "" in a classic generation.
	protocol string

	subscription []string

	sessionTimeout   time.Duration
	rebalanceTimeout time.Duration
}

// noIdentity is the identity of a member nothing is known of yet.
var noIdentity = &identity{}

// setWho makes w m's identity. An identity equal to m's own or to that of
// m's record in the previous generation, prev (nil: none), is shared, not
// made again.
func (m *member) setWho(w identity, prev *member) {
	switch {
	case m.who.equal(&w):
	case prev != nil && prev.who.equal(&w):
		m.who = prev.who
	case noIdentity.equal(&w):
		m.who = noIdentity
	default:
		made := w // not &w: a parameter whose address is taken is allocated at every call
		m.who = &made
	}
}

func (w *identity) equal(o *identity) bool {
	return w.instanceID == o.instanceID && w.clientID == o.clientID && w.clientAddr == o.clientAddr &&
		w.rack == o.rack && w.protocol == o.protocol && w.sessionTimeout == o.sessionTimeout &&
		w.rebalanceTimeout == o.rebalanceTimeout && slices.Equal(w.subscription, o.subscription) &&
		(w.subscription == nil) == (o.subscription == nil)
}

// memberExtra is what few members' records have: a static member's
// replacement, a classic Kafka Streams member's infos.
type memberExtra struct {
	replaces   string
	replacedBy string

	// Classic Kafka Streams ("stream" assignor): its SubscriptionInfo, and
	// the AssignmentInfo of its SyncGroup response and of the leader's
	// plan; nil unknown.
	streamsSub              *decode.StreamsSubscriptionInfo
	streamsAsg, streamsPlan *decode.StreamsAssignmentInfo

	// moved is what moved, held when it can no longer be derived from
	// before and the assignment: a KIP-848 member's, gathered over its
	// epoch steps, or one whose assignment changed after computeDiff
	// found what moved. nil: derived.
	moved *moved
}

// moved is what a member was added, revoked and kept in a generation.
type moved struct {
	added, revoked, kept partitions
}

// noExtra is the memberExtra of a record that has none.
var noExtra = &memberExtra{}

// more is m's memberExtra to read: a blank one when it has none.
func (m *member) more() *memberExtra {
	if m.extra == nil {
		return noExtra
	}
	return m.extra
}

// setExtra returns m's memberExtra to change, made when it has none.
func (m *member) setExtra() *memberExtra {
	if m.extra == nil {
		m.extra = &memberExtra{}
	}
	return m.extra
}

// memberStatus is how a member came to a generation.
type memberStatus uint8

const (
	statusNone     memberStatus = iota
	statusJoined                // new to the group
	statusRejoined              // a member of the previous generation, or one that named its id
	statusReplaced              // a static member back under a new member id
	statusMember                // KIP-848: a member of the previous epoch
)

func (s memberStatus) String() string {
	return [...]string{"", "joined", "rejoined", "replaced", "member"}[s]
}

// previous is member id's record in the generation before gen, nil if
// none.
func (gen *generation) previous(id string) *member {
	if gen.prev == nil {
		return nil
	}
	return gen.prev.members[id]
}

// share is p, or the equal set m (nil: none) resolves to: sets are not
// changed once made, and a member's mostly stays the same from one
// generation to the next, so its records can share one copy.
func (m *member) share(p partitions) partitions {
	if m != nil {
		if r := m.resolved(); r.equal(p) {
			return r
		}
	}
	return p
}

// resolved is the member's assignment: its own SyncGroup response, else
// the leader's plan, else nil (unknown).
func (m *member) resolved() partitions {
	return resolve(m.assignment, m.planned)
}

// resolve is what a member with assignment and planned was assigned: its
// own SyncGroup response when seen, else the leader's plan.
func resolve(assignment, planned partitions) partitions {
	if assignment != nil {
		return assignment
	}
	return planned
}

// moves is what m was added, revoked and kept in its generation: nil when
// what it owned before or its assignment is unknown, or computeDiff has not
// yet run.
func (m *member) moves() (added, revoked, kept partitions) {
	if mv := m.more().moved; mv != nil {
		return mv.added, mv.revoked, mv.kept
	}
	cur := m.resolved()
	if m.before == nil || cur == nil {
		return nil, nil, nil
	}
	return diff(m.before, cur)
}

// revoked is what m was revoked in its generation (see moves).
func (m *member) revoked() partitions {
	_, revoked, _ := m.moves()
	return revoked
}

// setBefore records what m owned before its generation, before (nil:
// unknown), so that what moved is derived from it (computeDiff).
func (m *member) setBefore(before partitions) {
	m.before = before
	if m.extra != nil {
		m.extra.moved = nil
	}
}

// hold returns m's moves to change, held from now on (see memberExtra.moved).
func (m *member) hold() *moved {
	if m.more().moved == nil {
		added, revoked, kept := m.moves()
		m.setExtra().moved = &moved{added, revoked, kept}
	}
	return m.extra.moved
}

// setAssignment and setPlanned set m's assignment and plan. What moved
// stays as computeDiff found it, which alone changes it: it is held when
// the set m resolves to changes after.
func (m *member) setAssignment(p partitions) {
	m.holdIfChanged(resolve(p, m.planned))
	m.assignment = p
}

func (m *member) setPlanned(p partitions) {
	m.holdIfChanged(resolve(m.assignment, p))
	m.planned = p
}

func (m *member) holdIfChanged(next partitions) {
	if m.before != nil && !next.equal(m.resolved()) {
		m.hold()
	}
}

type trigger struct {
	kind   string
	member string
	reason string
	at     time.Time
}

type departure struct {
	member     string
	instanceID string
	how        string
	at         time.Time
	reason     string
	lost       partitions
}

type rejoin struct {
	at         time.Time
	member     string
	instanceID string
	replaces   string
	clientID   string
	clientAddr string
}

// unknown is one thing kproxy could not see, said instead of guessed.
type unknown struct {
	what string
	why  string
}

func newGeneration() *generation {
	return &generation{phase: phasePreparing, wholeGeneration: &wholeGeneration{members: map[string]*member{}}}
}

func (gen *generation) member(id string) *member {
	m := gen.members[id]
	if m == nil {
		m = &member{id: id, who: noIdentity}
		gen.members[id] = m
		gen.index.membersChanged()
	}
	return m
}

// memberIDs is the ids of gen's members, sorted: made once for the many
// loops over the members of a rebalance (a member added later makes them
// again; a slice returned before stays as it was). The caller must not
// change it.
func (gen *generation) memberIDs() []string {
	if gen.index.ids == nil {
		gen.index.ids = sortedKeys(gen.members)
	}
	return gen.index.ids
}

func (gen *generation) note(what, why string) {
	for _, u := range gen.unknown {
		if u.what == what {
			return
		}
	}
	gen.unknown = append(gen.unknown, unknown{what, why})
}

// active reports whether id is a member of the generation and was not
// replaced by a static rejoin.
func (gen *generation) active(id string) bool {
	m := gen.members[id]
	return m != nil && m.more().replacedBy == ""
}

// ownerOf returns the member owning a partition in this generation, "" when
// none is known (when two members claim it, the greatest id). A frozen
// generation's are set by group.ownerIn.
//
// It is asked once per suspect partition: the owners are cached in the
// generation's index (memberIndex), a speed shortcut for large groups
// with suspect commits that BenchmarkSuspectCommits measures. It costs a
// map of every partition per generation that had a suspect.
func (gen *generation) ownerOf(topic string, part int32) string {
	owners := gen.index.owners
	if owners == nil {
		owners = map[string]map[int32]string{}
		gen.index.owners = owners
		for _, id := range gen.memberIDs() {
			if m := gen.members[id]; m.more().replacedBy == "" {
				owners.own(id, m.resolved())
			}
		}
	}
	return owners[topic][part]
}

// partitionOwners is who owns each partition: topic -> partition ->
// member id.
type partitionOwners map[string]map[int32]string

// own makes id the owner of owned's partitions.
func (o partitionOwners) own(id string, owned partitions) {
	for _, tp := range owned {
		if o[tp.topic] == nil {
			o[tp.topic] = map[int32]string{}
		}
		for _, p := range tp.parts {
			o[tp.topic][p] = id
		}
	}
}

// departure returns how id left the previous generation, or nil.
func (gen *generation) departure(id string) *departure {
	for i := range gen.departed {
		if gen.departed[i].member == id {
			return &gen.departed[i]
		}
	}
	return nil
}

// await makes the generation wait for m's SyncGroup response.
func (gen *generation) await(m *member) {
	if !m.synced && !m.awaited {
		m.awaited = true
		gen.waiting++
	}
}
