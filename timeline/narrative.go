package timeline

import (
	"fmt"
	"strings"
)

// who names a member with its client id and address when known:
// "consumer-B-1f2e (client consumer-B 127.0.0.1:50412)".
func (g *group) who(id string) string {
	var client, addr string
	if lm := g.live[id]; lm != nil {
		client, addr = lm.clientID, lm.clientAddr
	} else if g.consumer != nil && g.consumer.members[id] != nil {
		client, addr = g.consumer.members[id].clientID, g.consumer.members[id].clientAddr
	}
	if client == "" && addr == "" {
		return id
	}
	return fmt.Sprintf("%s (client %s)", id, strings.TrimSpace(client+" "+addr))
}

// triggerText is the human form of a trigger.
func (g *group) triggerText(gen *generation, t trigger) string {
	var s string
	switch t.kind {
	case TriggerMemberJoined:
		s = "member joined " + g.who(t.member)
	case TriggerMemberLeft:
		s = "member left " + g.who(t.member)
	case TriggerSessionTimeout:
		return fmt.Sprintf("session of %s timed out (%s; inferred)", t.member, t.reason)
	case TriggerSubscriptionChanged:
		s = "subscription of " + t.member + " changed"
	case TriggerLeaderRejoined:
		s = "leader " + t.member + " rejoined (leaders do so when topic metadata or partition counts change)"
	case TriggerMemberRejoined:
		s = "member " + t.member + " rejoined"
	case TriggerMemberFenced:
		s = "member " + t.member + " was fenced"
	case TriggerFollowUp:
		s = fmt.Sprintf("cooperative follow-up: %s rejoined", t.member)
		if p := gen.prev; p != nil && p.members[t.member] != nil {
			s = fmt.Sprintf("cooperative follow-up of gen %d: %s revoked %s and rejoined", p.num, t.member, p.members[t.member].revoked())
		}
	case TriggerProbingRebalance:
		s = "probing rebalance (KIP-441): " + t.member + " rejoined as its assignment scheduled, to check whether warm-up tasks caught up"
	default:
		return "cause not observed (" + t.reason + ")"
	}
	if t.reason != "" {
		s += fmt.Sprintf(": %q", t.reason)
	}
	return s
}

func triggerFields(t trigger) map[string]any {
	return map[string]any{"trigger": t.kind, "trigger_member": t.member, "reason": t.reason}
}

// announce emits the start of a rebalance.
func (g *group) announce(gen *generation) {
	gen.announced = true
	gen.toldKind, gen.toldMember = gen.trigger.kind, gen.trigger.member
	var head string
	switch {
	case g.consumer != nil && gen.prev == nil && gen.num == 1:
		head = "group formed: epoch 1 started"
	case g.consumer != nil && gen.prev != nil:
		head = fmt.Sprintf("group epoch %d→%d started", gen.prev.num, gen.num)
	case g.consumer != nil:
		head = fmt.Sprintf("group epoch %d started (first epoch seen)", gen.num)
	case gen.prev != nil:
		head = fmt.Sprintf("rebalance gen %d→%d started", gen.prev.num, gen.num)
	case gen.num == 1:
		head = "group formed: gen 1 started"
	default:
		head = "rebalance started (first generation seen)"
	}
	f := triggerFields(gen.trigger)
	if gen.startBound {
		f["start_is_upper_bound"] = true
	}
	g.emit(gen.start, KindRebalanceStarted, gen.num, gen.trigger.member,
		head+": "+g.triggerText(gen, gen.trigger), f)
}

// tellTrigger announces gen's rebalance, or, when it was announced with a
// trigger the joins have since bettered, tells the better one; label names
// the generation ("gen", or "group epoch" for KIP-848).
func (g *group) tellTrigger(gen *generation, label string) {
	switch {
	case !gen.announced:
		g.announce(gen)
	case gen.toldKind != gen.trigger.kind || gen.toldMember != gen.trigger.member:
		g.emit(gen.trigger.at, KindTrigger, gen.num, gen.trigger.member,
			fmt.Sprintf("%s %d trigger: %s", label, gen.num, g.triggerText(gen, gen.trigger)), triggerFields(gen.trigger))
	}
}

// emitJoin tells one member's JoinGroup: when it arrived after the start
// and how long it was held.
func (g *group) emitJoin(gen *generation, m *member) {
	verb := "joined"
	if m.status == statusRejoined || m.status == statusReplaced {
		verb = "rejoined"
	}
	// One builder for the text: an entry for every member of every
	// rebalance.
	var b strings.Builder
	b.Grow(128 + len(m.id) + len(m.who.clientID) + len(m.who.clientAddr))
	b.WriteString(m.id)
	b.WriteByte(' ')
	b.WriteString(verb)
	if !gen.start.IsZero() && m.joinAt().After(gen.start) {
		b.WriteString(" after ")
		b.WriteString(human(m.joinAt().Sub(gen.start)))
	}
	wait := m.joinRespAt().Sub(m.joinAt())
	b.WriteString(", waited ")
	b.WriteString(human(wait))
	if gen.slowest == m.id {
		b.WriteString(" (slowest; group waited for it)")
	}
	if m.retried {
		b.WriteString(" [MEMBER_ID_REQUIRED and retry: one join]")
	}
	if m.more().replaces != "" {
		b.WriteString(" [static member, replaces " + m.more().replaces + "]")
	}
	if c := strings.TrimSpace(m.who.clientID + " " + m.who.clientAddr); c != "" {
		b.WriteString(" (client ")
		b.WriteString(c)
		b.WriteByte(')')
	}
	text := b.String()
	g.emit(m.joinAt(), KindMemberJoined, gen.num, m.id, text, map[string]any{
		"status": m.status.String(), "client_id": m.who.clientID, "client_addr": m.who.clientAddr, "instance_id": m.who.instanceID,
		"join_wait_ms": ms(wait), "slowest": gen.slowest == m.id, "reason": m.reason,
	})
}

// emitDeparture tells a member missing from the new generation. LeaveGroup
// was told when it happened.
func (g *group) emitDeparture(gen *generation, d departure) {
	if d.how == DepartLeft {
		return
	}
	if lm := g.live[d.member]; d.how == DepartSessionTimeout && lm != nil && lm.expired {
		return // already told by the sweep
	}
	text := fmt.Sprintf("%s dropped: ", d.member)
	switch d.how {
	case DepartSessionTimeout:
		text += "session timed out (" + d.reason + ")"
	default:
		text += d.reason
	}
	if d.lost.count() > 0 {
		text += "; its partitions " + d.lost.String() + " move"
	}
	g.emit(d.at, KindMemberDropped, gen.num, d.member, text, map[string]any{"how": d.how, "reason": d.reason})
}

// emitLeader tells the end of the join phase: leader, assignor, members.
func (g *group) emitLeader(gen *generation) {
	leader := gen.leader
	if leader == "" {
		leader = "unknown"
	}
	text := fmt.Sprintf("gen %d leader %s", gen.num, leader)
	switch {
	case gen.leaderChange != nil:
		text += fmt.Sprintf(" (was %s: %s)", gen.leaderChange.prev, gen.leaderChange.reason)
	case gen.prev != nil && gen.prev.leader != "" && gen.prev.leader == gen.leader:
		text += " (unchanged)"
	}
	text += ", protocol " + protocolText(gen)
	n := int(gen.joined)
	if gen.listSeen {
		n = int(gen.listSize)
	}
	text += fmt.Sprintf(", %d member%s", n, plural(n))
	if !gen.listSeen {
		text += " seen (member list not seen)"
	}
	prevLeader := ""
	if gen.leaderChange != nil {
		prevLeader = gen.leaderChange.prev
	}
	g.emit(gen.joinEnd, KindLeader, gen.num, gen.leader, text, map[string]any{
		"protocol_type": gen.protocolType, "protocol": gen.protocol, "mode": gen.mode, "members": n,
		"previous_leader": prevLeader,
	})
}

func protocolText(gen *generation) string {
	p := gen.protocol
	if p == "" {
		p = "unknown"
	}
	if gen.protocolType != "" && gen.protocolType != "consumer" {
		p = gen.protocolType + "/" + p
	}
	return fmt.Sprintf("%s (%s)", p, gen.mode)
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// listNames joins up to n names, then says how many more.
func listNames(names []string, n int) string {
	if len(names) <= n {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:n], ", "), len(names)-n)
}
