package timeline

// What moved a group out of Stable: the candidate causes (a leave, a new
// member's first JoinGroup, an expired session, a rejoin) and the earliest
// one after the previous generation formed.

import (
	"fmt"
	"slices"
	"time"
)

// provisional picks the earliest cause seen so far for the rebalance
// detected at at: a leave, a new member's first JoinGroup, or a member whose
// session must have expired.
func (g *group) provisional(next *generation, at time.Time) (trigger, bool) {
	var best *trigger
	floor := time.Time{}
	if next.prev != nil {
		floor = next.prev.joinEnd
	}
	for _, c := range g.causes {
		if !c.at.Before(floor) && !c.at.After(at) && (best == nil || better(c.trigger, *best)) {
			t := c.trigger
			best = &t
		}
	}
	if latest := next.prev; latest != nil && !g.blind { // blind: a silence proves nothing
		for _, id := range latest.memberIDs() {
			lm := g.live[id]
			if exp, ok := sessionEnd(latest, id, lm); ok && !exp.After(at) {
				t := trigger{kind: TriggerSessionTimeout, member: id, reason: expiryReason(lm), at: exp}
				if best == nil || better(t, *best) {
					best = &t
				}
			}
		}
	}
	if best == nil {
		reason := "not observed yet"
		switch {
		case !next.evidenceAt.Equal(at):
		case g.consumer != nil:
			// KIP-848 (kip848.go memberStep): the broker revoked
			// partitions at the member's epoch, its target moved.
			reason = "not observed yet; first sign: partitions revoked without a new epoch"
		default:
			reason = "not observed yet; first sign: REBALANCE_IN_PROGRESS"
		}
		return trigger{kind: TriggerUnknown, at: at, reason: reason}, true
	}
	return *best, false
}

func expiryReason(lm *liveMember) string {
	return fmt.Sprintf("no heartbeat since %s UTC, session timeout %s", lm.lastAlive().UTC().Format("15:04:05.000"), human(lm.sessionTimeout()))
}

// triggerRank orders causes found at the same instant: the one that can
// start a rebalance by itself first.
var triggerRank = map[string]int{
	TriggerMemberLeft: 0, TriggerSessionTimeout: 1, TriggerMemberFenced: 2, TriggerMemberJoined: 3,
	TriggerSubscriptionChanged: 4, TriggerFollowUp: 5, TriggerProbingRebalance: 6, TriggerLeaderRejoined: 7,
	TriggerMemberRejoined: 8, TriggerUnknown: 9,
}

func better(a, b trigger) bool {
	if !a.at.Equal(b.at) {
		return a.at.Before(b.at)
	}
	if triggerRank[a.kind] != triggerRank[b.kind] {
		return triggerRank[a.kind] < triggerRank[b.kind]
	}
	return a.member < b.member
}

// resolveTrigger picks the earliest cause of the rebalance that formed gen.
// The boolean is set when the start is only an upper bound.
func (g *group) resolveTrigger(gen *generation) (trigger, bool) {
	prev := gen.prev
	if prev == nil && gen.num > 1 {
		at := gen.joinEnd
		for _, m := range gen.members {
			if m.joinSeen {
				at = earliest(at, m.joinAt())
			}
		}
		return trigger{kind: TriggerUnknown, at: at, reason: "kproxy did not see the group before this rebalance"}, true
	}
	var floor time.Time
	if prev != nil {
		floor = prev.joinEnd
	}
	var best *trigger
	consider := func(t trigger) {
		if t.at.IsZero() || t.at.Before(floor) || t.at.After(gen.joinEnd) {
			return
		}
		if best == nil || better(t, *best) {
			best = &t
		}
	}
	for _, c := range g.causes {
		// A new member's first attempt counts through its join below,
		// unless that join has not reached us yet.
		if m := gen.members[c.member]; c.kind != TriggerMemberJoined || m != nil && !m.joinSeen {
			consider(c.trigger)
		}
	}
	for _, id := range gen.memberIDs() {
		if m := gen.members[id]; m.joinSeen {
			consider(g.joinCause(gen, m))
		}
	}
	for _, d := range gen.departed {
		if d.how == DepartSessionTimeout {
			consider(trigger{kind: TriggerSessionTimeout, member: d.member, reason: d.reason, at: d.at})
		}
	}
	if best != nil && (gen.evidenceAt.IsZero() || !best.at.After(gen.evidenceAt)) {
		return *best, false
	}
	if !gen.evidenceAt.IsZero() {
		return trigger{kind: TriggerUnknown, at: gen.evidenceAt,
			reason: "its cause was not observed; the first REBALANCE_IN_PROGRESS answer bounds its start"}, true
	}
	return trigger{kind: TriggerUnknown, at: gen.joinEnd, reason: "its cause was not observed"}, true
}

// joinCause classifies a member's JoinGroup as a cause.
func (g *group) joinCause(gen *generation, m *member) trigger {
	t := trigger{member: m.id, reason: m.reason, at: m.joinAt()}
	prev := gen.prev
	var pm *member
	if prev != nil {
		pm = prev.members[m.id]
		if pm == nil && m.more().replaces != "" {
			pm = prev.members[m.more().replaces]
		}
	}
	switch {
	case m.status == statusJoined:
		t.kind = TriggerMemberJoined
	case pm != nil && prev.mode == ModeCooperative && (pm.revoked().count() > 0 || followUpJoin(pm, m)) && m.joinAt().After(pm.syncedAt()):
		t.kind = TriggerFollowUp
	case pm != nil && probingJoin(pm, m):
		t.kind = TriggerProbingRebalance
	case pm != nil && pm.who.subscription != nil && m.who.subscription != nil && !slices.Equal(pm.who.subscription, m.who.subscription):
		t.kind = TriggerSubscriptionChanged
		if t.reason == "" {
			t.reason = fmt.Sprintf("%v → %v", pm.who.subscription, m.who.subscription)
		}
	case pm != nil && prev.leader == m.id:
		t.kind = TriggerLeaderRejoined
	default:
		t.kind = TriggerMemberRejoined
	}
	return t
}

// consumeCauses drops the causes up to t: they belong to a formed
// generation. Their array goes too when none is left, as it mostly is
// (it is as long as the most causes a rebalance of the group had), and
// otherwise keeps no dropped cause's strings.
func (g *group) consumeCauses(t time.Time) {
	g.causes = slices.DeleteFunc(g.causes, func(c cause) bool { return !c.at.After(t) })
	if len(g.causes) == 0 {
		g.causes = nil
	}
}
