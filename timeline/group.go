package timeline

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// group is the state of one consumer group, classic or KIP-848.
type group struct {
	e     *Engine
	id    string
	index int // in e.groups
	// incarnation counts the times the group was re-created before this
	// history (incarnation.go): 0 for the first.
	incarnation int
	// ended is set once a later incarnation replaced the group: its
	// history is closed.
	ended bool

	firstSeen, lastSeen time.Time
	protocolType        string
	consumerProtocol    bool // KIP-848 ConsumerGroupHeartbeat seen
	coordinator         *decode.FindCoordinator

	gens    []*generation // formed generations, in formation order
	dropped int           // generations dropped beyond Config.MaxGenerations
	serials uint64        // generations kept so far (see generation.serial)
	byNum   map[int32]*generation
	// zfrozen is the reports and views of its frozen generations,
	// compressed by zstdFrozen (frozen.go); nil when none.
	zfrozen []byte
	// next is a rebalance detected but whose generation has not formed.
	next *generation

	live       map[string]*liveMember
	pendingIDs map[string]*attempt // MEMBER_ID_REQUIRED: assigned id -> first attempt
	causes     []cause             // candidate triggers not yet consumed by a formation
	recent     commitQueue         // commits not attached to a rebalance, kept a while
	// commitTopics is, by topic name, what the group's commits and offset
	// fetches say was committed (see lastCommitted, setCommitted): one
	// record for each topic they named, which the parts of its commits
	// point to (commitPart).
	commitTopics map[string]*commitTopic

	errSeen  map[string]bool // errors already named in this generation
	storm    stormState
	consumer *consumerGroup
	streams  *streamsState // KIP-1071 streams group (streams.go); nil for others
	// pastConsumer keeps the consumer group's members after an online
	// downgrade made it a classic group (migration.go); nil otherwise.
	pastConsumer *consumerGroup
	migrations   []*migration // online conversions between the protocols, in order
	notes        []unknown
	// blind is set while exchanges of the group are known to be missing
	// (Engine.Blind): no session timeout is inferred.
	blind bool
	// dormant is what a group that ended keeps once Retain made it
	// dormant (dormant.go); nil while it is awake.
	dormant *dormant
}

// liveMember is what the engine knows of a member across generations.
type liveMember struct {
	id         string
	instanceID string
	clientID   string
	clientAddr string
	rack       string // the rack its JoinGroup's subscription names (KIP-881); "" none
	// lastAliveNs is the last request the coordinator accepted from it,
	// in Unix nanoseconds (0: none), and sessionMs and rebalanceMs its
	// JoinGroup's timeouts in milliseconds, as the wire has them: a
	// group keeps a record for every member seen in the last forgetAfter,
	// and this makes one 144 bytes, against 176 with time.Time and
	// time.Duration (TestMemberSize).
	lastAliveNs int64
	sessionMs   int32
	rebalanceMs int32
	expired     bool // inferred: session timed out
	gone        bool // left, expired, fenced or removed

	// owned caches what the member owned in the generation its commits
	// named last (memberOwned, index.go).
	owned ownedCache
}

// lastAlive is the last request the coordinator accepted from the
// member, the zero time when none.
func (lm *liveMember) lastAlive() time.Time { return unixnano.Time(lm.lastAliveNs) }

// sessionTimeout and rebalanceTimeout are the timeouts of the member's
// last JoinGroup, 0 when none was seen.
func (lm *liveMember) sessionTimeout() time.Duration {
	return time.Duration(lm.sessionMs) * time.Millisecond
}

func (lm *liveMember) rebalanceTimeout() time.Duration {
	return time.Duration(lm.rebalanceMs) * time.Millisecond
}

// setTimeouts keeps the timeouts of jg, a JoinGroup of the member. They
// are whole milliseconds, as the wire carries them.
func (lm *liveMember) setTimeouts(jg *decode.JoinGroup) {
	lm.sessionMs, lm.rebalanceMs = int32(jg.SessionTimeout/time.Millisecond), int32(jg.RebalanceTimeout/time.Millisecond)
}

// attempt is a JoinGroup answered MEMBER_ID_REQUIRED, waiting for its retry.
type attempt struct {
	at         time.Time
	clientID   string
	clientAddr string
}

// cause is a candidate trigger for the next rebalance.
type cause struct {
	trigger
	instanceID string
	clientID   string
	clientAddr string
}

func newGroup(e *Engine, id string) *group {
	return &group{
		e:          e,
		id:         id,
		byNum:      map[int32]*generation{},
		live:       map[string]*liveMember{},
		pendingIDs: map[string]*attempt{},
	}
}

// latest is the most recently formed generation, nil before any.
func (g *group) latest() *generation {
	if len(g.gens) == 0 {
		return nil
	}
	return g.gens[len(g.gens)-1]
}

// numbered is the kept generation numbered num (g.byNum[num]), nil if
// none: the latest when it has that number, as heartbeats and commits
// mostly name it, without a map lookup (keep makes byNum[latest.num] the
// latest).
func (g *group) numbered(num int32) *generation {
	if latest := g.latest(); latest != nil && latest.num == num {
		return latest
	}
	return g.byNum[num]
}

// member returns the registry entry for id, creating it and refreshing its
// client facts from ev.
func (g *group) member(id string, ev *decode.Event) *liveMember {
	return g.refresh(g.live[id], id, ev)
}

// refresh is member with g.live[id], nil when absent, already looked up.
func (g *group) refresh(lm *liveMember, id string, ev *decode.Event) *liveMember {
	if lm == nil {
		lm = &liveMember{id: id}
		g.live[id] = lm
	}
	if ev.ClientID != "" {
		lm.clientID = ev.ClientID
	}
	if ev.ClientAddr != "" {
		lm.clientAddr = ev.ClientAddr
	}
	return lm
}

// alive records that the coordinator accepted a request from id at t.
func (g *group) alive(id string, ev *decode.Event) {
	if id == "" {
		return
	}
	g.aliveMember(g.live[id], id, ev)
}

// aliveMember is alive with g.live[id], nil when absent, already looked up
// (id is not ""). It returns the entry, created when lm was nil, and
// whether all it changed was the entry's last accepted request (not when it
// created the entry or withdrew an inferred expiry).
func (g *group) aliveMember(lm *liveMember, id string, ev *decode.Event) (_ *liveMember, onlyAlive bool) {
	onlyAlive = lm != nil
	lm = g.refresh(lm, id, ev)
	if at := unixnano.Of(ev.At); at > lm.lastAliveNs { // later, in place: per heartbeat and commit
		lm.lastAliveNs = at
	}
	if lm.expired {
		lm.expired, lm.gone = false, false
		g.withdrawExpiry(id, ev.At)
		onlyAlive = false
	}
	return lm, onlyAlive
}

func (g *group) addCause(c cause) {
	g.causes = append(g.causes, c)
}

func (g *group) note(what, why string) {
	for _, u := range g.notes {
		if u.what == what {
			return
		}
	}
	g.notes = append(g.notes, unknown{what, why})
}

// emit sends an entry to the engine's sink.
func (g *group) emit(at time.Time, kind Kind, gen int32, memberID, text string, fields map[string]any) {
	g.e.emit(Entry{At: at, Group: g.id, Kind: kind, Generation: gen, Member: memberID, Text: text, Fields: fields})
}
