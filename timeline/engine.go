package timeline

import (
	"fmt"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// sweepEvery is how far event time must advance between two session
// expiry sweeps.
const sweepEvery = time.Second

// Engine turns group events into generations, live entries and reports. It
// is not safe for concurrent use: one goroutine owns it and calls Add (or
// AddEvents), Close and Report.
type Engine struct {
	cfg    Config
	groups []*group // in order of first appearance
	// quiet is each group's quietUntil, by index in groups: until then a
	// sweep of the group finds nothing to do, as computed by its last
	// sweep (nextChange); zero after an event of the group changed more
	// than a known member's last accepted request, which only delays that
	// (the heartbeat and commit handlers report when that was all). The once-a-second sweep reads this dense array instead of
	// visiting every group, which would miss the caches for each.
	quiet  []time.Time
	byID   map[string]*group
	topics topicNames
	// unobserved counts the exchanges too large to observe.
	unobserved unobserved
	// only is Config.Groups as a set; nil: every group is told.
	only map[string]bool

	now       time.Time // the latest time carried by an event
	nextSweep time.Time // the last sweep's time plus sweepEvery
	closed    bool
	// wholeGenerations is set, by tests only, to keep every generation
	// whole: Retain freezes none (see frozen.go).
	wholeGenerations bool
	// horizon is the latest time up to which history was dropped (see
	// Horizon).
	horizon time.Time

	// txns are the transactional commits waiting for their EndTxn, by
	// transaction; pendingTxns counts them (see txn.go).
	txns        map[txnKey][]pendingTxn
	pendingTxns int
	// slept is the groups the latest Retain made dormant, by id, until
	// Live takes them: their published reports are replaced by the ones
	// they keep.
	slept []string
}

// New returns an Engine with cfg, defaults applied (see Config).
func New(cfg Config) *Engine {
	var only map[string]bool
	for _, id := range cfg.Groups {
		if only == nil {
			only = map[string]bool{}
		}
		only[id] = true
	}
	return &Engine{
		only:   only,
		cfg:    cfg.withDefaults(),
		byID:   map[string]*group{},
		topics: newTopicNames(),
		// As if swept at the zero time: the first sweep comes once event
		// time is a second past it.
		nextSweep: time.Time{}.Add(sweepEvery),
	}
}

// AddEvents adds the events decoded from one exchange, or from several in
// the order they completed, in order: an Engine is a consumer of the
// pipeline's events. Neither the slice nor the events' addresses are
// kept: the caller may decode the next exchange into the same slice.
func (e *Engine) AddEvents(events []decode.Event) {
	for i := range events {
		e.add(&events[i])
	}
}

// Add processes one event. Events must come in the order the exchanges
// completed; their timestamps, not the wall clock, drive every inference.
func (e *Engine) Add(ev decode.Event) {
	e.add(&ev)
}

func (e *Engine) add(ev *decode.Event) {
	e.advance(ev.At)
	e.advance(ev.RespondedAt)
	if ev.Metadata != nil {
		e.topics.add(ev.Metadata, e.now)
		return
	}
	if ev.Unobserved != nil {
		e.unobserved.add(ev)
		return
	}
	if ev.EndTxn != nil {
		e.endTxn(ev) // names no group: its commits do
		e.maybeSweep()
		return
	}
	if ev.Group == "" || ev.NamesNoGroup() {
		return
	}
	if e.only != nil && !e.only[ev.Group] {
		e.maybeSweep() // as after a told group's event
		return
	}
	g, lm := e.lookup(ev)
	if g.dormant != nil {
		g, lm = e.wake(g), nil
	}
	if again, to := g.recreated(ev); again {
		g, lm = e.reincarnate(g, ev, to), nil
	}
	if g.firstSeen.IsZero() || ev.At.Before(g.firstSeen) {
		g.firstSeen = ev.At
	}
	// lastSeen = later(lastSeen, At, RespondedAt), compared in place: per
	// event, cheaper than passing the 24-byte times through later.
	if ev.At.After(g.lastSeen) {
		g.lastSeen = ev.At
	}
	if ev.RespondedAt.After(g.lastSeen) {
		g.lastSeen = ev.RespondedAt
	}
	onlyAlive := false // the handler changed nothing a sweep depends on but a member's last accepted request
	switch {
	case ev.FindCoordinator != nil:
		g.findCoordinator(ev)
	case g.mixed(ev):
		g.mixedExchange(ev)
	case ev.JoinGroup != nil:
		g.joinGroup(ev)
	case ev.SyncGroup != nil:
		g.syncGroup(ev)
	case ev.Heartbeat != nil:
		onlyAlive = g.heartbeat(ev, lm)
	case ev.LeaveGroup != nil:
		g.leaveGroup(ev)
	case ev.OffsetCommit != nil, ev.TxnOffsetCommit != nil:
		onlyAlive = g.offsetCommit(ev, lm)
	case ev.OffsetFetch != nil:
		g.offsetFetch(ev)
	case ev.ConsumerGroupHeartbeat != nil:
		g.consumerHeartbeat(ev)
	case ev.ShareGroupHeartbeat != nil:
		g.shareHeartbeat(ev)
	case ev.ShareFetch != nil:
		g.shareFetch(ev)
	case ev.ShareAcknowledge != nil:
		g.shareAcknowledge(ev)
	case ev.StreamsGroupHeartbeat != nil:
		g.streamsHeartbeat(ev)
	case ev.StreamsGroupDescribe != nil:
		g.streamsDescribe(ev)
	}
	if !onlyAlive {
		e.quiet[g.index] = time.Time{} // the event may have changed what a sweep finds
	}
	e.maybeSweep()
}

// mixed reports whether ev is a classic member's exchange in a consumer
// group (migration.go), first telling a JoinGroup that turns a consumer
// group with no member into a classic group.
func (g *group) mixed(ev *decode.Event) bool {
	if g.consumer == nil || g.consumer.share != nil || (ev.JoinGroup == nil && ev.SyncGroup == nil && ev.Heartbeat == nil && ev.LeaveGroup == nil) {
		return false
	}
	if jg := ev.JoinGroup; jg != nil && ev.Responded() && (jg.ErrorCode == 0 || jg.ErrorCode == errMemberIDRequired) && g.emptyConsumerGroup() {
		g.downgradeEmpty(ev)
		return false
	}
	return true
}

func (e *Engine) advance(t time.Time) {
	if t.After(e.now) {
		e.now = t
	}
}

// lookup returns the group ev names and, for a heartbeat or a commit, the
// registry entry of the member it names (nil when unknown).
func (e *Engine) lookup(ev *decode.Event) (*group, *liveMember) {
	g := e.group(ev.Group)
	switch {
	case ev.Heartbeat != nil:
		return g, g.live[ev.Heartbeat.MemberID]
	case ev.OffsetCommit != nil:
		return g, g.live[ev.OffsetCommit.MemberID]
	case ev.TxnOffsetCommit != nil:
		return g, g.live[ev.TxnOffsetCommit.MemberID]
	}
	return g, nil
}

func (e *Engine) group(id string) *group {
	g := e.byID[id]
	if g == nil {
		g = newGroup(e, id)
		g.index = len(e.groups)
		e.byID[id] = g
		e.groups = append(e.groups, g)
		e.quiet = append(e.quiet, time.Time{})
	}
	return g
}

// maybeSweep looks for expired sessions once per second of event time.
func (e *Engine) maybeSweep() {
	if e.now.Before(e.nextSweep) { // per event: cheaper than Sub
		return
	}
	e.nextSweep = e.now.Add(sweepEvery)
	for i, until := range e.quiet {
		if !until.IsZero() && e.now.Before(until) {
			continue // what group.sweep would find first
		}
		e.groups[i].sweep(e.now)
	}
}

// Close settles what is still pending at the end of the input, as of at
// (usually the time of the last event, or the time the proxy stopped):
// sessions that expired by then, join phases still open, rebalances that
// never completed, cooperative chains that never settled, storms,
// transactional commits told whose transaction never ended. Later
// calls do nothing.
func (e *Engine) Close(at time.Time) {
	if e.closed {
		return
	}
	e.closed = true
	e.advance(at)
	for _, g := range e.groups {
		switch {
		case g.ended: // closed when it ended
		case g.dormant != nil:
			g.closeDormant(e.now)
		default:
			g.close(e.now)
		}
	}
	e.closeTxns()
}

func (e *Engine) emit(en Entry) {
	if e.cfg.OnEntry == nil {
		return
	}
	en.loc = e.cfg.Location
	e.cfg.OnEntry(en)
}

// findCoordinator records the group's coordinator, with an entry when it
// changes.
func (g *group) findCoordinator(ev *decode.Event) {
	fc := ev.FindCoordinator
	if !ev.Responded() || fc.ErrorCode != 0 {
		return
	}
	if g.coordinator != nil && g.coordinator.NodeID == fc.NodeID && g.coordinator.Host == fc.Host && g.coordinator.Port == fc.Port {
		return
	}
	c := *fc
	g.coordinator = &c
	g.emit(ev.At, KindCoordinator, 0, "", fmt.Sprintf("coordinator is node %d (%s:%d)", fc.NodeID, fc.Host, fc.Port),
		map[string]any{"node_id": fc.NodeID})
}
