package timeline

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/internal/unixnano"
)

// KIP-848 (ConsumerGroupHeartbeat, key 68): there is no group-wide stop.
// The group epoch is bumped on a membership or subscription change, the
// broker computes a target assignment, and each member reconciles on its
// own: it revokes what moves, then its member epoch reaches the group
// epoch. The engine models each group epoch it sees as a generation whose
// members reconcile, stable once every active member is at that epoch.

// consumerGroup is the KIP-848 state of a group.
type consumerGroup struct {
	members map[string]*cmember
	epoch   int32 // the highest member epoch seen: the group epoch as far as the wire shows
	// epochHeardAt is the last response that showed a member at epoch
	// with nothing moving: the broker's group epoch was still epoch then
	// (see silenceReason).
	epochHeardAt time.Time
	// share is a KIP-932 share group's records (share.go); nil for a
	// consumer group. A share group's membership is told as a consumer
	// group's, without revocations.
	share *shareState
}

// mode is the generation mode of the group's epochs: ModeConsumer, or
// ModeShare for a share group.
func (cg *consumerGroup) mode() string {
	if cg.share != nil {
		return ModeShare
	}
	return ModeConsumer
}

// cmember is one KIP-848 member. Partitions are keyed by topic id (see
// idKey) until rendered.
type cmember struct {
	id, instanceID, clientID, clientAddr, rack string
	subscription                               []string
	regex, assignor                            string
	epoch                                      int32
	assigned                                   partitions // nil before the first assignment
	revoking                                   partitions // revoked in a response, not yet released
	joinedAt, lastAt, leftAt                   time.Time
	interval                                   time.Duration
	active, everActive                         bool
	steps                                      []epochStep
	fences                                     []fence
	// protocol is ProtocolClassic for a classic member of a consumer
	// group (migration.go); "" for a member of the group's own protocol
	// (see proto).
	protocol string
	// timedOut is set when the member went silent and a new group epoch
	// showed the broker had removed it (kip848_session.go); expiry says
	// why, expiredAt when it was inferred.
	timedOut  bool
	expiry    string
	expiredAt time.Time
	// rebalanceTimeout is the RebalanceTimeoutMs of its latest heartbeat
	// that carried one (its join: the Java client's max.poll.interval.ms);
	// 0 unknown.
	rebalanceTimeout time.Duration
	// joins are its heartbeats at epoch 0 the coordinator accepted, and
	// leaves its heartbeats at epoch -1 or -2: the latest maxMemberMarks
	// of each.
	joins  []time.Time
	leaves []leaveMark
	// sessionLow and sessionHigh bound the session timeout inferred when
	// its session was last found expired (kip848_session.go); 0 unknown.
	sessionLow, sessionHigh time.Duration
}

// leaveMark is one leave heartbeat: epoch -1, or -2 for a static
// member's temporary leave.
type leaveMark struct {
	at    time.Time
	epoch int32
}

// maxMemberMarks is how many joins and leaves of one KIP-848 member are
// kept: enough to tell a member that keeps coming back, bounded for a
// member that lives for months.
const maxMemberMarks = 32

// mark appends x to s, keeping the latest maxMemberMarks.
func mark[T any](s []T, x T) []T {
	if len(s) >= maxMemberMarks {
		s = append(s[:0], s[1:]...)
	}
	return append(s, x)
}

type epochStep struct {
	at                       time.Time
	epoch                    int32
	assigned, added, revoked partitions
}

type fence struct {
	at    time.Time
	epoch int32
	err   string
}

// idKey keys a topic id in a partitions set until its name is known. '#'
// cannot appear in a Kafka topic name.
func idKey(id [16]byte) string {
	return "#" + base64.RawURLEncoding.EncodeToString(id[:])
}

func keyed(tps []decode.TopicIDPartitions) partitions {
	p := partitions{}
	for _, tp := range tps {
		p.addAll(idKey(tp.TopicID), tp.Partitions)
	}
	return p
}

// named renames topic-id keys to topic names where Metadata named them.
func (t topicNames) named(p partitions) partitions {
	if p == nil {
		return nil
	}
	out := make(partitions, 0, len(p))
	for _, tp := range p {
		k, ps := tp.topic, tp.parts
		n := k
		if strings.HasPrefix(k, "#") {
			var id [16]byte
			if b, err := base64.RawURLEncoding.DecodeString(k[1:]); err == nil && len(b) == 16 {
				copy(id[:], b)
				if name, ok := t.names[id]; ok {
					n = name
				}
			}
		}
		out.addAll(n, ps)
	}
	return out
}

func (g *group) consumerState() *consumerGroup {
	if g.consumer == nil && g.pastConsumer != nil {
		g.consumer, g.pastConsumer = g.pastConsumer, nil // upgraded again after a downgrade
		g.consumerProtocol = true
	}
	if g.consumer == nil {
		g.consumer = &consumerGroup{members: map[string]*cmember{}}
		g.consumerProtocol = true
		g.protocolType = "consumer"
	}
	return g.consumer
}

// consumerHeartbeat handles a ConsumerGroupHeartbeat exchange.
func (g *group) consumerHeartbeat(ev *decode.Event) {
	h := ev.ConsumerGroupHeartbeat
	upgrading := g.classicHistory()
	if upgrading && (!ev.Responded() || h.ErrorCode != 0 || h.MemberEpoch != 0) {
		// The broker converts a classic group on a join it accepts.
		if ev.Responded() && h.ErrorCode != 0 {
			g.requestError(ev, decode.APIName(ev.APIKey), h.MemberID, h.ErrorCode)
		}
		return
	}
	cg := g.consumerState()
	id := h.MemberID
	if h.AssignedMemberID != "" {
		id = h.AssignedMemberID
	}
	if id == "" {
		return
	}
	cm := cg.members[id]
	if cm == nil {
		cm = &cmember{id: id}
		cg.members[id] = cm
	}
	cm.protocol = "" // a classic member that came back with the consumer protocol
	if upgrading {
		g.startUpgrade(ev, id)
	}
	if ev.ClientID != "" {
		cm.clientID = ev.ClientID
	}
	if ev.ClientAddr != "" {
		cm.clientAddr = ev.ClientAddr
	}
	if h.InstanceID != nil {
		cm.instanceID = *h.InstanceID
	}
	if h.RackID != nil {
		cm.rack = *h.RackID
	}
	if h.ServerAssignor != nil {
		cm.assignor = *h.ServerAssignor
	}
	if h.SubscribedTopicRegex != nil {
		cm.regex = *h.SubscribedTopicRegex
	}
	if h.RebalanceTimeout > 0 {
		cm.rebalanceTimeout = h.RebalanceTimeout
	}
	c := cause{instanceID: cm.instanceID, clientID: cm.clientID, clientAddr: cm.clientAddr}
	switch {
	case h.MemberEpoch == 0:
		if !cm.active {
			cm.joinedAt = ev.At
			c.trigger = trigger{kind: TriggerMemberJoined, member: id, at: ev.At}
			if cm.everActive {
				c.kind = TriggerMemberRejoined
			}
			// A join is a cause of the next epoch even when answered at
			// an epoch already shown: a broker that computes target
			// assignments in batches (Kafka 4's
			// group.consumer.assignment.interval.ms, 1 s by default)
			// answers a join at the current epoch and bumps it later.
			g.addCause(c)
		}
	case h.MemberEpoch < 0:
		g.consumerLeave(ev, cm, c)
		return
	}
	if h.SubscribedTopicNames != nil {
		sub := slices.Compact(slices.Sorted(slices.Values(h.SubscribedTopicNames)))
		if cm.subscription != nil && h.MemberEpoch > 0 && !slices.Equal(sub, cm.subscription) {
			c.trigger = trigger{kind: TriggerSubscriptionChanged, member: id, at: ev.At,
				reason: fmt.Sprintf("%v → %v", cm.subscription, sub)}
			g.addCause(c)
		}
		cm.subscription = sub
	}
	if h.OwnedPartitions != nil && cm.revoking.count() > 0 {
		owned := keyed(h.OwnedPartitions)
		released, still, _ := diff(owned, cm.revoking)
		cm.revoking = still
		if released.count() > 0 {
			g.emit(ev.At, KindEpoch, cm.epoch, id, fmt.Sprintf("%s released %s", id, g.e.topics.named(released)), nil)
		}
	}
	if !ev.Responded() {
		return
	}
	if h.ErrorCode != 0 {
		g.consumerError(ev, cm, c)
		return
	}
	if cm.timedOut {
		if h.MemberEpoch > 0 {
			g.consumerHeardAgain(cm, ev.At)
		}
		cm.timedOut, cm.expiry = false, ""
	}
	if h.MemberEpoch == 0 {
		cm.joins = mark(cm.joins, ev.At)
	}
	cm.lastAt, cm.active, cm.everActive = ev.At, true, true
	if h.HeartbeatInterval > 0 {
		cm.interval = h.HeartbeatInterval
	}
	if h.AssignedEpoch > cg.epoch {
		cg.epoch = h.AssignedEpoch
		g.formEpoch(h.AssignedEpoch, ev)
	}
	moved := g.consumerStep(ev, cm)
	if h.AssignedEpoch == cg.epoch && !moved {
		cg.epochHeardAt = ev.RespondedAt
	}
}

// consumerStep records a member's new epoch or assignment, and reports
// whether partitions moved.
func (g *group) consumerStep(ev *decode.Event, cm *cmember) (moved bool) {
	h := ev.ConsumerGroupHeartbeat
	var assigned partitions
	if h.Assignment != nil {
		assigned = keyed(h.Assignment)
	}
	return g.memberStep(ev, cm, h.AssignedEpoch, assigned)
}

// memberStep records that the broker answered member cm at epoch with
// assigned (nil: unchanged), and reports whether partitions moved: a
// KIP-848 heartbeat's answer, or a classic member's SyncGroup answer in a
// consumer group (migration.go). A consumer-protocol member revokes what
// it loses before its epoch advances; a classic member revoked before it
// rejoined.
func (g *group) memberStep(ev *decode.Event, cm *cmember, epoch int32, assigned partitions) (moved bool) {
	gen := g.latest()
	if gen == nil {
		return false
	}
	revokes := g.consumer.share == nil && cm.protocol != ProtocolClassic
	old := cm.epoch
	added, revoked := partitions{}, partitions{}
	if assigned != nil {
		na := assigned
		prev := cm.assigned
		if prev == nil {
			prev = partitions{}
		}
		added, revoked, _ = diff(prev, na)
		cm.assigned = na
		if revoked.count() > 0 && revokes {
			cm.revoking = union([]partitions{cm.revoking, revoked})
		}
	}
	cm.epoch = epoch
	if cm.epoch > old {
		cm.revoking = nil // a member epoch advances only once revocations are done
	}
	gm := gen.members[cm.id]
	if gm == nil {
		// Active since the epoch formed: its first heartbeat's exchange
		// completed after the one that showed the epoch.
		gm = gen.member(cm.id)
		gm.status = consumerStatus(gen.prev, cm.id)
		gen.joined++
	}
	g.fillConsumerMember(gen, gm, cm)
	if cm.epoch == gen.num && gm.reachedNs == 0 {
		gm.reachedNs = unixnano.Of(ev.RespondedAt)
	}
	if cm.epoch != old || added.count()+revoked.count() > 0 {
		mv := gm.hold()
		mv.added = union([]partitions{mv.added, added})
		mv.revoked = union([]partitions{mv.revoked, revoked})
		cm.steps = append(cm.steps, epochStep{at: ev.RespondedAt, epoch: cm.epoch, assigned: cm.assigned.clone(), added: added, revoked: revoked})
		text := fmt.Sprintf("%s epoch %d", cm.id, cm.epoch)
		if old != cm.epoch {
			text = fmt.Sprintf("%s epoch %d→%d", cm.id, old, cm.epoch)
		}
		if assigned != nil {
			text += " assigned " + orNone(g.e.topics.named(cm.assigned))
		}
		if added.count() > 0 {
			text += " (+" + g.e.topics.named(added).String() + ")"
		}
		switch {
		case revoked.count() > 0 && !revokes:
			text += " (-" + g.e.topics.named(revoked).String() + ")" // a share member has nothing to revoke; a classic one revoked already
		case revoked.count() > 0:
			text += " (-" + g.e.topics.named(revoked).String() + ", revoking)"
		}
		g.emit(ev.RespondedAt, KindEpoch, gen.num, cm.id, text, map[string]any{"member_epoch": cm.epoch, "previous_epoch": old})
		if revoked.count() > 0 && revokes && gen.phase == phaseStable && g.next == nil {
			g.detect(ev.At, true) // a revocation without a new epoch: the target moved
		}
	}
	g.checkReconciled(gen, ev.RespondedAt)
	return added.count()+revoked.count() > 0
}

// proto is the protocol cm uses in cg.
func (cm *cmember) proto(cg *consumerGroup) string {
	switch {
	case cm.protocol != "":
		return cm.protocol
	case cg.share != nil:
		return ProtocolShare
	}
	return ProtocolConsumer
}

func (g *group) fillConsumerMember(gen *generation, gm *member, cm *cmember) {
	w := *gm.who
	w.protocol = cm.proto(g.consumer)
	w.instanceID, w.clientID, w.clientAddr, w.rack = cm.instanceID, cm.clientID, cm.clientAddr, cm.rack
	w.subscription = cm.subscription
	gm.setWho(w, gen.previous(cm.id))
	gm.setAssignment(cm.assigned.clone())
	gm.epoch = cm.epoch
	gm.joinSeen = true
	if gm.joinNs == 0 {
		gm.joinNs = unixnano.Of(cm.joinedAt)
	}
}

// consumerLeave handles MemberEpoch -1 (leave) and -2 (static leave).
func (g *group) consumerLeave(ev *decode.Event, cm *cmember, c cause) {
	how := "left"
	if ev.ConsumerGroupHeartbeat.MemberEpoch == -2 {
		how = "left temporarily (static member: its partitions wait for it until its session times out)"
	}
	c.trigger = trigger{kind: TriggerMemberLeft, member: cm.id, at: ev.At}
	cm.leaves = mark(cm.leaves, leaveMark{at: ev.At, epoch: ev.ConsumerGroupHeartbeat.MemberEpoch})
	g.memberLeft(ev.At, cm, how, c, ev.ConsumerGroupHeartbeat.MemberEpoch)
}

// memberLeft tells member cm leaving the consumer group at at (how: "left"
// or a static member's temporary leave), c the cause it is of the next
// epoch; leaveEpoch is the member epoch its request sent (-1 or -2; -1
// for a classic member's LeaveGroup).
func (g *group) memberLeft(at time.Time, cm *cmember, how string, c cause, leaveEpoch int32) {
	cm.active, cm.leftAt = false, at
	owning := "owning"
	if g.consumer.share != nil {
		owning = "assigned" // share members acquire records, not partitions
	}
	text := fmt.Sprintf("%s %s at epoch %d, %s %s", cm.id, how, cm.epoch, owning, orNone(g.e.topics.named(cm.assigned)))
	if c.reason != "" {
		text += fmt.Sprintf(": %q", c.reason)
	}
	fields := map[string]any{"member_epoch": leaveEpoch}
	if c.reason != "" {
		fields["reason"] = c.reason
	}
	g.emit(at, KindMemberLeft, g.consumer.epoch, cm.id, text, fields)
	defer g.checkMigration(at, cm.id)
	if g.lateCause(c, g.consumer.epoch) {
		return
	}
	g.addCause(c)
	if latest := g.latest(); latest != nil && latest.phase == phaseStable {
		g.detect(at, false)
	}
}

// consumerError handles an error answer: fencing, or a named error.
func (g *group) consumerError(ev *decode.Event, cm *cmember, c cause) {
	h := ev.ConsumerGroupHeartbeat
	switch h.ErrorCode {
	case errFencedMemberEpoch, errStaleMemberEpoch, errUnknownMemberID:
		if !cm.active && len(cm.fences) > 0 && !cm.fences[len(cm.fences)-1].at.Before(cm.expiredAt) {
			return
		}
		name := errorName(h.ErrorCode)
		cm.fences = append(cm.fences, fence{at: ev.At, epoch: h.MemberEpoch, err: name})
		lost := cm.assigned
		cm.active, cm.assigned, cm.revoking = false, nil, nil
		why := "it must rejoin with epoch 0 and loses " + orNone(g.e.topics.named(lost))
		if cm.timedOut {
			why = "its session had timed out: it must rejoin with epoch 0"
		}
		g.e.emit(Entry{At: ev.At, Group: g.id, Kind: KindFenced, Generation: g.consumer.epoch, Member: cm.id,
			Text:    fmt.Sprintf("%s fenced: %s at epoch %d; %s", cm.id, name, h.MemberEpoch, why),
			Fields:  map[string]any{"api": "ConsumerGroupHeartbeat", "error": name, "member_epoch": h.MemberEpoch},
			Failure: &FailureFacts{API: "ConsumerGroupHeartbeat", Error: name}})
		if cm.timedOut {
			return // the broker removed it already: that started the epoch
		}
		c.trigger = trigger{kind: TriggerMemberFenced, member: cm.id, at: ev.At, reason: name}
		g.addCause(c)
		defer g.checkMigration(ev.At, cm.id)
		if latest := g.latest(); latest != nil && latest.phase == phaseStable {
			g.detect(ev.At, false)
		}
	default:
		g.requestError(ev, decode.APIName(ev.APIKey), cm.id, h.ErrorCode)
	}
}

// formEpoch records a new group epoch, first seen in a member's response.
func (g *group) formEpoch(epoch int32, ev *decode.Event) {
	latest := g.latest()
	gen := g.next
	g.next = nil
	if gen == nil {
		gen = newGeneration()
	}
	if latest != nil && latest.phase < phaseStable {
		latest.phase = phaseSuperseded
	}
	cg := g.consumer
	g.consumerTimeouts(ev)
	gen.num, gen.phase, gen.prev, gen.mode = epoch, phaseSyncing, latest, cg.mode()
	gen.protocolType, gen.joinEnd, gen.listSeen = g.protocolType, ev.RespondedAt, true
	for _, id := range sortedKeys(cg.members) {
		cm := cg.members[id]
		if gen.protocol == "" && cm.assignor != "" {
			gen.protocol = cm.assignor
		}
		if !cm.active {
			continue
		}
		gm := gen.member(id)
		g.fillConsumerMember(gen, gm, cm)
		gm.status = consumerStatus(latest, id)
		gen.joined++
	}
	gen.trigger, gen.startBound = g.consumerTrigger(gen, ev)
	gen.start = gen.trigger.at
	g.consumeCauses(ev.RespondedAt)
	if latest != nil {
		for _, id := range latest.memberIDs() {
			if gen.members[id] != nil {
				continue
			}
			d := departure{member: id, how: DepartUnknown, lost: latest.members[id].assignment.clone()}
			if cm := cg.members[id]; cm != nil {
				switch {
				case len(cm.fences) > 0 && !cm.fences[len(cm.fences)-1].at.Before(latest.joinEnd):
					f := cm.fences[len(cm.fences)-1]
					d.how, d.at, d.reason = DepartFenced, f.at, f.err
				case cm.timedOut:
					d.how, d.at, d.reason = DepartSessionTimeout, cm.expiredAt, cm.expiry
				case !cm.leftAt.IsZero():
					d.how, d.at = DepartLeft, cm.leftAt
				}
			}
			gen.departed = append(gen.departed, d)
		}
	} else if epoch > 1 && gen.trigger.kind == TriggerUnknown {
		gen.note("previousEpoch", fmt.Sprintf("kproxy first saw this group at epoch %d: earlier epochs were not observed", epoch))
	}
	g.keep(gen)
	g.tellTrigger(gen, "group epoch")
	g.attachRecent(gen)
	g.countRebalance(gen)
}

// consumerStatus is the status of member id in a group epoch whose
// previous epoch is prev (nil if none): "member" if it was in it, else
// "joined".
func consumerStatus(prev *generation, id string) memberStatus {
	if prev != nil && prev.members[id] != nil {
		return statusMember
	}
	return statusJoined
}

// lateCause makes c the cause of the latest group epoch, numbered epoch,
// when c's request came before the response that showed the epoch (and
// after the one that showed the epoch before), and that epoch's cause was
// not observed or came after c (see consumerTrigger: the earliest cause):
// exchanges of different connections complete in any order, so a leaving
// member's answer may complete after another member's answer at the epoch
// its leaving started. It reports whether c was taken. Joins are not
// taken so (see consumerHeartbeat): a join answered at an epoch already
// shown more often starts the next one.
func (g *group) lateCause(c cause, epoch int32) bool {
	gen := g.latest()
	if gen == nil || gen.num != epoch || !epochMode(gen.mode) || !c.at.Before(gen.joinEnd) {
		return false
	}
	if gen.trigger.kind != TriggerUnknown && !better(c.trigger, gen.trigger) {
		return false
	}
	if p := gen.prev; p != nil && !c.at.After(p.joinEnd) {
		return false
	}
	gen.trigger, gen.startBound, gen.start = c.trigger, false, c.at
	g.tellTrigger(gen, "group epoch")
	return true
}

// consumerTrigger is the earliest cause since the previous epoch.
func (g *group) consumerTrigger(gen *generation, ev *decode.Event) (trigger, bool) {
	var best *trigger
	for _, c := range g.causes {
		if !c.at.After(ev.RespondedAt) && (best == nil || better(c.trigger, *best)) {
			t := c.trigger
			best = &t
		}
	}
	if best != nil {
		return *best, false
	}
	return trigger{kind: TriggerUnknown, at: ev.At, reason: "the change that bumped the group epoch was not observed"}, true
}

// checkReconciled makes a group epoch stable once every active member has
// reached it with nothing left to revoke.
func (g *group) checkReconciled(gen *generation, at time.Time) {
	if gen.phase != phaseSyncing || g.next != nil {
		return
	}
	var assigned []partitions
	topics := map[string]bool{}
	for _, cm := range g.consumer.members {
		if cm.active && (cm.epoch != gen.num || cm.revoking.count() > 0) {
			return
		}
		if cm.active {
			assigned = append(assigned, g.e.topics.named(cm.assigned))
			for _, t := range cm.subscription {
				topics[t] = true
			}
		}
	}
	// The target assignment is not on the wire; when Metadata gave the
	// partition counts, a partition still unassigned means members are
	// still waiting for partitions being released.
	have := union(assigned)
	for t := range topics {
		if n := g.e.topics.count(t); n > 0 && len(have.of(t)) < int(n) {
			return
		}
	}
	gen.phase, gen.stableAt = phaseStable, at
	gen.nothing = nil
	for _, id := range gen.memberIDs() {
		gm := gen.members[id]
		if cm := g.consumer.members[id]; cm == nil || !cm.active {
			continue
		}
		gm.synced, gm.syncedNs = true, gm.reachedNs
		if gm.assignment.count() == 0 {
			gen.nothing = append(gen.nothing, id)
		}
	}
	g.emitStable(gen)
}

// consumerRevocation is the generation a KIP-848 commit is revoking in:
// the member has partitions revoked but not yet released.
func (g *group) consumerRevocation(c *commit) *generation {
	cm := g.consumer.members[c.member]
	if cm == nil || cm.revoking.count() == 0 {
		return nil
	}
	if g.next != nil {
		return g.next
	}
	return g.latest()
}

// consumerOwned is what a KIP-848 member may commit: what it is assigned
// and what it is still revoking, by name; nil when unknown.
func (g *group) consumerOwned(id string) partitions {
	cm := g.consumer.members[id]
	if cm == nil || cm.assigned == nil {
		return nil
	}
	return g.e.topics.named(union([]partitions{cm.assigned, cm.revoking}))
}

// consumerOwner is the KIP-848 member assigned a partition.
func (g *group) consumerOwner(t string, p int32) string {
	for _, id := range sortedKeys(g.consumer.members) {
		if cm := g.consumer.members[id]; cm.active && g.e.topics.named(cm.assigned).has(t, p) {
			return id
		}
	}
	return ""
}

// closeConsumer says which KIP-848 members went silent: the consumer
// protocol's session timeout is a broker setting, not on the wire.
func (g *group) closeConsumer(at time.Time) {
	for _, id := range sortedKeys(g.consumer.members) {
		cm := g.consumer.members[id]
		if !cm.silent(at) {
			continue
		}
		protocol := "the consumer protocol's"
		if g.consumer.share != nil {
			protocol = "a share group's"
		}
		g.emit(at, KindPartial, g.consumer.epoch, id, fmt.Sprintf("%s silent since %s (%s, heartbeat interval %s); %s session timeout is a broker setting kproxy cannot see",
			id, clock(cm.lastAt, g.e.cfg.Location), human(at.Sub(cm.lastAt)), human(cm.interval), protocol), nil)
	}
}
