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
	if latest := next.prev; latest != nil {
		for _, id := range sortedKeys(latest.members) {
			lm := g.live[id]
			if !latest.active(id) || lm == nil || lm.gone || lm.sessionTimeout <= 0 || lm.lastAlive.IsZero() {
				continue
			}
			if exp := lm.lastAlive.Add(lm.sessionTimeout); !exp.After(at) {
				t := trigger{kind: TriggerSessionTimeout, member: id, reason: expiryReason(lm), at: exp}
				if best == nil || better(t, *best) {
					best = &t
				}
			}
		}
	}
	if best == nil {
		reason := "not observed yet"
		if next.evidenceAt.Equal(at) {
			reason = "not observed yet; first sign: REBALANCE_IN_PROGRESS"
		}
		return trigger{kind: TriggerUnknown, at: at, reason: reason}, true
	}
	return *best, false
}

func expiryReason(lm *liveMember) string {
	return fmt.Sprintf("no heartbeat since %s UTC, session timeout %s", lm.lastAlive.UTC().Format("15:04:05.000"), human(lm.sessionTimeout))
}

// triggerRank orders causes found at the same instant: the one that can
// start a rebalance by itself first.
var triggerRank = map[string]int{
	TriggerMemberLeft: 0, TriggerSessionTimeout: 1, TriggerMemberFenced: 2, TriggerMemberJoined: 3,
	TriggerSubscriptionChanged: 4, TriggerFollowUp: 5, TriggerLeaderRejoined: 6, TriggerMemberRejoined: 7,
	TriggerUnknown: 8,
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
	next.start, next.announced, next.told = at, true, next.trigger
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
		for _, id := range sortedKeys(prev.members) {
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
	case latest != nil && num > latest.num+1:
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
	for _, id := range sortedKeys(gen.members) {
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
	for _, id := range sortedKeys(gen.members) {
		m := gen.members[id]
		if m.joinSeen {
			m.status = g.joinStatus(gen, m)
			gen.rebalanceTimeout = max(gen.rebalanceTimeout, m.rebalanceTimeout)
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
	for _, id := range sortedKeys(gen.members) {
		if !gen.members[id].joinSeen {
			unobserved = append(unobserved, id)
		}
	}
	if len(unobserved) > 0 {
		gen.note("unobservedMembers", fmt.Sprintf("%s listed by the leader but never seen through this kproxy: their timings are unknown", listNames(unobserved, 5)))
	}
	if !gen.listSeen {
		gen.note("members", fmt.Sprintf("the leader's JoinGroup response, the only one listing every member, was not seen: %d member(s) seen joining through this kproxy", gen.joined))
	}
	switch {
	case !gen.announced:
		g.announce(gen)
	case gen.told.kind != gen.trigger.kind || gen.told.member != gen.trigger.member:
		g.emit(gen.trigger.at, KindTrigger, gen.num, gen.trigger.member,
			fmt.Sprintf("gen %d trigger: %s", gen.num, g.triggerText(gen, gen.trigger)), triggerFields(gen.trigger))
	}
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
		g.emit(gen.joinEnd, KindUnsettled, gen.num, "", gen.unsettled, map[string]any{"chain": gen.chain})
	}
}

// joinStatus says whether m is new to the group, rejoined, or a static
// member that came back under a new member id.
func (g *group) joinStatus(gen *generation, m *member) string {
	prev := gen.prev
	if prev == nil && gen.num == 1 {
		return "joined" // the group's first generation: everyone is new
	}
	if prev != nil && prev.members[m.id] != nil {
		return "rejoined"
	}
	if m.instanceID != "" && prev != nil {
		for _, id := range sortedKeys(prev.members) {
			if pm := prev.members[id]; pm.instanceID == m.instanceID && prev.active(id) {
				m.replaces = id
				return "replaced"
			}
		}
	}
	if m.requestedID != "" && !m.retried {
		return "rejoined"
	}
	return "joined"
}

// departures lists the members of the previous generation missing from gen.
func (g *group) departures(gen *generation) {
	prev := gen.prev
	if prev == nil {
		return
	}
	replaced := map[string]bool{}
	for _, m := range gen.members {
		if m.replaces != "" {
			replaced[m.replaces] = true
		}
	}
	var unseen []string
	for _, id := range sortedKeys(prev.members) {
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
// its session timeout), or dropped at the end of the join phase.
func (g *group) classifyDeparture(gen *generation, pm *member) departure {
	d := departure{member: pm.id, instanceID: pm.instanceID, lost: pm.resolved().clone()}
	for _, c := range g.causes {
		if c.member == pm.id && (c.kind == TriggerMemberLeft || c.kind == TriggerSessionTimeout) {
			d.how, d.at, d.reason = DepartLeft, c.at, c.reason
			if c.kind == TriggerSessionTimeout {
				d.how = DepartSessionTimeout
			}
			return d
		}
	}
	lm := g.live[pm.id]
	if lm != nil && lm.sessionTimeout > 0 && !lm.lastAlive.IsZero() {
		if exp := lm.lastAlive.Add(lm.sessionTimeout); !exp.After(gen.joinEnd) {
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

// resolveTrigger picks the earliest cause of the rebalance that formed gen.
// The boolean is set when the start is only an upper bound.
func (g *group) resolveTrigger(gen *generation) (trigger, bool) {
	prev := gen.prev
	if prev == nil && gen.num > 1 {
		at := gen.joinEnd
		for _, m := range gen.members {
			if m.joinSeen {
				at = earliest(at, m.joinAt)
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
		if c.kind != TriggerMemberJoined { // a new member's first attempt counts through its join below
			consider(c.trigger)
		}
	}
	for _, id := range sortedKeys(gen.members) {
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
	t := trigger{member: m.id, reason: m.reason, at: m.joinAt}
	prev := gen.prev
	var pm *member
	if prev != nil {
		pm = prev.members[m.id]
		if pm == nil && m.replaces != "" {
			pm = prev.members[m.replaces]
		}
	}
	switch {
	case m.status == "joined":
		t.kind = TriggerMemberJoined
	case pm != nil && prev.mode == ModeCooperative && pm.revoked.count() > 0 && m.joinAt.After(pm.syncedAt):
		t.kind = TriggerFollowUp
	case pm != nil && pm.subscription != nil && m.subscription != nil && !slices.Equal(pm.subscription, m.subscription):
		t.kind = TriggerSubscriptionChanged
		if t.reason == "" {
			t.reason = fmt.Sprintf("%v → %v", pm.subscription, m.subscription)
		}
	case pm != nil && prev.leader == m.id:
		t.kind = TriggerLeaderRejoined
	default:
		t.kind = TriggerMemberRejoined
	}
	return t
}

// consumeCauses drops the causes up to t: they belong to a formed
// generation.
func (g *group) consumeCauses(t time.Time) {
	kept := g.causes[:0]
	for _, c := range g.causes {
		if c.at.After(t) {
			kept = append(kept, c)
		}
	}
	g.causes = kept
}

// leaderChange explains a new leader.
func (g *group) leaderChange(gen *generation) {
	prev := gen.prev
	if prev == nil || prev.leader == "" || gen.leader == "" || prev.leader == gen.leader {
		return
	}
	gen.prevLeader = prev.leader
	if d := gen.departure(prev.leader); d != nil {
		gen.leaderReason = map[string]string{
			DepartLeft:           "the previous leader left",
			DepartSessionTimeout: "the previous leader's session timed out",
			DepartDropped:        "the previous leader did not rejoin in time",
		}[d.how]
		return
	}
	for _, m := range gen.members {
		if m.replaces == prev.leader {
			gen.leaderReason = "the previous leader restarted as a static member with a new member id"
			return
		}
	}
	if gen.members[prev.leader] != nil {
		gen.leaderReason = "the coordinator elected another member"
		return
	}
	gen.leaderReason = "the previous leader is no longer a member"
}

// joinOrder is the members seen joining, by arrival.
func joinOrder(gen *generation) []*member {
	var ms []*member
	for _, id := range sortedKeys(gen.members) {
		if m := gen.members[id]; m.joinSeen {
			ms = append(ms, m)
		}
	}
	slices.SortStableFunc(ms, func(a, b *member) int { return a.joinAt.Compare(b.joinAt) })
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
// Config.MaxGenerations. The first generation kept forgets its predecessor
// so that dropped generations can be collected.
func (g *group) keep(gen *generation) {
	g.gens = append(g.gens, gen)
	g.byNum[gen.num] = gen
	g.errSeen = nil
	if n := len(g.gens) - g.e.cfg.MaxGenerations; n > 0 {
		for _, old := range g.gens[:n] {
			if g.byNum[old.num] == old {
				delete(g.byNum, old.num)
			}
		}
		g.dropped += n
		g.gens = append(g.gens[:0:0], g.gens[n:]...)
		g.gens[0].prev = nil
	}
}
