package timeline

import (
	"fmt"
	"slices"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// joinGroup handles a JoinGroup exchange (key 11). The response's
// generation says which generation the member joined: a newer one forms it,
// the current one after its join phase means a rejoin without a rebalance
// (KIP-345 static restart, or a follower with unchanged metadata).
func (g *group) joinGroup(ev *decode.Event) {
	jg := ev.JoinGroup
	if jg.ProtocolType != "" {
		g.protocolType = jg.ProtocolType
	}
	id := jg.MemberID
	if jg.AssignedMemberID != "" {
		id = jg.AssignedMemberID
	}
	if id == "" {
		if !ev.Responded() {
			g.emit(ev.At, KindPartial, 0, "", fmt.Sprintf("JoinGroup from client %s %s got no response", ev.ClientID, ev.ClientAddr), nil)
		}
		return
	}
	lm := g.member(id, ev)
	// The registry's copy of the id, which every generation's record of
	// the member then shares, instead of this response's.
	id = lm.id
	if jg.InstanceID != "" {
		lm.instanceID = jg.InstanceID
	}
	lm.setTimeouts(jg)
	if r := joinRack(jg); r != "" {
		lm.rack = r
	}
	if !ev.Responded() {
		g.emit(ev.At, KindPartial, 0, id, fmt.Sprintf("JoinGroup from %s got no response (connection closed while it was held?)", id), nil)
		return
	}
	switch jg.ErrorCode {
	case 0:
	case errMemberIDRequired:
		// KIP-394: the retry with this id is the same join (counted once,
		// from this first attempt).
		g.pendingIDs[id] = &attempt{at: ev.At, clientID: ev.ClientID, clientAddr: ev.ClientAddr}
		lm.lastAliveNs = max(lm.lastAliveNs, unixnano.Of(ev.At))
		g.addCause(cause{trigger: trigger{kind: TriggerMemberJoined, member: id, reason: jg.Reason, at: ev.At},
			clientID: ev.ClientID, clientAddr: ev.ClientAddr})
		return
	default:
		g.requestError(ev, "JoinGroup", id, jg.ErrorCode)
		return
	}
	g.alive(id, ev)
	num := jg.Generation
	latest := g.latest()
	switch {
	case latest == nil || num > latest.num:
		g.addJoin(g.form(num, ev.At), ev, id)
	case num == latest.num:
		if latest.phase == phaseJoining || ev.At.Before(latest.joinEnd) {
			g.addJoin(latest, ev, id)
		} else {
			g.rejoinInPlace(latest, ev, id)
		}
	default:
		if old := g.byNum[num]; old != nil && old.phase == phaseJoining {
			g.addJoin(old, ev, id)
		}
	}
}

// chosenProtocol is the member's metadata for the assignor the group chose.
func chosenProtocol(jg *decode.JoinGroup) *decode.JoinProtocol {
	for i := range jg.Protocols {
		if jg.Protocols[i].Name == jg.ProtocolName {
			return &jg.Protocols[i]
		}
	}
	if len(jg.Protocols) > 0 {
		return &jg.Protocols[0]
	}
	return nil
}

// setSubscription records sub: in w, the identity to be m's (see setWho),
// its topics and rack. What equals the member's record in the previous
// generation, prev (nil: none), shares prev's copy: generations keep a
// record per member, and a member's subscription and what it owns when it
// rejoins mostly stay as they were.
func (m *member) setSubscription(w *identity, sub *decode.Subscription, prev *member) {
	if sub == nil {
		return
	}
	w.subscription = slices.Sorted(slices.Values(sub.Topics))
	w.subscription = slices.Compact(w.subscription)
	if prev != nil && len(w.subscription) > 0 && slices.Equal(w.subscription, prev.who.subscription) {
		w.subscription = prev.who.subscription
	}
	if sub.Version >= 1 {
		m.owned = prev.share(fromTopicPartitions(sub.OwnedPartitions))
	}
	if sub.Rack != "" {
		w.rack = sub.Rack
	}
	if sub.Streams != nil {
		m.setExtra().streamsSub = sub.Streams
	}
}

// addJoin records a member's JoinGroup in the generation it formed.
func (g *group) addJoin(gen *generation, ev *decode.Event, id string) {
	jg := ev.JoinGroup
	m := gen.member(id)
	first := !m.joinSeen
	m.joinSeen = true
	at := ev.At
	if a := g.pendingIDs[id]; a != nil {
		at, m.retried = a.at, true
		delete(g.pendingIDs, id)
	}
	if m.joinNs == 0 || at.Before(m.joinAt()) {
		m.joinNs = unixnano.Of(at)
	}
	if first {
		m.requested = jg.MemberID != ""
		gen.await(m)
		gen.joined++
	}
	m.joinRespNs = unixnano.Of(ev.RespondedAt)
	m.reason = jg.Reason
	m.joined(gen, ev)
	if jg.ProtocolType != "" {
		gen.protocolType = jg.ProtocolType
	}
	if jg.ProtocolName != "" {
		gen.protocol = jg.ProtocolName
	}
	if jg.Leader != "" {
		gen.leader = jg.Leader
	}
	gen.joinEnd = earliest(gen.joinEnd, ev.RespondedAt)
	if len(jg.Members) > 0 && !gen.listSeen {
		gen.listSeen = true
		gen.listSize = int32(len(jg.Members))
		for _, jm := range jg.Members {
			id, prev := jm.MemberID, gen.previous(jm.MemberID)
			if prev != nil {
				id = prev.id // the previous record's copy, not this response's
			}
			lm := gen.member(id)
			w := *lm.who
			if w.instanceID == "" {
				w.instanceID = jm.InstanceID
			}
			if w.subscription == nil {
				lm.setSubscription(&w, jm.Subscription, prev)
			}
			lm.setWho(w, prev)
		}
	}
	switch {
	case gen.phase == phaseJoining:
		if gen.listSeen && gen.joined >= gen.listSize {
			g.finishJoin(gen)
		}
	case first:
		g.lateJoin(gen, m)
	}
}

// joined records who m is, as its JoinGroup in gen, ev, says.
func (m *member) joined(gen *generation, ev *decode.Event) {
	jg := ev.JoinGroup
	w := *m.who
	w.instanceID = jg.InstanceID
	w.clientID, w.clientAddr = ev.ClientID, ev.ClientAddr
	w.sessionTimeout, w.rebalanceTimeout = jg.SessionTimeout, jg.RebalanceTimeout
	prev := gen.previous(m.id)
	if p := chosenProtocol(jg); p != nil {
		m.setSubscription(&w, p.Subscription, prev)
	}
	m.setWho(w, prev)
}

// lateJoin records a JoinGroup response that left the coordinator with
// the others but reached kproxy after the join phase was closed (responses
// on different connections can arrive a little out of order): the trigger
// and the slowest member may change.
func (g *group) lateJoin(gen *generation, m *member) {
	m.status = g.joinStatus(gen, m)
	if s := slowest(gen); s != nil {
		gen.slowest = s.id
	}
	if gen.trigger.kind == TriggerUnknown {
		if t, bound := g.resolveTrigger(gen); t.kind != TriggerUnknown {
			gen.trigger, gen.startBound, gen.start = t, bound, t.at
			g.emit(t.at, KindTrigger, gen.num, t.member, fmt.Sprintf("gen %d trigger: %s", gen.num, g.triggerText(gen, t)), triggerFields(t))
		}
	}
	g.emitJoin(gen, m)
}

// rejoinInPlace records a JoinGroup answered with the current generation
// after its join phase: no rebalance. A static member (KIP-345) that
// restarted gets a new member id that replaces the old one and keeps its
// assignment.
func (g *group) rejoinInPlace(gen *generation, ev *decode.Event, id string) {
	jg := ev.JoinGroup
	replaces := ""
	if gen.members[id] == nil && jg.InstanceID != "" {
		for _, oid := range gen.memberIDs() {
			om := gen.members[oid]
			if om.who.instanceID == jg.InstanceID && om.more().replacedBy == "" {
				replaces = oid
			}
		}
	}
	m := gen.member(id)
	m.joined(gen, ev)
	if m.joinNs == 0 {
		m.joinNs, m.joinRespNs = unixnano.Of(ev.At), unixnano.Of(ev.RespondedAt)
	}
	text := fmt.Sprintf("%s rejoined generation %d without a rebalance", id, gen.num)
	if replaces != "" {
		om := gen.members[replaces]
		om.setExtra().replacedBy = id
		m.setExtra().replaces, m.status = replaces, statusReplaced
		m.setPlanned(om.resolved().clone())
		gen.index.assignmentsChanged()
		if lm := g.live[replaces]; lm != nil {
			lm.gone = true
		}
		if gen.leader == replaces {
			gen.leader = id
		}
		text = fmt.Sprintf("static member %s restarted: %s replaces %s, no rebalance (generation %d kept, assignment %s)",
			jg.InstanceID, id, replaces, gen.num, orNone(m.planned))
	}
	gen.keepRejoin(rejoin{at: ev.At, member: id, instanceID: jg.InstanceID, replaces: replaces,
		clientID: ev.ClientID, clientAddr: ev.ClientAddr})
	g.emit(ev.At, KindStaticRejoin, gen.num, id, text, map[string]any{
		"instance_id": jg.InstanceID, "replaces": replaces, "client_id": ev.ClientID, "client_addr": ev.ClientAddr})
}

// maxRejoins is how many rejoins without a rebalance a generation keeps:
// a static member crash-looping inside a stable generation that lasts for
// days restarts without end. Those beyond are counted (the report says how
// many) and still told as entries, so the log and the journal keep them
// all.
const maxRejoins = 100

// keepRejoin keeps rj in gen, unless gen keeps maxRejoins already. Then
// the member rj replaces is forgotten too when it came in a rejoin not
// kept, so that a crash loop keeps the generation's first maxRejoins
// replacements and its current members, and no more.
func (gen *generation) keepRejoin(rj rejoin) {
	if len(gen.rejoins) < maxRejoins {
		gen.rejoins = append(gen.rejoins, rj)
		return
	}
	gen.rejoinsDropped++
	if om := gen.members[rj.replaces]; om != nil && om.more().replaces != "" &&
		!slices.ContainsFunc(gen.rejoins, func(k rejoin) bool { return k.member == rj.replaces }) {
		delete(gen.members, rj.replaces)
		gen.index.membersChanged()
	}
}

// syncGroup handles a SyncGroup exchange (key 14): the leader's plan, and
// each member's own assignment.
func (g *group) syncGroup(ev *decode.Event) {
	sg := ev.SyncGroup
	if sg.ProtocolType != "" {
		g.protocolType = sg.ProtocolType
	}
	gen := g.numbered(sg.Generation)
	if gen == nil || gen.frozen != nil { // frozen: as if no longer kept
		if latest := g.latest(); latest != nil && sg.Generation <= latest.num {
			return
		}
		gen = g.midway(sg.Generation, ev)
	}
	if gen.phase == phaseJoining {
		g.finishJoin(gen)
	}
	if gen.protocol == "" {
		gen.protocol = sg.ProtocolName
	}
	m := gen.member(sg.MemberID)
	if w := *m.who; w.clientAddr == "" || w.instanceID == "" {
		if w.clientAddr == "" {
			w.clientID, w.clientAddr = ev.ClientID, ev.ClientAddr
		}
		if w.instanceID == "" {
			w.instanceID = sg.InstanceID
		}
		m.setWho(w, gen.previous(sg.MemberID))
	}
	if len(sg.Plan) > 0 && !gen.planSeen {
		gen.planSeen, gen.planAt, gen.planBy = true, ev.At, sg.MemberID
		for _, pa := range sg.Plan {
			if pa.Assignment != nil {
				pm := gen.member(pa.MemberID)
				pm.setPlanned(gen.previous(pa.MemberID).share(fromTopicPartitions(pa.Assignment.Partitions)))
				if pa.Assignment.Streams != nil {
					pm.setExtra().streamsPlan = pa.Assignment.Streams
				}
			}
		}
		gen.index.assignmentsChanged()
	}
	if !ev.Responded() {
		return
	}
	switch sg.ErrorCode {
	case 0:
		g.alive(sg.MemberID, ev)
		if !m.synced {
			m.synced = true
			if m.awaited {
				m.awaited = false
				gen.waiting--
			}
		}
		m.syncedNs = unixnano.Of(ev.RespondedAt)
		if gen.phase == phaseStable && m.joinSeen && m.joinAt().Before(gen.joinEnd) {
			// A member of the formation whose responses reached us late.
			gen.stableAt = later(gen.stableAt, m.syncedAt())
			g.computeDiff(gen)
		}
		if sg.Assignment != nil {
			a := gen.previous(sg.MemberID).share(fromTopicPartitions(sg.Assignment.Partitions))
			if m.planned.equal(a) {
				a = m.planned // one copy of the set the leader planned
			}
			m.setAssignment(a)
			if sg.Assignment.Streams != nil {
				m.setExtra().streamsAsg = sg.Assignment.Streams
			}
			gen.index.assignmentsChanged()
		}
		g.checkStable(gen)
	case errRebalanceInProgress:
		g.alive(sg.MemberID, ev)
		g.evidence(ev, sg.Generation)
	default:
		g.requestError(ev, "SyncGroup", sg.MemberID, sg.ErrorCode)
	}
}

// heartbeat handles a Heartbeat exchange (key 12): liveness, and
// REBALANCE_IN_PROGRESS as evidence that the group left Stable.
// lm is the member's registry entry (see Engine.lookup). It reports
// whether all it changed was a known member's last accepted request
// (see Engine.quiet).
func (g *group) heartbeat(ev *decode.Event, lm *liveMember) (onlyAlive bool) {
	hb := ev.Heartbeat
	if !ev.Responded() {
		return true
	}
	switch hb.ErrorCode {
	case 0, errRebalanceInProgress:
		onlyAlive = true
		if hb.MemberID != "" {
			_, onlyAlive = g.aliveMember(lm, hb.MemberID, ev)
		}
		gen := g.numbered(hb.Generation)
		if gen == nil {
			if latest := g.latest(); latest == nil || hb.Generation > latest.num {
				gen = g.midway(hb.Generation, ev)
			}
		}
		if gen != nil && gen.midway && gen.frozen == nil { // frozen: as if no longer kept
			m := gen.member(hb.MemberID)
			w := *m.who
			w.instanceID, w.clientID, w.clientAddr = hb.InstanceID, ev.ClientID, ev.ClientAddr
			m.setWho(w, gen.previous(hb.MemberID))
			onlyAlive = false
		}
		if hb.ErrorCode == errRebalanceInProgress {
			g.evidence(ev, hb.Generation)
			onlyAlive = false
		}
		return onlyAlive
	default:
		g.requestError(ev, "Heartbeat", hb.MemberID, hb.ErrorCode)
		return false
	}
}

// leaveGroup handles a LeaveGroup exchange (key 13): one member before v3,
// a batch from v3, each with the client's reason from v5 (KIP-800).
func (g *group) leaveGroup(ev *decode.Event) {
	lg := ev.LeaveGroup
	for _, lv := range lg.Members {
		code := lg.MemberError(lv)
		id := lv.MemberID
		if id == "" && lv.InstanceID != "" {
			id = g.memberByInstance(lv.InstanceID)
		}
		if id == "" {
			continue
		}
		if code != 0 {
			g.requestError(ev, "LeaveGroup", id, code)
			continue
		}
		lm := g.member(id, ev)
		lm.gone = true
		text := id + " left"
		if lv.Reason != "" {
			text += fmt.Sprintf(": %q", lv.Reason)
		}
		if !ev.Responded() {
			text += " (no response seen)"
		}
		num := int32(0)
		if latest := g.latest(); latest != nil {
			num = latest.num
		}
		g.emit(ev.At, KindMemberLeft, num, id, text, map[string]any{
			"reason": lv.Reason, "instance_id": lv.InstanceID, "client_id": ev.ClientID, "client_addr": ev.ClientAddr})
		g.addCause(cause{trigger: trigger{kind: TriggerMemberLeft, member: id, reason: lv.Reason, at: ev.At},
			instanceID: lv.InstanceID, clientID: ev.ClientID, clientAddr: ev.ClientAddr})
		g.memberGone(id, ev.At, DepartLeft, lv.Reason)
	}
}

// memberByInstance finds the current member id of a static member.
func (g *group) memberByInstance(instanceID string) string {
	if latest := g.latest(); latest != nil {
		for _, id := range latest.memberIDs() {
			if m := latest.members[id]; m.who.instanceID == instanceID && m.more().replacedBy == "" {
				return id
			}
		}
	}
	return ""
}

// requestError names a failed group request, once per member, API and
// error within a generation.
func (g *group) requestError(ev *decode.Event, api, id string, code int16) {
	num := int32(0)
	if latest := g.latest(); latest != nil {
		num = latest.num
	}
	key := fmt.Sprintf("%d/%s/%s/%d", num, id, api, code)
	if g.errSeen[key] {
		return
	}
	if g.errSeen == nil {
		g.errSeen = map[string]bool{}
	}
	g.errSeen[key] = true
	name := errorName(code)
	kind, why := KindError, ""
	switch code {
	case errUnknownMemberID:
		why = ": the coordinator no longer knows this member (removed after a session timeout or the join deadline)"
		if lm := g.live[id]; lm != nil {
			lm.gone = true
		}
	case errIllegalGeneration:
		why = ": its generation is outdated; it must rejoin"
	case errFencedInstanceID:
		kind, why = KindFenced, ": another member took over its instance id (static member restarted elsewhere)"
		if lm := g.live[id]; lm != nil {
			lm.gone = true
		}
	}
	g.e.emit(Entry{At: ev.At, Group: g.id, Kind: kind, Generation: num, Member: id,
		Text:    fmt.Sprintf("%s from %s failed: %s%s", api, id, name, why),
		Fields:  map[string]any{"api": api, "error": name, "client_id": ev.ClientID, "client_addr": ev.ClientAddr},
		Failure: &FailureFacts{API: api, Error: name}})
}

func orNone(p partitions) string {
	if p == nil {
		return "unknown"
	}
	if p.count() == 0 {
		return "nothing"
	}
	return p.String()
}
