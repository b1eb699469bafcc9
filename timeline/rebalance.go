package timeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// evidence records that the coordinator answered REBALANCE_IN_PROGRESS to a
// member of generation num: the group had left Stable by the response.
func (g *group) evidence(ev *decode.Event, num int32) {
	if latest := g.latest(); latest != nil && num < latest.num {
		return // a member behind the times; nothing new about the group
	}
	at := ev.RespondedAt
	if at.IsZero() {
		at = ev.At
	}
	g.detect(at, true)
}

// detect returns the rebalance in progress, creating and announcing it with
// the best trigger known so far. evidence says at is a
// REBALANCE_IN_PROGRESS answer rather than a cause.
func (g *group) detect(at time.Time, evidence bool) *generation {
	if next := g.next; next != nil {
		if evidence {
			next.evidenceAt = earliest(next.evidenceAt, at)
		}
		return next
	}
	latest := g.latest()
	if latest != nil && latest.phase < phaseStable {
		g.supersede(latest, at)
	}
	next := newGeneration()
	next.prev = latest
	if latest != nil {
		next.num = latest.num + 1
		next.protocolType, next.protocol = latest.protocolType, latest.protocol
	}
	if evidence {
		next.evidenceAt = at
	}
	g.next = next
	next.trigger, next.startBound = g.provisional(next, at)
	next.start = next.trigger.at
	g.announce(next)
	g.attachRecent(next)
	return next
}

// form returns the generation num whose JoinGroup responses are arriving,
// adopting the rebalance detected earlier, if any.
func (g *group) form(num int32, at time.Time) *generation {
	latest := g.latest()
	gen := g.next
	g.next = nil
	if gen != nil && gen.empty != nil {
		if latest != nil && num > latest.num+1 {
			g.materializeEmpty(gen)
			latest = gen
		}
		gen = nil
	}
	if latest != nil && latest.phase < phaseStable {
		g.supersede(latest, at)
	}
	if gen == nil {
		gen = newGeneration()
	}
	gen.num, gen.phase, gen.prev = num, phaseJoining, latest
	switch {
	case latest == nil && num > 1:
		gen.note("previousGeneration", fmt.Sprintf("kproxy first saw this group forming generation %d: generation %d (its members and assignment) was not observed, so the trigger and what moved are unknown", num, num-1))
	case latest != nil && num > latest.num+1 && !g.convertedBefore(latest, num):
		why := fmt.Sprintf("generations %d to %d were not observed", latest.num+1, num-1)
		gen.note("generations", why)
		g.emit(at, KindPartial, num, "", why, nil)
	}
	g.keep(gen)
	return gen
}

// midway records a generation first seen after its rebalance.
func (g *group) midway(num int32, ev *decode.Event) *generation {
	latest := g.latest()
	if latest != nil && latest.phase < phaseStable {
		g.supersede(latest, ev.At)
	}
	if g.next != nil {
		g.next = nil
	}
	gen := newGeneration()
	gen.num, gen.phase, gen.midway, gen.prev = num, phaseStable, true, latest
	gen.protocolType = g.protocolType
	gen.trigger = trigger{kind: TriggerUnknown, reason: "the rebalance that formed this generation was not observed"}
	why := fmt.Sprintf("generation %d was first seen after its rebalance (kproxy started mid-generation or missed its JoinGroup responses): its trigger, joins, leader and assignment are unknown unless its members sync again", num)
	gen.note("rebalance", why)
	g.keep(gen)
	g.emit(ev.At, KindPartial, num, "", why, nil)
	return gen
}

// supersede closes a generation that never became stable.
func (g *group) supersede(gen *generation, at time.Time) {
	if gen.phase == phaseJoining {
		g.finishJoin(gen)
	}
	if gen.phase != phaseSyncing {
		return
	}
	gen.phase = phaseSuperseded
	g.computeDiff(gen)
	var waiting []string
	for _, id := range gen.memberIDs() {
		if m := gen.members[id]; m.joinSeen && !m.synced {
			waiting = append(waiting, id)
		}
	}
	text := fmt.Sprintf("gen %d superseded before it was stable", gen.num)
	if len(waiting) > 0 {
		text += fmt.Sprintf(": %s had not received an assignment", listNames(waiting, 5))
	}
	g.emit(at, KindSuperseded, gen.num, "", text, map[string]any{"waiting": waiting})
}

// finishJoin closes the join phase of gen: who joined and who did not, the
// trigger, the leader, and the entries that tell it.
func (g *group) finishJoin(gen *generation) {
	if gen.phase != phaseJoining {
		return
	}
	gen.phase = phaseSyncing
	for _, id := range gen.memberIDs() {
		m := gen.members[id]
		if m.joinSeen {
			m.status = g.joinStatus(gen, m)
			gen.rebalanceTimeout = max(gen.rebalanceTimeout, m.who.rebalanceTimeout)
		}
	}
	if s := slowest(gen); s != nil {
		gen.slowest = s.id
	}
	g.departures(gen)
	gen.mode = modeOf(gen)
	gen.trigger, gen.startBound = g.resolveTrigger(gen)
	gen.start = gen.trigger.at
	g.consumeCauses(gen.joinEnd)
	g.linkFollowUp(gen)
	g.leaderChange(gen)
	if prev := gen.prev; prev != nil && prev.midway {
		gen.note("previousAssignment", fmt.Sprintf("generation %d was observed mid-generation: what its members owned is unknown, so added and revoked are not computed for them", prev.num))
	}
	var unobserved []string
	for _, id := range gen.memberIDs() {
		m := gen.members[id]
		switch {
		case m.joinSeen:
		case g.live[id] != nil || g.pendingIDs[id] != nil:
			// Seen before: its JoinGroup response is still on its way.
			gen.await(m)
		default:
			unobserved = append(unobserved, id)
		}
	}
	if len(unobserved) > 0 {
		gen.note("unobservedMembers", fmt.Sprintf("%s listed by the leader but never seen through this kproxy: their timings are unknown", listNames(unobserved, 5)))
	}
	if !gen.listSeen {
		gen.note("members", fmt.Sprintf("the leader's JoinGroup response, the only one listing every member, was not seen: %d member(s) seen joining through this kproxy", gen.joined))
	}
	g.tellTrigger(gen, "gen")
	g.refilterCommits(gen)
	g.attachRecent(gen)
	for _, m := range joinOrder(gen) {
		g.emitJoin(gen, m)
	}
	for _, d := range gen.departed {
		g.emitDeparture(gen, d)
	}
	g.emitLeader(gen)
	g.countRebalance(gen)
	if gen.unsettled != "" {
		g.emit(gen.joinEnd, KindUnsettled, gen.num, "", gen.unsettled, map[string]any{"chain": int(gen.chain)})
	}
}

// joinOrder is the members seen joining, by arrival.
func joinOrder(gen *generation) []*member {
	var ms []*member
	for _, id := range gen.memberIDs() {
		if m := gen.members[id]; m.joinSeen {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b *member) int { return a.joinAt().Compare(b.joinAt()) })
	return ms
}

// slowest is the member whose JoinGroup arrived last, the one the group
// waited for, or nil with fewer than two members seen.
func slowest(gen *generation) *member {
	ms := joinOrder(gen)
	if len(ms) < 2 {
		return nil
	}
	return ms[len(ms)-1]
}

// keep records a new generation, dropping the oldest beyond
// Config.MaxGenerations (see dropOldest).
func (g *group) keep(gen *generation) {
	g.gens = append(g.gens, gen)
	g.byNum[gen.num] = gen
	g.serials++
	gen.serial = g.serials
	g.errSeen = nil
	g.dropOldest(len(g.gens) - g.e.cfg.MaxGenerations)
}
