package timeline

// Who left between two generations and how, what a member is to the
// group, and why the leader changed.

import (
	"fmt"
	"time"
)

// memberGone reacts to a member leaving the current generation: a
// rebalance starts, or the group empties.
func (g *group) memberGone(id string, at time.Time, how, reason string) {
	latest := g.latest()
	if latest == nil || !latest.active(id) || g.next != nil || latest.phase == phaseJoining {
		return
	}
	remaining := 0
	for mid := range latest.members {
		if lm := g.live[mid]; latest.active(mid) && (lm == nil || !lm.gone) {
			remaining++
		}
	}
	if remaining > 0 || !latest.listSeen {
		g.detect(at, false)
		return
	}
	kind := TriggerMemberLeft
	if how == DepartSessionTimeout {
		kind = TriggerSessionTimeout
	}
	next := newGeneration()
	next.prev, next.num = latest, latest.num+1
	next.protocolType = latest.protocolType
	next.trigger = trigger{kind: kind, member: id, reason: reason, at: at}
	next.start, next.announced = at, true
	next.toldKind, next.toldMember = next.trigger.kind, next.trigger.member
	next.empty = &departure{member: id, how: how, at: at, reason: reason}
	g.next = next
	g.emit(at, KindGroupEmpty, next.num, id, fmt.Sprintf("group empty: its last member %s %s; generation %d has no members",
		id, map[string]string{DepartLeft: "left", DepartSessionTimeout: "timed out"}[how], next.num), nil)
}

// materializeEmpty turns a pending empty-group generation into a formed one.
func (g *group) materializeEmpty(gen *generation) {
	prev := gen.prev
	gen.phase = phaseEmpty
	gen.joinEnd, gen.stableAt = gen.start, gen.start
	if prev != nil {
		for _, id := range prev.memberIDs() {
			if !prev.active(id) {
				continue
			}
			d := g.classifyDeparture(gen, prev.members[id])
			if d.how == DepartUnknown {
				d.how, d.at = DepartLeft, gen.start
			}
			gen.departed = append(gen.departed, d)
		}
	}
	g.keep(gen)
	g.consumeCauses(gen.start)
	g.countRebalance(gen)
}

// joinStatus says whether m is new to the group, rejoined, or a static
// member that came back under a new member id.
func (g *group) joinStatus(gen *generation, m *member) memberStatus {
	prev := gen.prev
	if prev == nil && gen.num == 1 {
		return statusJoined // the group's first generation: everyone is new
	}
	if prev != nil && prev.members[m.id] != nil {
		return statusRejoined
	}
	if m.who.instanceID != "" && prev != nil {
		for _, id := range prev.memberIDs() {
			if pm := prev.members[id]; pm.who.instanceID == m.who.instanceID && prev.active(id) {
				m.setExtra().replaces = id
				return statusReplaced
			}
		}
	}
	if m.requested && !m.retried {
		return statusRejoined
	}
	return statusJoined
}

// departures lists the members of the previous generation missing from gen.
func (g *group) departures(gen *generation) {
	prev := gen.prev
	if prev == nil {
		return
	}
	replaced := map[string]bool{}
	for _, m := range gen.members {
		if m.more().replaces != "" {
			replaced[m.more().replaces] = true
			if lm := g.live[m.more().replaces]; lm != nil {
				lm.gone = true // a static member back under a new member id
			}
		}
	}
	var unseen []string
	for _, id := range prev.memberIDs() {
		if !prev.active(id) || gen.members[id] != nil || replaced[id] {
			continue
		}
		d := g.classifyDeparture(gen, prev.members[id])
		if d.how == DepartUnknown {
			unseen = append(unseen, id)
			continue
		}
		gen.departed = append(gen.departed, d)
		if lm := g.live[id]; lm != nil {
			lm.gone = true
		}
	}
	if len(unseen) > 0 {
		gen.note("departures", fmt.Sprintf("%s of generation %d not seen joining; whether they are still members is unknown", listNames(unseen, 5), prev.num))
	}
}

// classifyDeparture says how a member of the previous generation left:
// LeaveGroup, session timeout (inferred from its last accepted request and
// its session timeout, unless the group is blind), or dropped at the end of the join phase.
func (g *group) classifyDeparture(gen *generation, pm *member) departure {
	d := departure{member: pm.id, instanceID: pm.who.instanceID, lost: pm.resolved().clone()}
	for _, c := range g.causes {
		if c.member == pm.id && (c.kind == TriggerMemberLeft || c.kind == TriggerSessionTimeout) {
			d.how, d.at, d.reason = DepartLeft, c.at, c.reason
			if c.kind == TriggerSessionTimeout {
				d.how = DepartSessionTimeout
			}
			return d
		}
	}
	// While the group is blind (an instance that saw some of its members
	// went silent, see Engine.Blind), the member's heartbeats may have gone
	// unseen: its silence says nothing of its session.
	if lm := g.live[pm.id]; lm != nil && !g.blind {
		if exp, ok := lm.sessionEnd(); ok && !exp.After(gen.joinEnd) {
			d.how, d.at, d.reason = DepartSessionTimeout, exp, expiryReason(lm)
			return d
		}
	}
	if gen.listSeen {
		d.how, d.at = DepartDropped, gen.joinEnd
		d.reason = "did not rejoin before the join phase ended"
		if gen.rebalanceTimeout > 0 {
			d.reason += fmt.Sprintf(" (rebalance timeout %s)", human(gen.rebalanceTimeout))
		}
		return d
	}
	d.how = DepartUnknown
	return d
}

// leaderChange is a generation's new leader's predecessor and why it
// changed ("" when unknown).
type leaderChange struct {
	prev, reason string
}

// leaderChange explains a new leader.
func (g *group) leaderChange(gen *generation) {
	prev := gen.prev
	if prev == nil || prev.leader == "" || gen.leader == "" || prev.leader == gen.leader {
		return
	}
	lc := &leaderChange{prev: prev.leader}
	gen.leaderChange = lc
	if d := gen.departure(prev.leader); d != nil {
		lc.reason = map[string]string{
			DepartLeft:           "the previous leader left",
			DepartSessionTimeout: "the previous leader's session timed out",
			DepartDropped:        "the previous leader did not rejoin in time",
		}[d.how]
		return
	}
	for _, m := range gen.members {
		if m.more().replaces == prev.leader {
			lc.reason = "the previous leader restarted as a static member with a new member id"
			return
		}
	}
	if gen.members[prev.leader] != nil {
		lc.reason = "the coordinator elected another member"
		return
	}
	lc.reason = "the previous leader is no longer a member"
}
