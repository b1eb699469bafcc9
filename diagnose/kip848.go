package diagnose

import (
	"fmt"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/internal/unixnano"

	"github.com/twmb/franz-go/pkg/kerr"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/timeline"
)

// KIP-848 groups (ConsumerGroupHeartbeat). There is no stop-the-world:
// the coordinator bumps the group epoch and each member reconciles on its
// own, revoking what moves. The causes are those of classic groups, told
// by other signs: a leave heartbeat (member epoch -1, -2 for a static
// member) instead of a LeaveGroup, a session expiry the timeline infers
// from a member's silence (the session timeout is the broker's), and
// fencing (FENCED_MEMBER_EPOCH, UNKNOWN_MEMBER_ID, STALE_MEMBER_EPOCH)
// instead of REBALANCE_IN_PROGRESS. What a KIP-848 group loses is told by
// cost: partitions no member consumes, revocations, fencings; an epoch
// bump costs nothing by itself.

// consumerHeartbeat records, of a ConsumerGroupHeartbeat, what the
// inference of a poll timeout needs (its leaves, its joins and where
// they came from) and makes the static_member_fenced finding of a
// FENCED_INSTANCE_ID answer.
func (e *Engine) consumerHeartbeat(g *groupState, ev *decode.Event, touch func(string) *memberState) {
	h := ev.ConsumerGroupHeartbeat
	id := h.AssignedMemberID
	if id == "" {
		id = h.MemberID
	}
	m := touch(id)
	if m == nil {
		return
	}
	switch {
	case h.MemberEpoch < 0:
		e.left(g, m, ev.At)
	case h.MemberEpoch == 0 && ev.Responded() && h.ErrorCode == 0:
		m.act.lastJoin = unixnano.Of(ev.At)
		if c, ok := e.identOf(ev.ClientAddr); ok && c.software.Name != "" {
			m.learn(connIdent{software: c.software})
		}
		g.setAddr(ev.ClientAddr, id)
		g.joined(ev.ClientAddr, ev.At)
	}
	if ev.Responded() && h.ErrorCode == kerr.FencedInstanceID.Code {
		instance := ""
		if h.InstanceID != nil {
			instance = *h.InstanceID
		}
		e.fenced(g, ev, id, instance)
	}
}

// fenceLoopWindow is how close a member's fencings must follow each other
// to be one fencing loop, and minLoop (smells.go) how many make one: a
// member fenced three times within ten minutes each of the previous
// keeps failing the same way, as a rebalance loop keeps rebalancing.
const fenceLoopWindow = 10 * time.Minute

// consumer makes the KIP-848 findings of gr: fencing loops, members that
// take too long to reach their target assignment, and partitions the
// group's epochs left to no member.
func (e *Engine) consumer(g *groupState, gr *timeline.GroupView) []Finding {
	if len(gr.ConsumerMembers) == 0 {
		return nil
	}
	var out []Finding
	out = append(out, e.fencingLoops(g, gr)...)
	out = append(out, e.reconciliation(g, gr)...)
	out = append(out, e.consumerUnowned(g, gr)...)
	return out
}

// consumerMember is m as a finding names it.
func consumerMember(m *timeline.ConsumerMemberView) Member {
	return Member{MemberID: m.MemberID, ClientID: m.ClientID, InstanceID: m.InstanceID, ClientAddr: m.ClientAddr}
}

// assignedAt is m's assignment from its latest step before t (nil none).
func assignedAt(m *timeline.ConsumerMemberView, t time.Time) map[string][]int32 {
	var a map[string][]int32
	for _, s := range m.Steps {
		if !s.At.Before(t) {
			break
		}
		a = s.Assigned
	}
	return a
}

// fencingLoops makes a fencing_loop finding per run of at least minLoop
// fencings of one member, each within fenceLoopWindow of the previous.
func (e *Engine) fencingLoops(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for i := range gr.ConsumerMembers {
		m := &gr.ConsumerMembers[i]
		// A fencing answered to a member whose session the timeline found
		// expired, before it joined again, is that expiry's departure.
		fs := slices.DeleteFunc(slices.Clone(m.Fences), func(fe timeline.FenceView) bool { return afterExpiry(m, fe.At) })
		for start := 0; start < len(fs); {
			end := start + 1
			for end < len(fs) && fs[end].At.Sub(fs[end-1].At) <= fenceLoopWindow {
				end++
			}
			if run := fs[start:end]; len(run) >= minLoop {
				out = append(out, e.fencingLoop(g, m, run))
			}
			start = end
		}
	}
	return out
}

// afterExpiry reports whether t is after m's inferred session expiry with
// no join of m in between.
func afterExpiry(m *timeline.ConsumerMemberView, t time.Time) bool {
	if m.Expired.IsZero() || t.Before(m.Expired) {
		return false
	}
	for _, j := range m.Joins {
		if j.After(m.Expired) && j.Before(t) {
			return false
		}
	}
	return true
}

// fencingLoop is the finding of one run of fencings of m.
func (e *Engine) fencingLoop(g *groupState, m *timeline.ConsumerMemberView, run []timeline.FenceView) Finding {
	f := newFinding(FencingLoop, g.id, Critical, run[0].At, m.MemberID)
	f.Members = []Member{consumerMember(m)}
	errs := map[string]int{}
	epochs := []int32{}
	lost := map[tp]bool{}
	for _, fe := range run {
		errs[fe.Error]++
		epochs = append(epochs, fe.Epoch)
		for t, ps := range assignedAt(m, fe.At) {
			for _, p := range ps {
				lost[tp{t, p}] = true
			}
		}
	}
	rejoins := 0
	for _, j := range m.Joins {
		if j.After(run[0].At) {
			rejoins++
		}
	}
	last := run[len(run)-1].At
	f.Partitions = partitionsMap(lost)
	f.Evidence["fencings"] = len(run)
	f.Evidence["errors"] = errs
	f.Evidence["memberEpochs"] = epochs
	f.Evidence["from"] = stamp(run[0].At)
	f.Evidence["to"] = stamp(last)
	f.Evidence["rejoins"] = rejoins
	if m.RebalanceTimeout > 0 {
		f.Evidence["rebalanceTimeoutMs"] = ms(m.RebalanceTimeout)
	}
	f.Explanation = fmt.Sprintf("the coordinator fenced %s %d times from %s to %s (%s): each time the member lost its partitions, rejoined with epoch 0 and was assigned partitions again, which moved them twice and had them processed again from the last commit. A member is fenced when its heartbeats stop for its session, when it does not revoke within its rebalance timeout, or when it heartbeats at an epoch the coordinator no longer has (a client that keeps a stale epoch after an error)",
		m.MemberID, len(run), stamp(run[0].At), stamp(last), listCounts(errs))
	f.Suggestion = advice(FencingLoop)
	return f
}

// listCounts renders counts as "A ×2, B ×1", by name.
func listCounts(counts map[string]int) string {
	s := ""
	for _, k := range sortedKeys(counts) {
		if s != "" {
			s += ", "
		}
		s += fmt.Sprintf("%s ×%d", k, counts[k])
	}
	return s
}

// reconciliation makes a reconciliation_stuck finding for each member
// that, after a group epoch formed, did not reach it (nor a later one)
// within Config.UnownedAfter: partitions it
// must revoke, or is waiting for, are not consumed meanwhile. A wait
// that ends with the member's leave or session expiry is told by the
// eviction kinds instead; one that ends with a fencing is told here (the
// coordinator fences a member that does not revoke within its rebalance
// timeout).
func (e *Engine) reconciliation(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	byID := map[string]*timeline.ConsumerMemberView{}
	for i := range gr.ConsumerMembers {
		byID[gr.ConsumerMembers[i].MemberID] = &gr.ConsumerMembers[i]
	}
	waitedUntil := map[string]time.Time{} // the end of each member's latest wait looked at
	for i, gen := range gr.Generations {
		formed := gen.JoinCompleted
		if gen.Mode != timeline.ModeConsumer || formed.IsZero() {
			continue
		}
		for _, gm := range gen.Members {
			cm := byID[gm.MemberID]
			// A member that joined after the epoch formed waits from its
			// join.
			from := later(formed, gm.Joined)
			if cm == nil || cm.Protocol != timeline.ProtocolConsumer || from.Before(waitedUntil[gm.MemberID]) {
				continue
			}
			until, how := e.waitEnd(gr, i, cm, from)
			waitedUntil[gm.MemberID] = until
			if how == "left" || how == "session_timeout" || until.Sub(from) < e.cfg.UnownedAfter {
				continue
			}
			f := newFinding(ReconciliationStuck, g.id, Warning, from, gm.MemberID)
			f.Members = []Member{consumerMember(cm)}
			f.Evidence["groupEpoch"] = gen.Generation
			f.Evidence["epochFormedAt"] = stamp(formed)
			f.Evidence["waitedFrom"] = stamp(from)
			f.Evidence["waitedMs"] = ms(until.Sub(from))
			f.Evidence["until"] = stamp(until)
			f.Evidence["outcome"] = how
			if cm.RebalanceTimeout > 0 {
				f.Evidence["rebalanceTimeoutMs"] = ms(cm.RebalanceTimeout)
			}
			revoking := map[tp]bool{}
			for _, s := range cm.Steps {
				if !s.At.Before(from) && s.At.Before(until) {
					for t, ps := range s.Revoked {
						for _, p := range ps {
							revoking[tp{t, p}] = true
						}
					}
				}
			}
			f.Partitions = partitionsMap(revoking)
			outcome := map[string]string{
				"reached": "it reached the epoch in the end",
				"fenced":  "the coordinator fenced it in the end (a member that does not revoke within its rebalance timeout is removed)",
				"waiting": "it had still not reached it when the input ended",
			}[how]
			f.Explanation = fmt.Sprintf("group epoch %d formed at %s; %s did not reach it for %.1f s (%s). A member reaches the epoch once it has revoked what the target assignment takes from it: the partitions it must give up, and those other members wait for, are not consumed meanwhile. The consumer revokes in poll(), so a slow poll loop or a revocation callback that blocks (a long commit) holds the group's reassignment",
				gen.Generation, stamp(formed), gm.MemberID, until.Sub(from).Seconds(), outcome)
			f.Suggestion = advice(ReconciliationStuck)
			out = append(out, f)
		}
	}
	return out
}

// waitEnd is when member cm's wait, from from, for group epoch i of gr
// (or a later one) ended, and how: "reached" (the first later epoch it reached),
// "left", "session_timeout", "fenced", or "waiting" at the group's last
// exchange.
func (e *Engine) waitEnd(gr *timeline.GroupView, i int, cm *timeline.ConsumerMemberView, from time.Time) (time.Time, string) {
	end, how := gr.LastSeen, "waiting"
	take := func(t time.Time, h string) {
		if !t.IsZero() && !t.Before(from) && t.Before(end) {
			end, how = t, h
		}
	}
	for _, gen := range gr.Generations[i:] {
		for _, m := range gen.Members {
			if m.MemberID == cm.MemberID {
				take(m.Reached, "reached")
			}
		}
	}
	for _, l := range cm.Leaves {
		take(l.At, "left")
	}
	for _, fe := range cm.Fences {
		take(fe.At, "fenced")
	}
	take(cm.Expired, "session_timeout")
	return end, how
}

// consumerUnowned makes a partition_unowned finding for each KIP-848
// group epoch that left partitions of its members' topics (their counts
// from Metadata) to no member for at least Config.UnownedAfter: from the
// last change of the members' assignments in the epoch to the next epoch
// (or the group's last exchange). Partitions wait unassigned while their
// previous owner revokes them; that lasts a heartbeat or two.
func (e *Engine) consumerUnowned(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for i, gen := range gr.Generations {
		if gen.Mode != timeline.ModeConsumer || gen.JoinCompleted.IsZero() || len(gen.Members) == 0 {
			continue
		}
		until := lastedUntil(gr, i)
		held := map[tp]bool{}
		topics := map[string]bool{}
		complete := true
		for _, m := range gen.Members {
			if m.Assignment == nil {
				complete = false
			}
			for t, ps := range m.Assignment {
				for _, p := range ps {
					held[tp{t, p}] = true
				}
			}
			for _, t := range m.Subscription {
				topics[t] = true
			}
		}
		if !complete {
			continue
		}
		missing := map[tp]bool{}
		for t := range topics {
			for p := range e.tl.PartitionCount(t) {
				if !held[tp{t, p}] {
					missing[tp{t, p}] = true
				}
			}
		}
		if len(missing) == 0 {
			continue
		}
		since := gen.JoinCompleted
		for _, cm := range gr.ConsumerMembers {
			for _, s := range cm.Steps {
				if s.At.After(since) && s.At.Before(until) {
					since = s.At
				}
			}
		}
		if until.Sub(since) < e.cfg.UnownedAfter {
			continue
		}
		f := newFinding(PartitionUnowned, g.id, Critical, since, "")
		f.Partitions = partitionsMap(missing)
		f.Evidence["generation"] = gen.Generation
		f.Evidence["unownedMs"] = ms(until.Sub(since))
		f.Evidence["until"] = stamp(until)
		f.Evidence["protocol"] = gen.Protocol
		var waiting []string
		for _, cm := range gr.ConsumerMembers {
			if cm.Active && len(cm.Revoking) > 0 {
				waiting = append(waiting, cm.MemberID)
			}
		}
		f.Members = e.infos(g, waiting...)
		assignor := "the server assignor"
		if gen.Protocol != "" {
			assignor += fmt.Sprintf(" (%s)", gen.Protocol)
		}
		f.Explanation = fmt.Sprintf("in group epoch %d no member was assigned these partitions of the members' topics for %.1f s: the coordinator's target assignment gives a partition to its new owner only once the previous owner has revoked it, so a member that does not revoke (named here when the timeline saw it told to) holds them unconsumed; with none, %s left them out",
			gen.Generation, until.Sub(since).Seconds(), assignor)
		f.Suggestion = advice(PartitionUnowned)
		out = append(out, f)
	}
	return out
}

// consumerStorm reports whether storm st of gr is of KIP-848 group
// epochs that stop nobody: an epoch of a group being migrated makes each
// of its classic members rejoin, a stop-the-world for them, so a storm
// with a classic member in one of its epochs is judged as a classic one.
func consumerStorm(gr *timeline.GroupView, st timeline.StormView) bool {
	consumer := false
	for _, gen := range gr.Generations {
		if !slices.Contains(st.Generations, gen.Generation) {
			continue
		}
		if gen.Mode != timeline.ModeConsumer {
			return false
		}
		consumer = true
		for _, m := range gen.Members {
			if m.Protocol == timeline.ProtocolClassic {
				return false
			}
		}
	}
	return consumer
}

// consumerCost is what the epochs of storm st of gr cost its members:
// the partitions revoked from members (each stops consuming them until
// the new owner starts) and the fencings, from st.From to the end of
// the storm.
func consumerCost(gr *timeline.GroupView, st timeline.StormView) (revoked, fenced int) {
	end := st.To
	if !st.Ended.IsZero() {
		end = st.Ended
	}
	in := func(t time.Time) bool { return !t.Before(st.From) && !t.After(end) }
	for _, cm := range gr.ConsumerMembers {
		for _, s := range cm.Steps {
			if in(s.At) {
				for _, ps := range s.Revoked {
					revoked += len(ps)
				}
			}
		}
		for _, fe := range cm.Fences {
			if in(fe.At) {
				fenced++
			}
		}
	}
	return revoked, fenced
}
