package timeline

import (
	"fmt"
	"time"
)

// sweepGrace is how long past a member's session deadline the engine waits
// before calling it expired: exchanges of different connections reach the
// engine slightly out of order, and a heartbeat may still be on its way.
const sweepGrace = time.Second

// sweep infers session timeouts in a stable classic group: a member with no
// accepted request within its session timeout was removed by the
// coordinator, which starts a rebalance. Groups mid-rebalance are left to
// the next formation, because members held in JoinGroup send no heartbeats
// and are kept alive by the coordinator.
func (g *group) sweep(now time.Time) {
	quiet := g.e.quiet // the groups' quietUntil (see Engine.quiet)
	if g.dormant != nil {
		quiet[g.index] = g.e.now.AddDate(100, 0, 0) // nothing for a sweep to do
		return
	}
	if quiet[g.index].IsZero() {
		quiet[g.index] = g.nextChange()
	}
	if now.Before(quiet[g.index]) {
		return // nothing can be pruned or expire yet
	}
	g.sweepNow(now)
	g.e.quiet[g.index] = g.nextChange()
}

// nextChange is the earliest time at which a sweep could find something
// to prune or an expired session, as long as the group sees no event: the
// earliest deadline of the members and MEMBER_ID_REQUIRED answers prune
// forgets, and of the sessions sweepNow checks.
func (g *group) nextChange() time.Time {
	next := time.Unix(1<<62, 0) // far beyond any event time
	for _, lm := range g.live {
		next = earliest(next, lm.lastAlive().Add(forgetAfter))
	}
	for _, a := range g.pendingIDs {
		next = earliest(next, a.at.Add(forgetAfter))
	}
	latest := g.latest()
	if !g.watchesSessions(latest) {
		return next
	}
	for id := range latest.members {
		if end, ok := sessionEnd(latest, id, g.live[id]); ok {
			next = earliest(next, end.Add(sweepGrace))
		}
	}
	return next
}

// watchesSessions reports whether sweeps infer session timeouts in g,
// latest its latest generation: a classic group whose latest generation
// formed in view and is stable, with no rebalance detected since, and not
// blind (see Engine.Blind). In a group mid-rebalance, members held in
// JoinGroup send no heartbeats and the coordinator keeps them alive.
func (g *group) watchesSessions(latest *generation) bool {
	return g.consumer == nil && latest != nil && latest.phase == phaseStable && !latest.midway && g.next == nil && !g.blind
}

// sweepNow prunes the member registry and infers session timeouts as of
// now.
func (g *group) sweepNow(now time.Time) {
	g.prune(now)
	latest := g.latest()
	if !g.watchesSessions(latest) {
		return
	}
	if !g.anyExpired(latest, now) {
		return // the common case, without sorting the members
	}
	for _, id := range latest.memberIDs() {
		lm := g.live[id]
		if !g.expired(latest, id, lm, now) {
			continue
		}
		exp, _ := sessionEnd(latest, id, lm)
		lm.expired, lm.gone = true, true
		reason := expiryReason(lm)
		g.addCause(cause{trigger: trigger{kind: TriggerSessionTimeout, member: id, reason: reason, at: exp},
			instanceID: lm.instanceID, clientID: lm.clientID, clientAddr: lm.clientAddr})
		g.emit(exp, KindSessionExpired, latest.num, id, fmt.Sprintf("session of %s timed out (%s; inferred)", id, reason),
			map[string]any{"session_timeout_ms": ms(lm.sessionTimeout()), "client_id": lm.clientID, "client_addr": lm.clientAddr})
		g.memberGone(id, exp, DepartSessionTimeout, reason)
	}
}

// sessionEnd is when the coordinator removes member id of latest, lm in
// the registry, unless it hears from it first: its last accepted request
// plus its session timeout. ok is false when the session is not watched:
// the member is not active in latest, unknown, already gone, or its
// timeout or last request is not known.
func sessionEnd(latest *generation, id string, lm *liveMember) (end time.Time, ok bool) {
	if !latest.active(id) || lm == nil || lm.gone {
		return time.Time{}, false
	}
	return lm.sessionEnd()
}

// sessionEnd is the member's last accepted request plus its session
// timeout, if both are known.
func (lm *liveMember) sessionEnd() (time.Time, bool) {
	if lm.sessionTimeout() <= 0 || lm.lastAlive().IsZero() {
		return time.Time{}, false
	}
	return lm.lastAlive().Add(lm.sessionTimeout()), true
}

// expired reports whether member id of latest, lm in the registry, has
// had no accepted request for its session timeout and the grace after it.
func (g *group) expired(latest *generation, id string, lm *liveMember, now time.Time) bool {
	end, ok := sessionEnd(latest, id, lm)
	return ok && now.Sub(end) >= sweepGrace
}

// anyExpired reports whether a member of latest has expired, in no
// particular order.
func (g *group) anyExpired(latest *generation, now time.Time) bool {
	for id := range latest.members {
		if g.expired(latest, id, g.live[id], now) {
			return true
		}
	}
	return false
}

// withdrawExpiry takes back an inferred session timeout: the member was
// heard from again.
func (g *group) withdrawExpiry(id string, at time.Time) {
	kept := g.causes[:0]
	for _, c := range g.causes {
		if !(c.kind == TriggerSessionTimeout && c.member == id) {
			kept = append(kept, c)
		}
	}
	g.causes = kept
	num := int32(0)
	if latest := g.latest(); latest != nil {
		num = latest.num
	}
	if n := g.next; n != nil && n.trigger.kind == TriggerSessionTimeout && n.trigger.member == id && n.evidenceAt.IsZero() {
		g.next = nil
	}
	g.emit(at, KindPartial, num, id, fmt.Sprintf("%s was heard from again: its inferred session timeout is withdrawn", id), nil)
}

// close settles a group at the end of input.
func (g *group) close(at time.Time) {
	g.sweep(at)
	if g.consumer != nil {
		g.closeConsumer(at)
	}
	if g.streams != nil {
		g.closeStreams(at)
	}
	latest := g.latest()
	if latest != nil && latest.phase == phaseJoining {
		g.finishJoin(latest)
	}
	if latest != nil && latest.phase == phaseSyncing {
		var waiting []string
		for _, id := range latest.memberIDs() {
			if m := latest.members[id]; m.joinSeen && !m.synced {
				waiting = append(waiting, id)
			}
		}
		why := fmt.Sprintf("generation %d was not stable at the end of input: %s had no assignment yet", latest.num, listNames(waiting, 5))
		if g.consumer != nil {
			why = fmt.Sprintf("group epoch %d was not reconciled at the end of input", latest.num)
		}
		latest.note("stableAt", why)
		g.emit(at, KindIncomplete, latest.num, "", why, nil)
	}
	if n := g.next; n != nil {
		if n.empty != nil {
			g.next = nil
			g.materializeEmpty(n)
			latest = n
		} else {
			why := fmt.Sprintf("a rebalance started at %s (%s) but no generation formed by the end of input",
				clock(n.start, g.e.cfg.Location), n.trigger.kind)
			g.emit(at, KindIncomplete, n.num, n.trigger.member, why, nil)
		}
	}
	if latest != nil && latest.phase == phaseStable && latest.mode == ModeCooperative && g.next == nil && revokedAny(latest) {
		latest.unsettled = fmt.Sprintf("partitions revoked in gen %d were never reassigned: no follow-up rebalance was seen", latest.num)
		g.emit(at, KindUnsettled, latest.num, "", latest.unsettled, nil)
	}
	if st := g.storm.active; st != nil && at.Sub(st.to) > g.e.cfg.StormWindow {
		g.endStorm(st.to.Add(g.e.cfg.StormWindow))
	}
}

// forgetAfter is how long a member no longer in the latest generation is
// remembered after its last accepted request, and how long a
// MEMBER_ID_REQUIRED answer waits for its retry.
const forgetAfter = time.Hour

// prune bounds the member registry of a long-running proxy, where dynamic
// members come and go with new member ids.
func (g *group) prune(now time.Time) {
	latest := g.latest()
	for id, lm := range g.live {
		if now.Sub(lm.lastAlive()) > forgetAfter && (latest == nil || !latest.active(id)) {
			delete(g.live, id)
		}
	}
	for id, a := range g.pendingIDs {
		if now.Sub(a.at) > forgetAfter {
			delete(g.pendingIDs, id)
		}
	}
}
