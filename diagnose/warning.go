package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/internal/unixnano"

	"github.com/kproxy-dev/kproxy/timeline"
)

// Live early warnings. Both thresholds are two thirds of a timeout, and
// both warnings are stamped with the time the threshold was crossed, not
// the time it was noticed, so that live (Advance on a tick) and replay
// (the next exchange) give the same finding.

// warnFraction is the part of a timeout after which a warning is raised.
const warnFraction = 2.0 / 3.0

// fraction is warnFraction of d.
func fraction(d time.Duration) time.Duration { return time.Duration(float64(d) * warnFraction) }

// checkSilence warns about each member of g, as the timeline knows it, not
// gone and whose last request the coordinator accepted is two thirds of
// its session timeout old, as of now. It says nothing during a
// rebalance: exchanges reach kproxy's observers when they complete, and a
// JoinGroup the coordinator holds until the join phase ends is invisible
// until then, so a member that rejoined at once would look silent. For
// the same reason it says nothing of a member whose last accepted request
// is a JoinGroup: it is in a join phase (a group being formed has no
// rebalance yet; kafka-python's first JoinGroup is answered
// MEMBER_ID_REQUIRED and its second is held), and its SyncGroup and
// heartbeats follow once the phase ends.
//
// It returns the earliest threshold still to come among the members it
// looked at (the zero time if none), so that the engine need not look
// again before then.
func (g *groupState) checkSilence(e *Engine, now time.Time) (next time.Time) {
	if g.rebalancing {
		return time.Time{}
	}
	var due []timeline.MemberFacts
	for m := range e.tl.Members(g.id) {
		if m.Gone || m.SessionTimeout <= 0 || m.LastAlive.IsZero() {
			continue
		}
		var own memberActivity // none: a member not seen yet, or back after it was gone
		if o := g.members[m.MemberID]; o != nil && o.act != nil {
			own = *o.act
		}
		if own.warnedFor != 0 && !unixnano.Time(own.warnedFor).Before(m.LastAlive) {
			continue // warned already about this silence
		}
		if own.lastJoin != 0 && !m.LastAlive.After(unixnano.Time(own.lastJoin)) {
			continue // joining: see above
		}
		at := m.LastAlive.Add(fraction(m.SessionTimeout))
		if now.Before(at) {
			if next.IsZero() || at.Before(next) {
				next = at
			}
			continue
		}
		due = append(due, m)
	}
	slices.SortFunc(due, func(a, b timeline.MemberFacts) int { return strings.Compare(a.MemberID, b.MemberID) })
	for _, m := range due {
		g.member(m.MemberID).act.warnedFor = unixnano.Of(m.LastAlive)
		session, last := m.SessionTimeout, m.LastAlive
		f := newFinding(SessionTimeoutWarning, g.id, Warning, last.Add(fraction(session)), m.MemberID)
		f.Members = []Member{memberOf(m)}
		f.Evidence["lastSeenAt"] = stamp(last)
		f.Evidence["sessionTimeoutMs"] = ms(session)
		f.Evidence["evictionDueAt"] = stamp(last.Add(session))
		f.Explanation = fmt.Sprintf("the coordinator has accepted no request from this member for %.1f s, two thirds of its session timeout (%.1f s): its heartbeats have stopped (a GC pause, a blocked heartbeat thread, a network problem or a process that died); unless one arrives by %s it will be evicted and the group will rebalance",
			fraction(session).Seconds(), session.Seconds(), stamp(last.Add(session)))
		f.Suggestion = advice(SessionTimeoutEviction)
		e.warn(f)
	}
	return next
}

// checkLateJoin warns when member m, at the time of its heartbeat
// answered REBALANCE_IN_PROGRESS, has still not sent its JoinGroup two
// thirds of its rebalance timeout after the rebalance started: it is
// alive (it heartbeats) but its poll loop has not come back to rejoin.
func (e *Engine) checkLateJoin(g *groupState, m *memberState, at time.Time) {
	facts := e.facts(g, m.id)
	rebalance := facts.RebalanceTimeout
	if !g.rebalancing || rebalance <= 0 || !unixnano.Time(m.act.lastJoin).Before(g.rebalanceStart) || m.act.pollWarnedFor == unixnano.Of(g.rebalanceStart) {
		return
	}
	due := g.rebalanceStart.Add(fraction(rebalance))
	if at.Before(due) {
		return
	}
	m.act.pollWarnedFor = unixnano.Of(g.rebalanceStart)
	f := newFinding(PollTimeoutWarning, g.id, Warning, due, m.id)
	f.Members = []Member{memberOf(facts)}
	f.Evidence["rebalanceStartedAt"] = stamp(g.rebalanceStart)
	f.Evidence["rebalanceTimeoutMs"] = ms(rebalance)
	f.Evidence["lastHeartbeatAt"] = stamp(at)
	f.Evidence["evictionDueAt"] = stamp(g.rebalanceStart.Add(rebalance))
	f.Explanation = fmt.Sprintf("the group started rebalancing at %s and this member, still heartbeating, has not sent its JoinGroup %.1f s later (two thirds of its rebalance timeout, %.1f s, the Java client's max.poll.interval.ms): its application has not returned to poll; the whole group waits for it, and it will be removed if it does not rejoin by %s",
		stamp(g.rebalanceStart), fraction(rebalance).Seconds(), rebalance.Seconds(), stamp(g.rebalanceStart.Add(rebalance)))
	f.Suggestion = advice(PollTimeoutEviction)
	e.warn(f)
}
