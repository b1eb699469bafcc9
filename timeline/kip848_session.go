package timeline

import (
	"fmt"
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// KIP-848 session timeouts. The consumer protocol's session timeout is a
// broker setting (group.consumer.session.timeout.ms, 45 s by default),
// not on the wire, so the engine cannot predict a member's expiry as it
// does a classic member's (session.go). It infers it afterwards: when a
// new group epoch shows up with no cause seen (no join, leave, fence or
// subscription change) while an active member has been silent for more
// than silentIntervals heartbeat intervals, the broker removed that
// member, and the silence bounds the session timeout. With another cause
// in view, a silent member is only said to be silent: a slow member and a
// join are more likely than a join and a timeout at once. A cause whose
// exchange completes after the epoch showed, and came before the timeout
// was inferred, still becomes the epoch's trigger (lateCause).

// silentIntervals is how many heartbeat intervals without an accepted
// heartbeat make a KIP-848 member silent: a live member heartbeats every
// interval, and sooner while it reconciles.
const silentIntervals = 3

// silent reports whether cm, active, has had no heartbeat accepted for
// silentIntervals heartbeat intervals as of at.
func (cm *cmember) silent(at time.Time) bool {
	return cm.active && cm.interval > 0 && at.Sub(cm.lastAt) > silentIntervals*cm.interval
}

// silentMember reports whether cm, active, has been silent long enough as
// of at to have been removed: a consumer-protocol member for
// silentIntervals heartbeat intervals; a classic member of a consumer
// group (migration.go) past the session timeout of its JoinGroup, which
// the broker applies to it.
func (g *group) silentMember(cm *cmember, at time.Time) bool {
	if cm.protocol != ProtocolClassic {
		return cm.silent(at)
	}
	lm := g.live[cm.id]
	return cm.active && lm != nil && lm.sessionTimeout() > 0 && !cm.lastAt.IsZero() && at.Sub(cm.lastAt) > lm.sessionTimeout()
}

// consumerTimeouts marks the members silent when ev showed a new group
// epoch with no cause in view as removed by the broker: each is a
// session-timeout cause of the epoch, and departs from it.
func (g *group) consumerTimeouts(ev *decode.Event) {
	for _, c := range g.causes {
		if !c.at.After(ev.RespondedAt) {
			return
		}
	}
	cg := g.consumer
	for _, id := range sortedKeys(cg.members) {
		cm := cg.members[id]
		if !g.silentMember(cm, ev.At) {
			continue
		}
		reason := g.silenceReason(cm, ev.RespondedAt)
		cm.active, cm.timedOut, cm.expiry, cm.expiredAt = false, true, reason, ev.At
		g.addCause(cause{trigger: trigger{kind: TriggerSessionTimeout, member: id, reason: reason, at: ev.At},
			instanceID: cm.instanceID, clientID: cm.clientID, clientAddr: cm.clientAddr})
		g.emit(ev.At, KindSessionExpired, cg.epoch, id, fmt.Sprintf("session of %s timed out (%s; inferred)", id, reason),
			map[string]any{"silent_ms": ms(ev.RespondedAt.Sub(cm.lastAt)), "heartbeat_interval_ms": ms(cm.interval),
				"client_id": cm.clientID, "client_addr": cm.clientAddr})
		g.checkMigration(ev.At, id)
	}
}

// silenceReason is the evidence of cm's session timeout, given that the
// new epoch was seen in a response at seen: its last heartbeat, and the
// session timeout the silence implies. The broker removed the member
// after the last response that still showed the previous epoch and
// before seen, which bounds the timeout.
func (g *group) silenceReason(cm *cmember, seen time.Time) string {
	if lm := g.live[cm.id]; cm.protocol == ProtocolClassic && lm != nil {
		return fmt.Sprintf("no heartbeat since %s UTC, session timeout %s (a classic member: its JoinGroup's)",
			cm.lastAt.UTC().Format("15:04:05.000"), human(lm.sessionTimeout()))
	}
	lower, upper := g.sessionBounds(cm, seen)
	cm.sessionLow, cm.sessionHigh = lower, upper
	bound := "at most " + human(upper)
	if lower > 0 {
		bound = fmt.Sprintf("between %s and %s", human(lower), human(upper))
	}
	return fmt.Sprintf("no heartbeat since %s UTC (heartbeat interval %s); removed by the broker with a session timeout of %s",
		cm.lastAt.UTC().Format("15:04:05.000"), human(cm.interval), bound)
}

// sessionBounds bounds the session timeout that removed cm, silent since
// its last heartbeat, given that the new epoch was seen in a response at
// seen: at most the silence until seen, at least the silence until the
// last response that still showed the previous epoch (0 when none came
// after its last heartbeat).
func (g *group) sessionBounds(cm *cmember, seen time.Time) (lower, upper time.Duration) {
	upper = seen.Sub(cm.lastAt)
	if prev := g.consumer.epochHeardAt; prev.After(cm.lastAt) {
		lower = prev.Sub(cm.lastAt)
	}
	return lower, upper
}

// consumerHeardAgain takes back an inferred session timeout: the broker
// answered the member at its epoch, so it had not removed it.
func (g *group) consumerHeardAgain(cm *cmember, at time.Time) {
	cm.timedOut, cm.expiry = false, ""
	cm.sessionLow, cm.sessionHigh = 0, 0
	kept := g.causes[:0]
	for _, c := range g.causes {
		if !(c.kind == TriggerSessionTimeout && c.member == cm.id) {
			kept = append(kept, c)
		}
	}
	g.causes = kept
	g.emit(at, KindPartial, g.consumer.epoch, cm.id, fmt.Sprintf("%s was heard from again: its inferred session timeout is withdrawn", cm.id), nil)
	latest := g.latest()
	if latest == nil {
		return
	}
	left := latest.departed[:0]
	for _, d := range latest.departed {
		if !(d.how == DepartSessionTimeout && d.member == cm.id) {
			left = append(left, d)
		}
	}
	latest.departed = left
	if t := latest.trigger; t.kind == TriggerSessionTimeout && t.member == cm.id {
		latest.trigger = trigger{kind: TriggerUnknown, at: t.at, reason: "the change that bumped the group epoch was not observed"}
		latest.startBound = true
		g.tellTrigger(latest, "group epoch")
	}
}
