package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/internal/unixnano"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// pollReason reports whether a LeaveGroup reason (KIP-800) says the
// client's poll timer expired: the Java client sends "consumer poll
// timeout has expired."; the wording of a client naming its setting
// ("max.poll.interval.ms exceeded") is read too. kafka-python (LeaveGroup
// v3) and librdkafka (v1) send no reason at all: see inferredPoll.
func pollReason(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "poll timeout") || strings.Contains(r, "max.poll.interval") || strings.Contains(r, "poll interval")
}

// pollTolerance is how much earlier than the rebalance timeout a member's
// last Fetch before a silent LeaveGroup may be and still count as a poll
// timeout: a client checks its poll timer on its heartbeat thread's
// schedule, so the LeaveGroup comes at or a little after the timer
// expired, and the last Fetch was sent at or before the last poll; a
// tenth of the timeout covers the request's own timing.
const pollTolerance = 0.1

// inferredPoll reports whether a LeaveGroup without a reason (d) is a
// poll timeout, inferred from the wire: the member had sent no Fetch for
// about its rebalance timeout rt (at least rt less pollTolerance) before
// leaving, and the same client joined again later on the same connection
// (a restart opens a new one). A client that fetches in the background
// (fetchesInBackground) needs only the rejoin: its Fetch requests say
// nothing of its poll loop. It returns the last Fetch (zero for such a
// client) and the rejoin. addr is the member's client address on the
// coordinator.
func (g *groupState) inferredPoll(d timeline.DepartureView, rt time.Duration, addr string) (lastFetch, rejoin time.Time, ok bool) {
	m := g.members[d.MemberID]
	if m == nil || d.How != timeline.DepartLeft || d.Reason != "" || rt <= 0 {
		return time.Time{}, time.Time{}, false
	}
	leftAt, fetchBefore := m.leave(d.At)
	if leftAt.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	rejoin = g.rejoin(addr, leftAt)
	if rejoin.IsZero() {
		return time.Time{}, time.Time{}, false
	}
	if fetchesInBackground(m.who().software) {
		return time.Time{}, rejoin, true
	}
	if fetchBefore.IsZero() || float64(leftAt.Sub(fetchBefore)) < float64(rt)*(1-pollTolerance) {
		return time.Time{}, time.Time{}, false
	}
	return fetchBefore, rejoin, true
}

// leave is the member's leave at at (a departure's time) and its latest
// Fetch before it, when the member's recent leaves hold one at that time;
// else its latest leave. A member that keeps leaving and rejoining under
// one member id (a KIP-848 member) departs once per leave.
func (m *memberState) leave(at time.Time) (leftAt, fetchBefore time.Time) {
	for _, l := range m.leaves {
		if unixnano.Time(l.at).Equal(at) {
			return unixnano.Time(l.at), unixnano.Time(l.fetchBefore)
		}
	}
	if n := len(m.leaves); n > 0 {
		return unixnano.Time(m.leaves[n-1].at), unixnano.Time(m.leaves[n-1].fetchBefore)
	}
	return time.Time{}, time.Time{}
}

// fetchesInBackground reports whether the client software (KIP-511) sends
// its Fetch requests from a thread of its own rather than from the
// application's poll calls: librdkafka and the clients built on it
// (confluent-kafka-python, -go, -dotnet: "2.16.1-rdkafka-2.16.0") prefetch
// into a queue the application drains, and go on fetching while the
// application is stuck, so the silence of their Fetch requests cannot show
// a poll timeout. librdkafka sends no KIP-800 reason (LeaveGroup v1).
func fetchesInBackground(sw decode.ClientSoftware) bool {
	return strings.Contains(sw.Name, "rdkafka") || strings.Contains(sw.Version, "rdkafka")
}

// evictions reads the departures of each generation: a member that left
// because its poll timer expired (its reason says so, or, without a
// reason, inferredPoll), or was dropped at the join deadline, was evicted
// for a slow poll loop; one whose session expired stopped heartbeating.
func (e *Engine) evictions(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for _, gen := range gr.Generations {
		start := gen.Started
		for _, d := range gen.Departed {
			at := d.At
			m, known := e.tl.Member(g.id, d.MemberID)
			rt := m.RebalanceTimeout
			if rt <= 0 {
				rt = gen.RebalanceTimeout
			}
			lastFetch, rejoin, inferred := g.inferredPoll(d, rt, m.ClientAddr)
			switch {
			case d.How == timeline.DepartLeft && pollReason(d.Reason), d.How == timeline.DepartDropped, inferred:
				f := newFinding(PollTimeoutEviction, g.id, Critical, at, d.MemberID)
				f.Members = e.infos(g, d.MemberID)
				f.Partitions = copyParts(d.Partitions)
				f.Evidence["generation"] = gen.Generation
				f.Evidence["how"] = d.How
				if d.Reason != "" {
					f.Evidence["reason"] = d.Reason
				}
				if rt > 0 {
					f.Evidence["rebalanceTimeoutMs"] = ms(rt)
				}
				if !start.IsZero() && d.How == timeline.DepartDropped {
					f.Evidence["rebalanceStartedAt"] = stamp(start)
					f.Evidence["waitedMs"] = ms(at.Sub(start))
				}
				if inferred {
					f.Evidence["inferred"] = true
					f.Evidence["rejoinedAt"] = stamp(rejoin)
				} else if pos, ok := e.lastFetchAny(g, d.MemberID, at); ok {
					lastFetch = pos
				}
				if !lastFetch.IsZero() {
					f.Evidence["lastFetchAt"] = stamp(lastFetch)
					f.Evidence["pollGapMs"] = ms(at.Sub(lastFetch))
				}
				what := "left the group saying its poll timer expired"
				leaving := "left the group without a reason"
				if gen.Mode == timeline.ModeConsumer {
					leaving = "sent a leave heartbeat (member epoch -1; the consumer protocol carries no reason)"
				}
				switch {
				case d.How == timeline.DepartDropped:
					what = "did not rejoin before the join phase's deadline (the largest rebalance timeout) and was removed"
				case inferred && lastFetch.IsZero():
					f.Evidence["backgroundFetch"] = true
					what = fmt.Sprintf("left the group without a reason and joined again from the same connection at %s, which is what its client, which fetches in the background (%s), does when its poll timer expires (inferred from the wire: the client sent no reason; its rebalance timeout is %.1f s)",
						stamp(rejoin), g.members[d.MemberID].who().software.Name, rt.Seconds())
				case inferred:
					what = fmt.Sprintf("%s %.1f s after its last Fetch (its rebalance timeout is %.1f s) and joined again from the same connection at %s, which is what a client does when its poll timer expires (inferred from the wire: the client sent no reason)",
						leaving, at.Sub(lastFetch).Seconds(), rt.Seconds(), stamp(rejoin))
				}
				f.Explanation = fmt.Sprintf("%s %s: the application took longer between two poll() calls than max.poll.interval.ms (the rebalance timeout). Its partitions were reassigned, the group rebalanced, and the records it was processing are processed again by the next owner",
					d.MemberID, what)
				f.Suggestion = advice(PollTimeoutEviction)
				out = append(out, f)
			case d.How == timeline.DepartLeft && staticLeave(gr, d):
				out = append(out, e.staticExpiry(g, gen, d))
			case d.How == timeline.DepartSessionTimeout:
				f := newFinding(SessionTimeoutEviction, g.id, Critical, at, d.MemberID)
				f.Members = e.infos(g, d.MemberID)
				f.Partitions = copyParts(d.Partitions)
				f.Evidence["generation"] = gen.Generation
				f.Evidence["evidence"] = d.Reason
				if known {
					if m.SessionTimeout > 0 {
						f.Evidence["sessionTimeoutMs"] = ms(m.SessionTimeout)
					}
					if !m.LastAlive.IsZero() && !m.LastAlive.After(at) {
						f.Evidence["lastSeenAt"] = stamp(m.LastAlive)
						f.Evidence["silenceMs"] = ms(at.Sub(m.LastAlive))
					}
				}
				noLeave := "no LeaveGroup was seen"
				if cm := consumerMemberOf(gr, d.MemberID); cm != nil && gen.Mode == timeline.ModeConsumer {
					// The consumer protocol's session timeout is the
					// broker's: the timeline bounds it from the silence.
					noLeave = "no leave heartbeat was seen"
					f.Evidence["inferred"] = true
					f.Evidence["sessionTimeoutAtMostMs"] = ms(cm.SessionHigh)
					if cm.SessionLow > 0 {
						f.Evidence["sessionTimeoutAtLeastMs"] = ms(cm.SessionLow)
					}
				}
				f.Explanation = fmt.Sprintf("%s sent nothing to the coordinator for longer than its session timeout and was removed; %s, so the process died, froze (a long GC pause, SIGSTOP, a blocked heartbeat thread) or lost the network. The group rebalanced without it",
					d.MemberID, noLeave)
				if d.InstanceID != "" {
					f.Explanation += "; as a static member (group.instance.id " + d.InstanceID + ") it sends no LeaveGroup on close, so a restart that takes longer than the session timeout ends like this"
				}
				f.Suggestion = advice(SessionTimeoutEviction)
				out = append(out, f)
			}
		}
	}
	return out
}

// staticLeave reports whether departure d of gr is a KIP-848 static
// member's temporary leave (member epoch -2): the coordinator keeps such
// a member, and its partitions, until its session expires, so a departure
// is its session expiring before it came back.
func staticLeave(gr *timeline.GroupView, d timeline.DepartureView) bool {
	for _, cm := range gr.ConsumerMembers {
		if cm.MemberID != d.MemberID {
			continue
		}
		for _, l := range cm.Leaves {
			if l.At.Equal(d.At) {
				return l.Epoch == -2
			}
		}
	}
	return false
}

// staticExpiry is the session_timeout_eviction of a KIP-848 static member
// that left for a restart (epoch -2) and was not back within its session
// timeout: the epoch without it bounds the session timeout.
func (e *Engine) staticExpiry(g *groupState, gen timeline.GenerationView, d timeline.DepartureView) Finding {
	// The eviction is the epoch without it; the leave when that is
	// unknown.
	removed := gen.JoinCompleted
	f := newFinding(SessionTimeoutEviction, g.id, Critical, later(d.At, removed), d.MemberID)
	f.Members = e.infos(g, d.MemberID)
	f.Partitions = copyParts(d.Partitions)
	f.Evidence["generation"] = gen.Generation
	f.Evidence["staticLeaveAt"] = stamp(d.At)
	f.Evidence["inferred"] = true
	instance := d.InstanceID
	if instance == "" {
		instance = f.Members[0].InstanceID
	}
	f.Evidence["instanceId"] = instance
	if !removed.IsZero() {
		f.Evidence["removedBy"] = stamp(removed)
		f.Evidence["sessionTimeoutAtMostMs"] = ms(removed.Sub(d.At))
	}
	f.Explanation = fmt.Sprintf("%s, a static member (group.instance.id %s), left the group for a restart (a leave heartbeat at member epoch -2): the coordinator kept its partitions for it until its session timeout, unconsumed, and it was not back in time, so group epoch %d reassigned them at %s. A restart that takes longer than the session timeout costs the wait and the move",
		d.MemberID, instance, gen.Generation, stamp(removed))
	f.Suggestion = advice(SessionTimeoutEviction)
	return f
}

// consumerMemberOf is the KIP-848 member id of gr whose session expiry
// the timeline inferred; nil if none.
func consumerMemberOf(gr *timeline.GroupView, id string) *timeline.ConsumerMemberView {
	for i := range gr.ConsumerMembers {
		if cm := &gr.ConsumerMembers[i]; cm.MemberID == id && cm.SessionHigh > 0 {
			return cm
		}
	}
	return nil
}

// lastFetchAny is the time of member id's latest fetch of any partition
// at or before at.
func (e *Engine) lastFetchAny(g *groupState, id string, at time.Time) (time.Time, bool) {
	var best time.Time
	for _, c := range e.connsOf(g, id) {
		for _, p := range c.fetches {
			if !p.at.After(at) && p.at.After(best) {
				best = p.at
			}
		}
	}
	return best, !best.IsZero()
}

func copyParts(p map[string][]int32) map[string][]int32 {
	out := map[string][]int32{}
	for t, ps := range p {
		out[t] = append([]int32{}, ps...)
	}
	return out
}
