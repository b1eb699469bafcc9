package timeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Online migration between the classic protocol and KIP-848's consumer
// protocol (Kafka 4's group.consumer.migration.policy, bidirectional by
// default).
//
// Upgrade: the first ConsumerGroupHeartbeat join into a classic group
// converts it to a consumer group at once. The classic members still in
// it keep their JoinGroup, SyncGroup and Heartbeat, but the broker drives
// them by the consumer group's epochs: a JoinGroup answers with the
// member's epoch as generation, a SyncGroup with the assignment the
// broker computed, and a Heartbeat REBALANCE_IN_PROGRESS when the member
// must rejoin to reconcile. The migration is complete when the last
// classic member is gone.
//
// Downgrade: a classic member's JoinGroup into a consumer group joins it
// as a classic member; the group converts back to a classic group when
// its last consumer-protocol member is gone, and the classic members then
// rebalance as a classic group (leader, plan, SyncGroup). A JoinGroup
// into a consumer group with no member converts it at once.
//
// The engine keeps every member of a consumer group, of either protocol,
// as a cmember; after a downgrade, the group's consumer-protocol history
// is kept aside (group.pastConsumer) and the classic engine tells what
// follows.

// Member protocols, as MemberReport.Protocol names them.
const (
	ProtocolClassic  = "classic"  // JoinGroup, SyncGroup, Heartbeat
	ProtocolConsumer = "consumer" // KIP-848 ConsumerGroupHeartbeat
	ProtocolShare    = "share"    // KIP-932 ShareGroupHeartbeat
)

// Migration directions, as MigrationReport.Direction names them.
const (
	MigrationUpgrade   = "upgrade"   // classic to consumer
	MigrationDowngrade = "downgrade" // consumer to classic
)

// migration is one online conversion of a group between the protocols.
type migration struct {
	direction string
	// startedAt is when the first member of the new protocol joined,
	// startedBy that member.
	startedAt time.Time
	startedBy string
	// convertedAt is when the group changed type, at generation (group
	// epoch) convertedGen, by member convertedBy (the joining member of
	// an upgrade, the last consumer-protocol member of a downgrade);
	// zero while a downgrade waits for it.
	convertedAt  time.Time
	convertedGen int32
	convertedBy  string
	// completedAt is when the last member of the old protocol was gone,
	// lastMember that member; zero while some remain.
	completedAt time.Time
	lastMember  string
}

// openMigration is the migration under way, nil if none.
func (g *group) openMigration() *migration {
	if n := len(g.migrations); n > 0 && g.migrations[n-1].completedAt.IsZero() {
		return g.migrations[n-1]
	}
	return nil
}

// classicHistory reports whether the group ran the classic protocol
// before its first ConsumerGroupHeartbeat: a classic generation formed,
// or one under way.
func (g *group) classicHistory() bool {
	if g.consumer != nil {
		return false
	}
	if latest := g.latest(); latest != nil && !epochMode(latest.mode) {
		return true
	}
	return g.next != nil
}

// startUpgrade tells the conversion of a classic group to a consumer group
// by the join ev of consumer-protocol member id, and takes the classic
// members still in the group into the consumer group's members.
func (g *group) startUpgrade(ev *decode.Event, id string) {
	cg := g.consumerState()
	from := int32(0)
	var classic []string
	if latest := g.latest(); latest != nil {
		from = latest.num
		cg.epoch = latest.num // the consumer group's epochs continue the generations
		for _, mid := range latest.memberIDs() {
			if !latest.active(mid) || cg.members[mid] != nil {
				continue
			}
			m := latest.members[mid]
			cm := &cmember{id: mid, protocol: ProtocolClassic, instanceID: m.who.instanceID, clientID: m.who.clientID,
				clientAddr: m.who.clientAddr, rack: m.who.rack, subscription: m.who.subscription, epoch: latest.num,
				assigned: m.resolved().clone(), joinedAt: m.joinAt(), everActive: true}
			if cm.assigned == nil {
				cm.assigned = partitions{}
			}
			cg.members[mid] = cm
			lm := g.live[mid]
			if lm != nil {
				cm.lastAt = lm.lastAlive()
			}
			if lm != nil && lm.gone {
				// Gone before the conversion (its leave or timeout
				// started the rebalance the broker now completes as an
				// epoch): the epoch lists it as departed.
				g.classicGone(cm)
				continue
			}
			cm.active = true
			classic = append(classic, mid)
		}
	}
	mg := &migration{direction: MigrationUpgrade, startedAt: ev.At, startedBy: id, convertedAt: ev.At,
		convertedGen: from, convertedBy: id}
	g.migrations = append(g.migrations, mg)
	text := fmt.Sprintf("group converted from classic to consumer (online upgrade) at generation %d: %s joined with the consumer protocol", from, g.who(id))
	if len(classic) > 0 {
		text += fmt.Sprintf("; %d classic members remain (%s), driven by the group's epochs until they leave", len(classic), listNames(classic, 5))
	} else {
		mg.completedAt = ev.At
		text += "; no classic member remains"
	}
	g.emit(ev.At, KindMigration, from, id, text, map[string]any{"direction": MigrationUpgrade, "classic_members": len(classic)})
}

// classicGone records how classic member cm, gone before the group
// converted, left: its LeaveGroup or inferred session timeout among the
// causes not yet consumed.
func (g *group) classicGone(cm *cmember) {
	for _, c := range g.causes {
		switch {
		case c.member != cm.id:
		case c.kind == TriggerMemberLeft:
			cm.leftAt = c.at
		case c.kind == TriggerSessionTimeout:
			cm.timedOut, cm.expiry, cm.expiredAt = true, c.reason, c.at
		}
	}
}

// mixedExchange handles a classic member's JoinGroup, SyncGroup,
// Heartbeat or LeaveGroup in a consumer group.
func (g *group) mixedExchange(ev *decode.Event) {
	switch {
	case ev.JoinGroup != nil:
		g.mixedJoin(ev)
	case ev.SyncGroup != nil:
		g.mixedSync(ev)
	case ev.Heartbeat != nil:
		g.mixedHeartbeat(ev)
	case ev.LeaveGroup != nil:
		g.mixedLeave(ev)
	}
}

// classicMember is the cmember of classic member id, created for a new
// one, its client facts refreshed from ev.
func (g *group) classicMember(id string, ev *decode.Event) *cmember {
	cm := g.consumer.members[id]
	if cm == nil {
		cm = &cmember{id: id, protocol: ProtocolClassic}
		g.consumer.members[id] = cm
	}
	if ev.ClientID != "" {
		cm.clientID = ev.ClientID
	}
	if ev.ClientAddr != "" {
		cm.clientAddr = ev.ClientAddr
	}
	g.alive(id, ev)
	return cm
}

// mixedJoin: a classic member joins or rejoins the consumer group, at the
// generation its member epoch is.
func (g *group) mixedJoin(ev *decode.Event) {
	jg := ev.JoinGroup
	id := jg.MemberID
	if jg.AssignedMemberID != "" {
		id = jg.AssignedMemberID
	}
	if id == "" || !ev.Responded() {
		return
	}
	switch jg.ErrorCode {
	case 0:
	case errMemberIDRequired:
		return // KIP-394: its retry with this id is the join
	default:
		g.requestError(ev, "JoinGroup", id, jg.ErrorCode)
		return
	}
	cg := g.consumer
	cm := g.classicMember(id, ev)
	lm := g.member(id, ev)
	lm.setTimeouts(jg)
	if jg.InstanceID != "" {
		cm.instanceID, lm.instanceID = jg.InstanceID, jg.InstanceID
	}
	for _, p := range jg.Protocols {
		if p.Name == jg.ProtocolName && p.Subscription != nil {
			cm.subscription = slices.Compact(slices.Sorted(slices.Values(p.Subscription.Topics)))
		}
	}
	if jg.ProtocolName != "" {
		cm.assignor = jg.ProtocolName
	}
	if cm.active {
		g.classicRejoin(ev, cm)
	} else {
		cm.joinedAt = ev.At
		c := cause{trigger: trigger{kind: TriggerMemberJoined, member: id, reason: jg.Reason, at: ev.At},
			instanceID: cm.instanceID, clientID: cm.clientID, clientAddr: cm.clientAddr}
		if cm.everActive {
			c.kind = TriggerMemberRejoined
		}
		g.addCause(c)
		if g.openMigration() == nil && g.consumerMembers() > 0 {
			g.migrations = append(g.migrations, &migration{direction: MigrationDowngrade, startedAt: ev.At, startedBy: id})
			g.emit(ev.At, KindMigration, cg.epoch, id, fmt.Sprintf("%s joined the consumer group with the classic protocol (online downgrade started): the group converts to classic when its last consumer-protocol member leaves",
				g.who(id)), map[string]any{"direction": MigrationDowngrade})
		}
	}
	cm.lastAt, cm.active, cm.everActive = ev.At, true, true
	cm.timedOut, cm.expiry = false, ""
	if jg.Generation > cg.epoch {
		cg.epoch = jg.Generation
		g.formEpoch(jg.Generation, ev)
	}
}

// classicRejoin tells an active classic member's JoinGroup ev in a
// consumer group: the broker asked it to rejoin (a Heartbeat answered
// REBALANCE_IN_PROGRESS) to reconcile with a new epoch, which starts no
// group-wide rebalance, but an eager assignor's member gives up every
// partition when it rejoins and consumes nothing until its SyncGroup
// answer.
func (g *group) classicRejoin(ev *decode.Event, cm *cmember) {
	jg := ev.JoinGroup
	text := fmt.Sprintf("%s rejoined with the classic protocol to reconcile (epoch %d), JoinGroup held %s", g.who(cm.id), jg.Generation, human(ev.RespondedAt.Sub(ev.At)))
	if assignorModes[cm.assignor] == ModeEager && cm.assigned.count() > 0 {
		text += fmt.Sprintf("; its assignor %s is eager: it stopped consuming %s until its assignment", cm.assignor, g.e.topics.named(cm.assigned))
	}
	g.emit(ev.At, KindMemberJoined, jg.Generation, cm.id, text, map[string]any{"protocol": ProtocolClassic, "member_epoch": jg.Generation})
}

// mixedSync: the broker's answer to a classic member's SyncGroup is its
// assignment at its member epoch.
func (g *group) mixedSync(ev *decode.Event) {
	sg := ev.SyncGroup
	if !ev.Responded() {
		return
	}
	switch sg.ErrorCode {
	case 0:
	case errRebalanceInProgress:
		g.alive(sg.MemberID, ev)
		return // it rejoins to reconcile
	default:
		g.requestError(ev, "SyncGroup", sg.MemberID, sg.ErrorCode)
		return
	}
	cm := g.classicMember(sg.MemberID, ev)
	cm.lastAt, cm.active, cm.everActive = ev.At, true, true
	var assigned partitions
	if sg.Assignment != nil {
		assigned = fromTopicPartitions(sg.Assignment.Partitions)
	}
	g.memberStep(ev, cm, sg.Generation, assigned)
}

// mixedHeartbeat: a classic member's heartbeat keeps its session; the
// broker answers REBALANCE_IN_PROGRESS when it must rejoin to reconcile
// with a new epoch, which is no group-wide rebalance.
func (g *group) mixedHeartbeat(ev *decode.Event) {
	hb := ev.Heartbeat
	if !ev.Responded() || hb.MemberID == "" {
		return
	}
	switch hb.ErrorCode {
	case 0, errRebalanceInProgress:
		if cm := g.consumer.members[hb.MemberID]; cm != nil {
			cm.lastAt = ev.At
		}
		g.alive(hb.MemberID, ev)
	default:
		g.requestError(ev, "Heartbeat", hb.MemberID, hb.ErrorCode)
	}
}

// mixedLeave: classic members leave the consumer group.
func (g *group) mixedLeave(ev *decode.Event) {
	lg := ev.LeaveGroup
	for _, lv := range lg.Members {
		code := lg.MemberError(lv)
		id := lv.MemberID
		if id == "" && lv.InstanceID != "" {
			for mid, cm := range g.consumer.members {
				if cm.instanceID == lv.InstanceID && cm.active {
					id = mid
				}
			}
		}
		cm := g.consumer.members[id]
		if cm == nil {
			continue
		}
		if code != 0 {
			g.requestError(ev, "LeaveGroup", id, code)
			continue
		}
		if lm := g.live[id]; lm != nil {
			lm.gone = true
		}
		c := cause{instanceID: cm.instanceID, clientID: cm.clientID, clientAddr: cm.clientAddr,
			trigger: trigger{kind: TriggerMemberLeft, member: id, reason: lv.Reason, at: ev.At}}
		g.memberLeft(ev.At, cm, "left", c, -1)
	}
}

// memberProtocol is m's group protocol in gen (MemberReport.Protocol).
func memberProtocol(gen *generation, m *member) string {
	switch {
	case !epochMode(gen.mode):
		return ProtocolClassic
	case m.who.protocol != "":
		return m.who.protocol
	case gen.mode == ModeShare:
		return ProtocolShare
	}
	return ProtocolConsumer
}

// migrationsView is the group's migrations, typed (GroupView.Migrations).
func (g *group) migrationsView() []MigrationView {
	var out []MigrationView
	for _, mg := range g.migrations {
		out = append(out, MigrationView{Direction: mg.direction, Started: mg.startedAt, StartedBy: mg.startedBy,
			Converted: mg.convertedAt, Generation: mg.convertedGen, ConvertedBy: mg.convertedBy,
			Completed: mg.completedAt, LastMember: mg.lastMember})
	}
	return out
}

// consumerMembers counts the active consumer-protocol members.
func (g *group) consumerMembers() int {
	n := 0
	for _, cm := range g.consumer.members {
		if cm.active && cm.protocol != ProtocolClassic {
			n++
		}
	}
	return n
}

// classicMembers lists the active classic members, sorted.
func (g *group) classicMembers() []string {
	var ids []string
	for id, cm := range g.consumer.members {
		if cm.active && cm.protocol == ProtocolClassic {
			ids = append(ids, id)
		}
	}
	slices.Sort(ids)
	return ids
}

// checkMigration follows a migration under way after member id left the
// consumer group at at: an upgrade is complete once no classic member
// remains; a downgrade converts the group to classic once no
// consumer-protocol member remains.
func (g *group) checkMigration(at time.Time, id string) {
	mg := g.openMigration()
	if mg == nil || g.consumer == nil || g.consumer.share != nil {
		return
	}
	cg := g.consumer
	switch mg.direction {
	case MigrationUpgrade:
		if len(g.classicMembers()) > 0 {
			return
		}
		mg.completedAt, mg.lastMember = at, id
		g.emit(at, KindMigration, cg.epoch, id, fmt.Sprintf("online upgrade complete at epoch %d: the last classic member %s is gone, every member uses the consumer protocol",
			cg.epoch, id), map[string]any{"direction": MigrationUpgrade})
	case MigrationDowngrade:
		if g.consumerMembers() > 0 {
			return
		}
		remain := g.classicMembers()
		if len(remain) == 0 {
			// The classic members left before the last consumer one:
			// the group stays a consumer group.
			mg.completedAt, mg.lastMember = at, ""
			g.emit(at, KindMigration, cg.epoch, id, "online downgrade abandoned: its classic members left first", map[string]any{"direction": MigrationDowngrade})
			return
		}
		epoch := cg.epoch + g.unreconciledEpochs(id)
		text := fmt.Sprintf("group converted from consumer to classic (online downgrade) at epoch %d: its last consumer-protocol member %s is gone; the classic members (%s) rebalance as a classic group",
			epoch, id, listNames(remain, 5))
		switch {
		case epoch == cg.epoch+1:
			text += fmt.Sprintf(" (epoch %d, started by a member joining or leaving, was never reconciled)", epoch)
		case epoch > cg.epoch:
			text += fmt.Sprintf(" (epochs %d to %d, started by members joining or leaving, were never reconciled)", cg.epoch+1, epoch)
		}
		g.convertToClassic(at, id, epoch, mg, text)
	}
}

// unreconciledEpochs counts the group epochs the broker started after
// the last one kproxy saw, when the last consumer-protocol member, id,
// left: every membership change not yet in a formed epoch bumped the
// group epoch, but the last member's leaving converts the group instead.
func (g *group) unreconciledEpochs(id string) int32 {
	n := int32(0)
	for _, c := range g.causes {
		if c.member != id || c.kind != TriggerMemberLeft && c.kind != TriggerSessionTimeout {
			n++
		}
	}
	return n
}

// convertToClassic tells, with text, the consumer group becoming a
// classic group at at, at group epoch epoch, by member id (migration
// mg); the classic engine takes over.
func (g *group) convertToClassic(at time.Time, id string, epoch int32, mg *migration, text string) {
	cg := g.consumer
	mg.convertedAt, mg.convertedGen, mg.convertedBy = at, epoch, id
	mg.completedAt, mg.lastMember = at, id
	g.emit(at, KindMigration, epoch, id, text, map[string]any{"direction": MigrationDowngrade})
	if latest := g.latest(); latest != nil {
		if latest.phase == phaseSyncing {
			latest.phase = phaseSuperseded
		}
		// The classic engine diffs the next generation against this one,
		// by topic name.
		for _, m := range latest.members {
			m.setAssignment(g.e.topics.named(m.assignment))
		}
	}
	g.pastConsumer, g.consumer = cg, nil
	g.consumerProtocol = false
	g.protocolType = "consumer"
}

// downgradeEmpty tells a classic JoinGroup ev into a consumer group with
// no active member: the broker replaces it with a classic group at once.
func (g *group) downgradeEmpty(ev *decode.Event) {
	id := ev.JoinGroup.AssignedMemberID
	if id == "" {
		id = ev.JoinGroup.MemberID
	}
	mg := &migration{direction: MigrationDowngrade, startedAt: ev.At, startedBy: id}
	g.migrations = append(g.migrations, mg)
	g.convertToClassic(ev.At, id, g.consumer.epoch, mg, fmt.Sprintf("group converted from consumer to classic (online downgrade) at epoch %d: %s joined with the classic protocol and the group had no member",
		g.consumer.epoch, g.who(id)))
}

// convertedBefore reports whether the group converted from consumer to
// classic at a group epoch from latest's (the last consumer epoch kproxy
// saw formed) to num-1: the classic generation num follows the
// conversion, and the epochs between were started, not missed.
func (g *group) convertedBefore(latest *generation, num int32) bool {
	if g.pastConsumer == nil || len(g.migrations) == 0 || !epochMode(latest.mode) {
		return false
	}
	mg := g.migrations[len(g.migrations)-1]
	return mg.direction == MigrationDowngrade && !mg.convertedAt.IsZero() &&
		mg.convertedGen >= latest.num && mg.convertedGen == num-1
}

// emptyConsumerGroup reports whether the consumer group has no active
// member of either protocol.
func (g *group) emptyConsumerGroup() bool {
	for _, cm := range g.consumer.members {
		if cm.active {
			return false
		}
	}
	return true
}

// consumerRecords is the group's KIP-848 member records: the consumer
// group's, or those kept aside by a downgrade; nil if none.
func (g *group) consumerRecords() *consumerGroup {
	if g.consumer != nil {
		return g.consumer
	}
	return g.pastConsumer
}

func (g *group) migrationsReport() []MigrationReport {
	out := []MigrationReport{}
	for _, mg := range g.migrations {
		r := MigrationReport{Direction: mg.direction, StartedAt: stamp(mg.startedAt), StartedBy: mg.startedBy,
			ConvertedAt: stampPtr(mg.convertedAt), ConvertedBy: mg.convertedBy, CompletedAt: stampPtr(mg.completedAt),
			LastMember: mg.lastMember}
		if !mg.convertedAt.IsZero() {
			n := mg.convertedGen
			r.Generation = &n
		}
		out = append(out, r)
	}
	return out
}
