package diagnose

import (
	"cmp"
	"maps"
	"net"
	"slices"
	"strings"
	"time"
	"unique"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
	"github.com/kproxy-dev/kproxy/timeline"
)

// tp is one partition of one topic.
type tp struct {
	topic     string
	partition int32
}

// groupState is what the engine keeps of one group of its own: who the
// members are, their timeouts, liveness, ownership and commits are the
// timeline's (Engine.facts, reader).
type groupState struct {
	id string
	// members are the diagnosis' own records of the members (memberState).
	members map[string]*memberState
	// byAddr is the member id whose JoinGroup last came from a client
	// address: how an OffsetFetch or a fetch connection is attributed.
	byAddr map[string]string
	// rebalancing is true from a rebalance_started entry to the next
	// stable or group_empty one; rebalanceStart is when it started.
	rebalancing    bool
	rebalanceStart time.Time
	// checkAt is the earliest silence threshold of its members still to
	// come (zero: look at them at the next advance).
	checkAt   time.Time
	handovers []*handover
	instances map[string]*instanceState
	// joinedFrom is, per client address (one connection), its latest
	// accepted joins (JoinGroup, or a KIP-848 heartbeat at epoch 0), up
	// to maxLeaves, oldest first: the rejoin after each leave.
	joinedFrom map[string][]int64 // in Unix nanoseconds (unixnano)
	// joins is, per generation whose members do not all offer the same
	// protocols, each member's offered protocols ("type: name,name"),
	// from its JoinGroup for that generation (one copy of each text for
	// every group); a generation whose members all offer the same has
	// none (their latest joins are in their records: memberActivity.joinGen).
	// newestJoin is the newest generation joined: those more than
	// keepJoins older are forgotten.
	joins      map[int32]map[string]unique.Handle[string]
	newestJoin int32
	findings   []Finding
	// seen are the de-duplication keys of findings made once, with the
	// group's time when each was made.
	seen map[string]time.Time
	// last is the engine's time at the group's latest event (or when it
	// was first seen): a group quiet for Config.Forget is forgotten.
	last time.Time
}

func newGroupState(id string) *groupState {
	// The other maps are made when needed, and dropped once empty
	// (forget): a group that ended keeps few of them.
	return &groupState{id: id, members: map[string]*memberState{}}
}

// setAddr records that the latest JoinGroup from addr was member id's.
func (g *groupState) setAddr(addr, id string) {
	if g.byAddr == nil {
		g.byAddr = map[string]string{}
	}
	g.byAddr[addr] = id
}

// shrunk is m after forget deleted n of its entries: nil once empty, a
// copy of the same size once more than half of it went (a map keeps the
// room of its largest size).
func shrunk[K comparable, V any](m map[K]V, n int) map[K]V {
	switch {
	case len(m) == 0:
		return nil
	case n > len(m):
		out := make(map[K]V, len(m))
		maps.Copy(out, m)
		return out
	}
	return m
}

// once reports whether key is new, and remembers it.
func (g *groupState) once(key string) bool {
	if _, ok := g.seen[key]; ok {
		return false
	}
	if g.seen == nil {
		g.seen = map[string]time.Time{}
	}
	g.seen[key] = g.last
	return true
}

// forget drops the records of the members with no request since before,
// and, with early, those of the members gone for forgetAfter (gone) that
// nothing kept can name any more (needed, with views, the timeline's kept
// histories of g); with them what only they held: the
// client addresses whose latest JoinGroup was theirs, the joins no kept
// record can look a rejoin up at, and their turns in
// the instances' histories; and the once keys made before it. Of the gone
// members it keeps, it drops what only their next requests would be read
// against (memberState.act) and their addresses. Members
// come and go with new member ids: without this a group that lives for
// months would remember every member it ever had, and one whose members
// churn would remember a day of them.
func (e *Engine) forget(g *groupState, before time.Time, early bool, views []timeline.GroupView) {
	var need map[string]bool // what a gone member's record is kept for, made when one is
	dropped := 0
	for id, m := range g.members {
		if unixnano.Time(m.seen).Before(before) {
			delete(g.members, id)
			dropped++
			continue
		}
		if !early || !e.gone(g, m) {
			continue
		}
		if need == nil {
			need = e.needed(g, views)
		}
		if !need[id] {
			delete(g.members, id)
			dropped++
			continue
		}
		// Kept for what the kept histories name it in: its requests,
		// if it sends any more, start afresh.
		m.act = nil
	}
	if g.members = shrunk(g.members, dropped); g.members == nil {
		g.members = map[string]*memberState{}
	}
	// The addresses are read for the new owners of the handovers not
	// settled yet (Engine.resumed): a gone member's is dropped unless it
	// is one.
	var owners map[string]bool
	for _, h := range g.handovers {
		if !h.resumed {
			if owners == nil {
				owners = map[string]bool{}
			}
			owners[h.to] = true
		}
	}
	dropped = 0
	for addr, id := range g.byAddr {
		if m := g.members[id]; m == nil || m.act == nil && !owners[id] {
			delete(g.byAddr, addr)
			dropped++
		}
	}
	g.byAddr = shrunk(g.byAddr, dropped)
	// rejoins is the addresses a rejoin may be looked up at (inferredPoll),
	// each with the earliest leave kept of a member there: only a join
	// after a leave is looked up.
	var rejoins map[string]int64
	if early {
		rejoins = map[string]int64{}
		for id, m := range g.members {
			if len(m.leaves) > 0 {
				addr := e.facts(g, id).ClientAddr
				if at, ok := rejoins[addr]; !ok || m.leaves[0].at < at {
					rejoins[addr] = m.leaves[0].at
				}
			}
		}
	}
	stale := e.now.UnixNano() - int64(forgetAfter) // a join before it is older than forgetAfter
	dropped = 0
	for addr, js := range g.joinedFrom {
		last := js[len(js)-1]
		from, rejoin := rejoins[addr]
		if last < unixnano.Of(before) || early && !rejoin && last < stale {
			delete(g.joinedFrom, addr)
			dropped++
			continue
		}
		if !early {
			continue
		}
		// The joins older than forgetAfter that follow no leave kept
		// from addr can answer no rejoin: a leave seen from now on is
		// later than them.
		n := 0
		for n < len(js) && js[n] < stale && (!rejoin || js[n] <= from) {
			n++
		}
		switch {
		case n == len(js):
			delete(g.joinedFrom, addr)
			dropped++
		case n > 0:
			g.joinedFrom[addr] = slices.Clone(js[n:])
		}
	}
	g.joinedFrom = shrunk(g.joinedFrom, dropped)
	for name, is := range g.instances {
		kept := 0
		for i, id := range is.members {
			if g.members[id] != nil {
				is.addrs[kept], is.members[kept] = is.addrs[i], id
				kept++
			}
		}
		if kept == 0 {
			delete(g.instances, name)
			continue
		}
		is.addrs, is.members = is.addrs[:kept], is.members[:kept]
	}
	dropped = 0
	for key, at := range g.seen {
		if at.Before(before) {
			delete(g.seen, key)
			dropped++
		}
	}
	g.seen = shrunk(g.seen, dropped)
}

// anyGone reports whether a member of g is gone, with a request since
// before.
func (e *Engine) anyGone(g *groupState, before time.Time) bool {
	for _, m := range g.members {
		if !unixnano.Time(m.seen).Before(before) && e.gone(g, m) {
			return true
		}
	}
	return false
}

// gone reports whether member m may go before Config.Forget: it sent no
// request for forgetAfter, the timeline no longer counts it a member, and
// no finding is made of its record alone (heartbeat_too_slow).
func (e *Engine) gone(g *groupState, m *memberState) bool {
	if e.now.Sub(unixnano.Time(m.seen)) <= forgetAfter || m.slowSince != 0 {
		return false
	}
	f, ok := e.tl.Member(g.id, m.id)
	return !ok || f.Gone
}

// needed is the member ids of g whose records a finding may still read:
// those the timeline's kept history of g (views) names (its generations'
// members, departures, rejoins and suspects, its storms, KIP-848 members
// and migrations), those the kept findings and warnings name, the
// owners of its handovers, and the members of its static instances'
// histories (whose turns live as long as their records). A streams
// group keeps every record.
func (e *Engine) needed(g *groupState, views []timeline.GroupView) map[string]bool {
	need := map[string]bool{}
	for _, f := range g.findings {
		for _, m := range f.Members {
			need[m.MemberID] = true
		}
	}
	for _, f := range e.warnings {
		if f.Group == g.id {
			for _, m := range f.Members {
				need[m.MemberID] = true
			}
		}
	}
	for _, h := range g.handovers {
		need[h.from], need[h.to] = true, true
	}
	for _, is := range g.instances {
		for _, id := range is.members {
			need[id] = true
		}
	}
	for _, v := range views {
		if v.Streams != nil {
			for id := range g.members {
				need[id] = true
			}
		}
		viewNames(&v, need)
	}
	return need
}

// viewNames adds to ids every member id v names.
func viewNames(v *timeline.GroupView, ids map[string]bool) {
	for _, gen := range v.Generations {
		ids[gen.Leader] = true
		for _, m := range gen.Members {
			ids[m.MemberID] = true
		}
		for _, d := range gen.Departed {
			ids[d.MemberID] = true
		}
		for _, r := range gen.Rejoins {
			ids[r.MemberID], ids[r.Replaces] = true, true
		}
		for _, id := range gen.MembersWithNothing {
			ids[id] = true
		}
		for _, s := range gen.Suspects {
			ids[s.MemberID], ids[s.CommittedBy], ids[s.Owner] = true, true, true
		}
	}
	for _, st := range v.Storms {
		for _, id := range st.Members {
			ids[id] = true
		}
	}
	for _, m := range v.ConsumerMembers {
		ids[m.MemberID] = true
	}
	for _, m := range v.Migrations {
		ids[m.StartedBy], ids[m.ConvertedBy], ids[m.LastMember] = true, true, true
	}
}

// memberState is what the diagnosis keeps of one member of its own: the
// software its connection announced, where its fetches stood when it
// left, whether it commits in transactions, the heartbeat cadence found
// too slow, and what only a member still active needs (act). Who it is,
// its timeouts, its last request the coordinator accepted and whether it
// is gone are the timeline's (Engine.facts).
type memberState struct {
	id string
	// The times it keeps are in Unix nanoseconds (unixnano, 0 for none):
	// a group's kept histories name many members, each with a record.
	seen int64 // its latest request on the coordinator: forget drops the record without one
	// ident is the software its connection announced in ApiVersions
	// (KIP-511) and its TLS client certificate subject, interned: most
	// members of a group run the same client (who).
	ident unique.Handle[connIdent]
	// leaves are its latest leaves (up to maxLeaves), oldest first, each
	// with its latest Fetch before it (zero when none was attributed):
	// kept at the leave, since the connection's positions move on after
	// it. A KIP-848 member leaves and rejoins under one member id.
	leaves []leaveMark
	// slowSince is the heartbeat at which the median gap first passed
	// slowGap: the heartbeat_too_slow finding's time. A member found slow
	// is never gone (Engine.gone), so its act stays.
	slowSince int64
	// act is what the member's next requests are read against: nil once
	// it is gone and its record is kept only for what the group's kept
	// histories may name it in (Engine.forget); made afresh if it
	// returns (activity).
	act *memberActivity
	// transactional is whether it commits its offsets in transactions
	// (TxnOffsetCommit): an exactly-once consumer.
	transactional bool
}

// memberActivity is what a member's next requests are read against: its
// latest JoinGroup and heartbeat, its heartbeat gaps, its latest offer,
// and the warnings raised for it.
type memberActivity struct {
	lastJoin      int64 // its latest JoinGroup request
	lastHeartbeat int64
	// intervals are the gaps between its consecutive successful
	// heartbeats, the latest maxIntervals, oldest first; dropped once it
	// left, unless its heartbeats were found too slow (slowSince).
	intervals []time.Duration
	// warnedFor is the last accepted request a session warning was raised
	// for; pollWarnedFor the rebalance start a poll warning was raised for.
	warnedFor, pollWarnedFor int64
	// joinGen is the generation of its latest accepted JoinGroup and
	// joinKey the protocols it offered in it (see groupState.offered).
	joinKey unique.Handle[string]
	joinGen int32
}

// activity is m's activity, made if m has none (a new member, or one
// back after it was gone).
func (m *memberState) activity() *memberActivity {
	if m.act == nil {
		m.act = &memberActivity{}
	}
	return m.act
}

// leaveMark is one leave of a member and its latest Fetch before it, in
// Unix nanoseconds.
type leaveMark struct{ at, fetchBefore int64 }

// maxLeaves is how many leaves of one member are kept, maxIntervals how
// many heartbeat gaps.
const (
	maxLeaves    = 16
	maxIntervals = 32
)

// left records that member m left at at, with its latest Fetch before:
// kept at the leave, since the connection's positions move on after it.
func (e *Engine) left(g *groupState, m *memberState, at time.Time) {
	fetchBefore, _ := e.lastFetchAny(g, m.id, at)
	if len(m.leaves) >= maxLeaves {
		m.leaves = append(m.leaves[:0], m.leaves[1:]...)
	}
	m.leaves = append(m.leaves, leaveMark{at: unixnano.Of(at), fetchBefore: unixnano.Of(fetchBefore)})
}

// who is what member m's connection said of itself.
func (m *memberState) who() connIdent {
	if m.ident == (unique.Handle[connIdent]{}) {
		return connIdent{}
	}
	return m.ident.Value()
}

// learn takes what m's connection said of itself: the software when it
// announced one, the certificate subject when it presented one.
func (m *memberState) learn(c connIdent) {
	cur := m.who()
	w := cur
	if c.software != (decode.ClientSoftware{}) {
		w.software = c.software
	}
	if c.cert != "" {
		w.cert = c.cert
	}
	if w != cur {
		m.ident = unique.Make(w)
	}
}

// joined records an accepted join from the connection addr at at.
func (g *groupState) joined(addr string, at time.Time) {
	js, t := g.joinedFrom[addr], unixnano.Of(at)
	if n := len(js); n > 0 && t <= js[n-1] {
		return
	}
	if g.joinedFrom == nil {
		g.joinedFrom = map[string][]int64{}
	}
	if len(js) >= maxLeaves {
		js = append(js[:0], js[1:]...)
	}
	g.joinedFrom[addr] = append(js, t)
}

// rejoin is the first accepted join from the connection addr after at;
// zero if none.
func (g *groupState) rejoin(addr string, at time.Time) time.Time {
	t := unixnano.Of(at)
	for _, j := range g.joinedFrom[addr] {
		if j > t {
			return unixnano.Time(j)
		}
	}
	return time.Time{}
}

// member returns the member id's record, creating it.
func (g *groupState) member(id string) *memberState {
	m := g.members[id]
	if m == nil {
		m = &memberState{id: id}
		g.members[id] = m
	}
	m.activity()
	return m
}

// facts is what the timeline knows of member id of g; only the id when it
// knows nothing of it.
func (e *Engine) facts(g *groupState, id string) timeline.MemberFacts {
	f, ok := e.tl.Member(g.id, id)
	if !ok {
		f.MemberID = id
	}
	return f
}

// info is how a finding names member id: what the timeline knows of it,
// else just the id.
func (e *Engine) info(g *groupState, id string) Member {
	return memberOf(e.facts(g, id))
}

// memberOf is how a finding names a member.
func memberOf(f timeline.MemberFacts) Member {
	return Member{MemberID: f.MemberID, ClientID: f.ClientID, InstanceID: f.InstanceID, ClientAddr: f.ClientAddr}
}

// infos is info for each id, sorted by member id, without repeats.
func (e *Engine) infos(g *groupState, ids ...string) []Member {
	ids = slices.Clone(ids)
	slices.Sort(ids)
	ids = slices.Compact(ids)
	out := make([]Member, 0, len(ids))
	for _, id := range ids {
		if id != "" {
			out = append(out, e.info(g, id))
		}
	}
	return out
}

// connState is one client connection that fetched, by client address:
// its client id, what it said of itself, and its latest fetch position
// per partition. Every other connection is an identConn.
type connState struct {
	addr     string
	clientID string
	connIdent
	fetches map[tp]fetchPos
	last    time.Time // its latest request seen
}

// connIdent is what a connection said of itself: the software it
// announced (KIP-511) and the subject of its TLS client certificate ("":
// none).
type connIdent struct {
	software decode.ClientSoftware
	cert     string
}

// identConn is a connection that has not fetched, kept only for what it
// said of itself (interned: most say the same). One that sent a group
// request (used) is kept for forgetAfter after its latest request, to name
// its members; a bare one, which sent none (a producer's, a tool's, a
// consumer's to a broker that leads none of its partitions: most
// connections), for bareAfter, in case a group request comes on it.
type identConn struct {
	ident unique.Handle[connIdent]
	last  int64 // its latest request seen, in Unix nanoseconds
	used  bool
}

// fetchPos is a fetch offset and when it was asked for.
type fetchPos struct {
	offset int64
	at     time.Time
}

// identOf is what the connection from addr said of itself; ok is false
// when the engine keeps no connection from addr.
func (e *Engine) identOf(addr string) (id connIdent, ok bool) {
	if c := e.conns[addr]; c != nil {
		return c.connIdent, true
	}
	if b, ok := e.idents[addr]; ok {
		return b.ident.Value(), true
	}
	return connIdent{}, false
}

// conn returns the connection from addr that fetches, creating it (from
// what the engine kept of the connection, if anything), with client id
// clientID. A connection that fetched is indexed in e.byClient (see
// fetched).
func (e *Engine) conn(addr, clientID string) *connState {
	c := e.conns[addr]
	if c == nil {
		c = &connState{addr: addr, clientID: clientID}
		if b, ok := e.idents[addr]; ok {
			c.connIdent, c.last = b.ident.Value(), unixnano.Time(b.last)
			delete(e.idents, addr)
		}
		e.conns[addr] = c
		return c
	}
	if c.clientID != clientID {
		if c.fetches != nil {
			e.unindex(c)
			c.clientID = clientID
			e.index(c)
		} else {
			c.clientID = clientID
		}
	}
	return c
}

// fetched makes c ready to record fetch positions, and indexes it.
func (e *Engine) fetched(c *connState) {
	if c.fetches == nil {
		c.fetches = map[tp]fetchPos{}
		e.index(c)
	}
}

// index adds c to e.byClient.
func (e *Engine) index(c *connState) {
	k := connKey{host(c.addr), c.clientID}
	if e.byClient[k] == nil {
		e.byClient[k] = map[string]*connState{}
	}
	e.byClient[k][c.addr] = c
}

// unindex removes c from e.byClient.
func (e *Engine) unindex(c *connState) {
	k := connKey{host(c.addr), c.clientID}
	delete(e.byClient[k], c.addr)
	if len(e.byClient[k]) == 0 {
		delete(e.byClient, k)
	}
}

// connKey is a client host and client id: what a connection must share
// with a member to be attributed to it (Engine.owns).
type connKey struct{ host, clientID string }

// connsOf is the connections attributed to member id of g, by address:
// those from its host with its client id, unless another live member of
// g shares both (see Engine.owns). It looks at those connections only,
// not at every connection the engine knows.
func (e *Engine) connsOf(g *groupState, id string) []*connState {
	m, ok := e.tl.Member(g.id, id)
	if !ok || !e.owns(g, m, m.ClientAddr, m.ClientID) {
		return nil
	}
	set := e.byClient[connKey{host(m.ClientAddr), m.ClientID}]
	out := make([]*connState, 0, len(set))
	for _, addr := range sortedKeys(set) {
		out = append(out, set[addr])
	}
	return out
}

// host is the host part of a client address.
func host(addr string) string {
	h, _, err := net.SplitHostPort(addr)
	if err != nil {
		return addr
	}
	return h
}

// event updates the state from one group event and makes the findings
// the event alone shows.
func (e *Engine) event(ev *decode.Event) {
	if ev.Group == "" || ev.NamesNoGroup() || !e.finds(ev.Group) {
		return
	}
	e.use(ev)
	g := e.group(ev.Group)
	g.last = e.now
	// Whatever detector an event reaches, a finding or handover it adds
	// changes these counts (takeChanged).
	before := len(g.findings) + len(g.handovers)
	defer func() {
		if len(g.findings)+len(g.handovers) != before {
			e.mark(g)
		}
	}()
	// touch notes a request of member id: its record, and its silence
	// threshold as the timeline knows it now.
	touch := func(id string) *memberState {
		if id == "" {
			return nil
		}
		m := g.member(id)
		if ev.At.After(unixnano.Time(m.seen)) {
			m.seen = unixnano.Of(ev.At)
		}
		e.expect(g, id)
		e.identify(m, ev)
		return m
	}
	switch {
	case ev.JoinGroup != nil:
		e.joinGroup(g, ev, touch)
	case ev.SyncGroup != nil:
		sg := ev.SyncGroup
		m := touch(sg.MemberID)
		if sg.ErrorCode == kerr.FencedInstanceID.Code {
			e.fenced(g, ev, sg.MemberID, sg.InstanceID)
		}
		if m != nil && ev.Responded() && sg.ErrorCode == 0 && sg.Assignment != nil {
			e.assigned(g, sg.MemberID, ev.RespondedAt, sg.Generation, sg.Assignment.Partitions)
		}
	case ev.Heartbeat != nil:
		hb := ev.Heartbeat
		m := touch(hb.MemberID)
		switch hb.ErrorCode {
		case 0:
			if m != nil {
				a := m.act
				if a.lastHeartbeat != 0 {
					gap := ev.At.Sub(unixnano.Time(a.lastHeartbeat))
					if len(a.intervals) < maxIntervals {
						a.intervals = append(a.intervals, gap)
					} else { // in place: the slice stays at its first 32
						copy(a.intervals, a.intervals[1:])
						a.intervals[maxIntervals-1] = gap
					}
					// The median is looked at only after a slow gap.
					if session := e.facts(g, hb.MemberID).SessionTimeout; m.slowSince == 0 && session > 0 && gap > slowGap(session) &&
						len(a.intervals) >= minGaps && m.medianInterval() > slowGap(session) {
						m.slowSince = unixnano.Of(ev.At)
						e.mark(g)
					}
				}
				a.lastHeartbeat = unixnano.Of(ev.At)
			}
		case kerr.RebalanceInProgress.Code:
			if m != nil {
				m.act.lastHeartbeat = 0 // the cadence restarts after the rebalance
				e.checkLateJoin(g, m, ev.At)
			}
		case kerr.FencedInstanceID.Code:
			e.fenced(g, ev, hb.MemberID, hb.InstanceID)
		}
	case ev.LeaveGroup != nil:
		for _, lm := range ev.LeaveGroup.Members {
			if m := touch(lm.MemberID); m != nil {
				e.left(g, m, ev.At)
				if ev.Responded() && ev.LeaveGroup.MemberError(lm) == 0 && m.slowSince == 0 {
					// The coordinator removed it: no heartbeat of its
					// can succeed any more, and no finding reads its
					// gaps.
					m.act.intervals = nil
				}
			}
		}
	case ev.ConsumerGroupHeartbeat != nil:
		e.consumerHeartbeat(g, ev, touch)
	case ev.OffsetCommit != nil, ev.TxnOffsetCommit != nil:
		e.offsetCommit(g, ev, touch)
	case ev.OffsetFetch != nil:
		e.offsetFetch(g, ev)
	}
}

// joinGroup remembers a member's timeouts and protocols, and makes the
// findings a JoinGroup alone shows.
func (e *Engine) joinGroup(g *groupState, ev *decode.Event, touch func(string) *memberState) {
	jg := ev.JoinGroup
	id := jg.AssignedMemberID
	if id == "" {
		id = jg.MemberID
	}
	if jg.ErrorCode == kerr.FencedInstanceID.Code {
		e.fenced(g, ev, jg.MemberID, jg.InstanceID)
		e.fencedRejoin(g, ev, jg.MemberID, jg.InstanceID)
	}
	if jg.ErrorCode == kerr.InconsistentGroupProtocol.Code && g.once("inconsistent:"+ev.ClientAddr) {
		f := newFinding(MixedAssignors, g.id, Warning, ev.At, "")
		f.Members = []Member{{MemberID: jg.MemberID, ClientID: ev.ClientID, InstanceID: jg.InstanceID, ClientAddr: ev.ClientAddr}}
		f.Evidence["error"] = kerr.InconsistentGroupProtocol.Message
		f.Evidence["offered"] = protocolKey(jg)
		f.Explanation = "the coordinator refused this member's JoinGroup with INCONSISTENT_GROUP_PROTOCOL: it offers no assignor (or another protocol type) in common with the members already in the group, so it cannot join at all"
		f.Suggestion = advice(MixedAssignors)
		g.findings = append(g.findings, f)
	}
	m := touch(id)
	if m == nil {
		return
	}
	m.act.lastJoin = unixnano.Of(ev.At)
	if c, ok := e.identOf(ev.ClientAddr); ok && c.software.Name != "" {
		m.learn(connIdent{software: c.software}) // announced when the connection opened
	}
	g.setAddr(ev.ClientAddr, id)
	if ev.Responded() && jg.ErrorCode == 0 {
		g.offered(m, jg.Generation, unique.Make(protocolKey(jg)))
		g.joined(ev.ClientAddr, ev.At)
		e.instanceJoined(g, ev, id, jg.InstanceID)
	}
	// JoinGroup v0 has no rebalance timeout: it is the session timeout.
	if ev.APIVersion >= 1 && jg.SessionTimeout > 0 && jg.RebalanceTimeout > 0 && jg.RebalanceTimeout <= jg.SessionTimeout &&
		g.once("misordered:"+ev.ClientID+":"+jg.SessionTimeout.String()+":"+jg.RebalanceTimeout.String()) {
		f := newFinding(TimeoutsMisordered, g.id, Info, ev.At, id)
		f.Members = []Member{e.info(g, id)}
		f.Evidence["sessionTimeoutMs"] = ms(jg.SessionTimeout)
		f.Evidence["rebalanceTimeoutMs"] = ms(jg.RebalanceTimeout)
		f.Explanation = "the rebalance timeout (the Java client's max.poll.interval.ms) is not above the session timeout: a member that takes its time to rejoin during a rebalance is removed as if it had died, and a member whose session expires while the group waits for joins triggers one more rebalance"
		f.Suggestion = advice(TimeoutsMisordered)
		g.findings = append(g.findings, f)
	}
}

// offered records that member m joined generation gen offering key. The
// offers of a generation are kept in g.joins only once two members offer
// different ones: then those of the members whose latest join is to gen
// (all of its members so far: a generation's joins are answered before
// any member can join the next) are gathered from their records.
func (g *groupState) offered(m *memberState, gen int32, key unique.Handle[string]) {
	m.act.joinGen, m.act.joinKey = gen, key
	g.newestJoin = max(g.newestJoin, gen)
	if byMember := g.joins[gen]; byMember != nil {
		byMember[m.id] = key
		return
	}
	mixed := false
	for _, o := range g.members {
		if a := o.act; a != nil && a.joinGen == gen && a.joinKey != key && a.joinKey != (unique.Handle[string]{}) {
			mixed = true
			break
		}
	}
	if !mixed {
		return
	}
	byMember := map[string]unique.Handle[string]{}
	for id, o := range g.members {
		if a := o.act; a != nil && a.joinGen == gen && a.joinKey != (unique.Handle[string]{}) {
			byMember[id] = a.joinKey
		}
	}
	if g.joins == nil {
		g.joins = map[int32]map[string]unique.Handle[string]{}
	}
	g.joins[gen] = byMember
}

// protocolKey is a JoinGroup's protocol type and offered assignors, in the
// member's order of preference.
func protocolKey(jg *decode.JoinGroup) string {
	names := make([]string, 0, len(jg.Protocols))
	for _, p := range jg.Protocols {
		names = append(names, p.Name)
	}
	return jg.ProtocolType + ": " + strings.Join(names, ",")
}

// partitionsMap turns a set of partitions into the JSON form.
func partitionsMap(set map[tp]bool) map[string][]int32 {
	out := map[string][]int32{}
	for _, k := range slices.SortedFunc(maps.Keys(set), cmpTP) {
		out[k.topic] = append(out[k.topic], k.partition)
	}
	return out
}

func cmpTP(a, b tp) int {
	return cmp.Or(cmp.Compare(a.topic, b.topic), cmp.Compare(a.partition, b.partition))
}

func sortedKeys[K cmp.Ordered, V any](m map[K]V) []K { return slices.Sorted(maps.Keys(m)) }
