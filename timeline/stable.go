package timeline

import (
	"fmt"
	"strings"
	"time"
)

// checkStable makes gen stable once every member seen joining it has its
// SyncGroup response. Members kproxy never saw (their traffic does not pass
// through it) cannot be waited for; the report says so.
func (g *group) checkStable(gen *generation) {
	if gen.phase != phaseSyncing || gen.waiting > 0 {
		return
	}
	gen.phase = phaseStable
	g.blind = false // the coordinator's answers told who is in
	for _, m := range gen.members {
		if m.joinSeen {
			gen.stableAt = later(gen.stableAt, m.syncedAt())
		}
	}
	g.computeDiff(gen)
	g.emitPlan(gen)
	g.emitStable(gen)
}

// before is what m owned before gen: nothing for a new member, its
// assignment in the previous generation, what a cooperative member said it
// still owned, or nil (unknown).
func (g *group) before(gen *generation, m *member) partitions {
	if m.status == statusJoined {
		return partitions{}
	}
	if m.more().replaces != "" {
		if om := gen.members[m.more().replaces]; om != nil {
			return om.resolved() // a static member replaced within this generation
		}
	}
	if prev := gen.prev; prev != nil {
		id := m.id
		if m.more().replaces != "" {
			id = m.more().replaces
		}
		if pm := prev.members[id]; pm != nil && pm.resolved() != nil {
			return pm.resolved()
		}
	}
	if m.owned != nil && gen.mode == ModeCooperative {
		return m.owned
	}
	return nil
}

// computeDiff records, per member, what it owned before, from which what
// was added, revoked and kept is derived (member.moves), and the
// generation's unassigned partitions and members without partitions.
func (g *group) computeDiff(gen *generation) {
	var known, assigned []partitions
	complete := true
	gen.nothing = nil
	topics := map[string]bool{}
	for _, id := range gen.memberIDs() {
		m := gen.members[id]
		if m.more().replacedBy != "" {
			continue
		}
		for _, t := range m.who.subscription {
			topics[t] = true
		}
		cur := m.resolved()
		if cur == nil {
			complete = false
			m.setBefore(nil)
			continue
		}
		assigned = append(assigned, cur)
		if cur.count() == 0 {
			gen.nothing = append(gen.nothing, id)
		}
		prev := g.before(gen, m)
		m.setBefore(prev)
		if prev == nil {
			continue
		}
		known = append(known, prev)
	}
	if prev := gen.prev; prev != nil {
		for _, pm := range prev.members {
			if r := pm.resolved(); r != nil {
				known = append(known, r)
			}
		}
	}
	for _, t := range sortedKeys(topics) {
		if n := g.e.topics.count(t); n > 0 {
			all := make([]int32, n)
			for i := range all {
				all[i] = int32(i)
			}
			known = append(known, partitions{{topic: t, parts: all}})
		}
	}
	gen.index.assignmentsChanged()
	if !complete || len(assigned) == 0 && gen.phase != phaseEmpty {
		gen.unassigned = nil
		return
	}
	have := union(assigned)
	gen.unassigned, _, _ = diff(have, union(append(known, assigned...)))
}

// emitPlan tells the assignment and what moved, for up to ten members.
func (g *group) emitPlan(gen *generation) {
	at := gen.planAt
	if at.IsZero() {
		at = gen.stableAt
	}
	var parts []string
	shown, moved := 0, 0
	for _, id := range gen.memberIDs() {
		m := gen.members[id]
		if m.more().replacedBy != "" {
			continue
		}
		added, revoked, _ := m.moves()
		moved += added.count() + revoked.count()
		if shown == 10 {
			continue
		}
		shown++
		cur := m.resolved()
		parts = append(parts, id+" "+orNone(cur)+change("-", revoked, cur)+change("+", added, cur))
	}
	if n := len(gen.members) - shown; n > 0 && shown == 10 {
		parts = append(parts, fmt.Sprintf("… %d more", n))
	}
	if gen.unassigned.count() > 0 {
		parts = append(parts, "unassigned "+gen.unassigned.String())
	}
	text := fmt.Sprintf("gen %d plan %s", gen.num, strings.Join(parts, "  "))
	g.emit(at, KindPlan, gen.num, gen.planBy, text, map[string]any{
		"moved": moved, "unassigned": gen.unassigned.count(), "members_with_nothing": len(gen.nothing)})
}

// emitStable tells that every member has its assignment, with the
// generation's summary block as Detail.
func (g *group) emitStable(gen *generation) {
	gr := g.generationReport(gen, liveMemberLines)
	text := fmt.Sprintf("gen %d stable: %s", gen.num, durationText(gr))
	if epochMode(gen.mode) {
		text = fmt.Sprintf("group epoch %d reconciled: %s", gen.num, durationText(gr))
	}
	e := Entry{At: gen.stableAt, Group: g.id, Kind: KindStable, Generation: gen.num, Text: text,
		Detail: summaryLines(gr, liveMemberLines, g.e.cfg.Location), Fields: map[string]any{
			"stop_the_world_ms": valueOr(gr.StopTheWorldMs), "join_ms": valueOr(gr.JoinMs), "sync_ms": valueOr(gr.SyncMs),
			"trigger": gr.Trigger.Kind, "leader": gr.Leader, "members": len(gr.Members)},
		Stable: &StableFacts{Trigger: gr.Trigger.Kind, StopTheWorld: durationOr(gr.StopTheWorldMs), Members: len(gr.Members)}}
	g.e.emit(e)
}

// liveMemberLines caps the member lines of a live summary block; the text
// report lists them all.
const liveMemberLines = 20

func valueOr(p *float64) float64 {
	if p == nil {
		return -1
	}
	return *p
}

// durationOr is milliseconds p as a duration, or -1 when p is nil
// (unknown).
func durationOr(p *float64) time.Duration {
	if p == nil {
		return -1
	}
	return time.Duration(*p * float64(time.Millisecond))
}

// change renders a diff next to an assignment: "(-2)" when it concerns the
// one topic the assignment shows, "(-t[2])" otherwise, "" when empty.
func change(sign string, d, cur partitions) string {
	if d.count() == 0 {
		return ""
	}
	if t, ok := d.soleTopic(); ok {
		if ct, ok := cur.soleTopic(); ok && ct == t {
			var b strings.Builder
			writeRuns(&b, d.of(t))
			return " (" + sign + b.String() + ")"
		}
	}
	return " (" + sign + d.String() + ")"
}
