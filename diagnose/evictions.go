package diagnose

import (
	"fmt"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// parse reads a timeline time (RFC 3339); the zero time for "".
func parse(s string) time.Time {
	t, _ := time.Parse(time.RFC3339Nano, s)
	return t
}

// parsePtr is parse for a nullable time.
func parsePtr(s *string) time.Time {
	if s == nil {
		return time.Time{}
	}
	return parse(*s)
}

// pollReason reports whether a LeaveGroup reason (KIP-800) says the
// client's poll timer expired: the Java client sends "consumer poll
// timeout has expired.", librdkafka "max.poll.interval.ms exceeded".
func pollReason(reason string) bool {
	r := strings.ToLower(reason)
	return strings.Contains(r, "poll timeout") || strings.Contains(r, "max.poll.interval") || strings.Contains(r, "poll interval")
}

// evictions reads the departures of each generation: a member that left
// because its poll timer expired, or was dropped at the join deadline,
// was evicted for a slow poll loop; one whose session expired stopped
// heartbeating.
func (e *Engine) evictions(g *groupState, gr *timeline.GroupReport) []Finding {
	var out []Finding
	for _, gen := range gr.Generations {
		start := parsePtr(gen.StartedAt)
		for _, d := range gen.Departed {
			at := parsePtr(d.At)
			m := g.members[d.MemberID]
			switch {
			case d.How == "left" && pollReason(d.Reason), d.How == "dropped_at_deadline":
				f := newFinding(PollTimeoutEviction, g.id, Critical, at, d.MemberID)
				f.Members = g.infos(d.MemberID)
				f.Partitions = copyParts(d.Partitions)
				f.Evidence["generation"] = gen.Generation
				f.Evidence["how"] = d.How
				if d.Reason != "" {
					f.Evidence["reason"] = d.Reason
				}
				if m != nil && m.rebalance > 0 {
					f.Evidence["rebalanceTimeoutMs"] = ms(m.rebalance)
				} else if gen.RebalanceTimeoutMs != nil {
					f.Evidence["rebalanceTimeoutMs"] = *gen.RebalanceTimeoutMs
				}
				if !start.IsZero() && d.How == "dropped_at_deadline" {
					f.Evidence["rebalanceStartedAt"] = stamp(start)
					f.Evidence["waitedMs"] = ms(at.Sub(start))
				}
				if pos, ok := e.lastFetchAny(g, d.MemberID, at); ok {
					f.Evidence["lastFetchAt"] = stamp(pos)
					f.Evidence["pollGapMs"] = ms(at.Sub(pos))
				}
				what := "left the group saying its poll timer expired"
				if d.How == "dropped_at_deadline" {
					what = "did not rejoin before the join phase's deadline (the largest rebalance timeout) and was removed"
				}
				f.Explanation = fmt.Sprintf("%s %s: the application took longer between two poll() calls than max.poll.interval.ms (the rebalance timeout). Its partitions were reassigned, the group rebalanced, and the records it was processing are processed again by the next owner",
					d.MemberID, what)
				f.Suggestion = advice(PollTimeoutEviction)
				out = append(out, f)
			case d.How == "session_timeout":
				f := newFinding(SessionTimeoutEviction, g.id, Critical, at, d.MemberID)
				f.Members = g.infos(d.MemberID)
				f.Partitions = copyParts(d.Partitions)
				f.Evidence["generation"] = gen.Generation
				f.Evidence["evidence"] = d.Reason
				if m != nil {
					if m.session > 0 {
						f.Evidence["sessionTimeoutMs"] = ms(m.session)
					}
					if !m.lastActive.IsZero() && !m.lastActive.After(at) {
						f.Evidence["lastSeenAt"] = stamp(m.lastActive)
						f.Evidence["silenceMs"] = ms(at.Sub(m.lastActive))
					}
				}
				f.Explanation = fmt.Sprintf("%s sent nothing to the coordinator for longer than its session timeout and was removed; no LeaveGroup was seen, so the process died, froze (a long GC pause, SIGSTOP, a blocked heartbeat thread) or lost the network. The group rebalanced without it",
					d.MemberID)
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

// lastFetchAny is the time of member id's latest fetch of any partition
// at or before at.
func (e *Engine) lastFetchAny(g *groupState, id string, at time.Time) (time.Time, bool) {
	var best time.Time
	for _, c := range e.connsOf(g, g.members[id]) {
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
