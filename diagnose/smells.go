package diagnose

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/kproxy-dev/kproxy/internal/unixnano"

	"github.com/kproxy-dev/kproxy/timeline"
)

// minLoop is how many rebalances, cooperative follow-ups and growth not
// counted, a storm needs to be a rebalance loop.
const minLoop = 3

// loops makes a rebalance_loop finding per storm the timeline detected
// that counts at least minLoop rebalances of their own cause; in a
// KIP-848 group, at least minLoop epochs caused by a member going away.
func (e *Engine) loops(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for _, st := range gr.Storms {
		// A cooperative follow-up is the second half of the rebalance it
		// follows (KIP-429), not a new cause: a member joining a
		// cooperative group and another leaving later is no loop. A
		// rebalance that took the group past its peak membership is the
		// group forming one member at a time or scaling out: growth, and
		// no rebalance ever starts it again.
		causal := st.Rebalances - st.Triggers["cooperative_follow_up"] - st.Growth
		consumer := consumerStorm(gr, st)
		var revoked, fenced int
		if consumer {
			// A KIP-848 epoch stops nobody: members joining one after
			// another, a subscription change or the coordinator's batched
			// assignment bump it at no cost to the others. What costs is a
			// member going away (leaving, fenced, expired): its partitions
			// stop until their new owner starts, and are processed again
			// from the last commit.
			causal = st.Triggers["member_left"] + st.Triggers["member_fenced"] + st.Triggers["session_timeout"]
			revoked, fenced = consumerCost(gr, st)
		}
		if causal < minLoop {
			continue
		}
		f := newFinding(RebalanceLoop, g.id, Critical, st.From, "")
		f.Evidence["causalRebalances"] = causal
		if consumer {
			f.Evidence["revokedPartitions"] = revoked
			f.Evidence["fencings"] = fenced
		}
		f.Members = e.infos(g, st.Members...)
		f.Evidence["rebalances"] = st.Rebalances
		f.Evidence["generations"] = st.Generations
		f.Evidence["triggers"] = st.Triggers
		f.Evidence["dominantTrigger"] = st.DominantTrigger
		f.Evidence["from"] = stamp(st.From)
		f.Evidence["to"] = stamp(st.To)
		f.Evidence["ongoing"] = st.Ended.IsZero()
		why := map[string]string{
			"member_joined":         "members keep joining: members kicked out (by the rebalance timeout or their session) rejoin and start the next rebalance, or instances keep restarting",
			"member_left":           "members keep leaving: poll timeouts (the client leaves when max.poll.interval.ms runs out) or restarts",
			"session_timeout":       "members keep missing their session timeout while the group rebalances, each expiry starting another rebalance",
			"cooperative_follow_up": "cooperative follow-up rebalances that do not settle",
			"unknown":               "kproxy did not see what triggered them (a connection it does not carry, or traffic before it started)",
			"subscription_changed":  "members keep changing their subscription (different subscriptions in one group make every join a change)",
		}[st.DominantTrigger]
		if why == "" {
			why = "the triggers are mixed"
		}
		f.Explanation = fmt.Sprintf("%d rebalances from %s to %s, each starting before the group could settle; most were triggered by %s: %s",
			st.Rebalances, stamp(st.From), stamp(st.To), st.DominantTrigger, why)
		if consumer {
			f.Explanation = fmt.Sprintf("%d group epochs from %s to %s (KIP-848: no stop-the-world), %d of them because a member went away (left, fenced or timed out), which cost %d partition revocations and %d fencings; most were triggered by %s: %s",
				st.Rebalances, stamp(st.From), stamp(st.To), causal, revoked, fenced, st.DominantTrigger, why)
		}
		if mg := migrationDuring(gr, st.From, st.To); mg != nil {
			f.Evidence["migration"] = mg.Direction
			f.Explanation += fmt.Sprintf("; an online %s between the classic and the consumer protocol was under way (started %s): a roll that replaces each member by one of the other protocol makes two rebalances per member, which a rolling restart of the same clients would make too", mg.Direction, stamp(mg.Started))
		}
		f.Suggestion = advice(RebalanceLoop)
		out = append(out, f)
	}
	return out
}

// generationSmells reads each formed generation for mixed assignors,
// heterogeneous subscriptions and an eager assignor in a large group; each
// is reported once per distinct combination.
func (e *Engine) generationSmells(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	seen := map[string]bool{}
	once := func(k string) bool { ok := !seen[k]; seen[k] = true; return ok }
	eagerLarge := 0
	var eagerFirst *timeline.GenerationView
	eagerSTW := 0.0
	for i := range gr.Generations {
		gen := &gr.Generations[i]
		at := gen.Stable
		if at.IsZero() {
			at = gen.JoinCompleted
		}
		if at.IsZero() {
			continue
		}
		if joins := g.joins[gen.Generation]; len(joins) >= 2 {
			byKey := map[string][]string{}
			for _, id := range sortedKeys(joins) {
				k := joins[id].Value()
				byKey[k] = append(byKey[k], id)
			}
			if keys := sortedKeys(byKey); len(keys) > 1 && once("assignors:"+strings.Join(keys, "|")) {
				f := newFinding(MixedAssignors, g.id, Warning, at, "")
				var ids []string
				offered := map[string]any{}
				for _, k := range keys {
					ids = append(ids, byKey[k]...)
					offered[k] = byKey[k]
				}
				f.Members = e.infos(g, ids...)
				f.Evidence["generation"] = gen.Generation
				f.Evidence["offered"] = offered
				f.Evidence["chosen"] = gen.Protocol
				f.Explanation = fmt.Sprintf("in generation %d the members do not offer the same assignors (or protocol type): the group picks %q, the one all support, which may not be the one you configured (a partly rolled out change of partition.assignment.strategy). A member with nothing in common cannot join (INCONSISTENT_GROUP_PROTOCOL)",
					gen.Generation, gen.Protocol)
				f.Suggestion = advice(MixedAssignors)
				out = append(out, f)
			}
		}
		subs := map[string][]string{}
		for _, m := range gen.Members {
			if m.Subscription != nil {
				s := slices.Clone(m.Subscription)
				slices.Sort(s)
				subs[strings.Join(s, ",")] = append(subs[strings.Join(s, ",")], m.MemberID)
			}
		}
		if keys := sortedKeys(subs); len(keys) > 1 && once("subscriptions:"+strings.Join(keys, "|")) {
			f := newFinding(HeterogeneousSubscriptions, g.id, Warning, at, "")
			var ids []string
			bySub := map[string]any{}
			for _, k := range keys {
				ids = append(ids, subs[k]...)
				bySub["["+k+"]"] = subs[k]
			}
			f.Members = e.infos(g, ids...)
			f.Evidence["generation"] = gen.Generation
			f.Evidence["subscriptions"] = bySub
			f.Explanation = fmt.Sprintf("in generation %d the members subscribe to different topics: assignors spread partitions among the members subscribed to each topic, so some members get far more than others, and with eager assignors every subscription change rebalances the whole group", gen.Generation)
			f.Suggestion = advice(HeterogeneousSubscriptions)
			out = append(out, f)
		}
		if gen.Mode == timeline.ModeEager && len(gen.Members) >= e.cfg.EagerLargeGroup {
			eagerLarge++
			if eagerFirst == nil {
				eagerFirst = gen
			}
			if gen.StopTheWorld >= 0 {
				eagerSTW += ms(gen.StopTheWorld)
			}
		}
	}
	if eagerFirst != nil {
		f := newFinding(EagerLargeGroup, g.id, Info, eagerFirst.Stable, "")
		f.Evidence["members"] = len(eagerFirst.Members)
		f.Evidence["protocol"] = eagerFirst.Protocol
		f.Evidence["eagerRebalances"] = eagerLarge
		f.Evidence["stopTheWorldMs"] = eagerSTW
		f.Evidence["threshold"] = e.cfg.EagerLargeGroup
		f.Explanation = fmt.Sprintf("the group of %d members uses the eager assignor %q: at every rebalance all %d members stop and give up all their partitions, even those that stay; %d such rebalances cost %.1f s of stop-the-world",
			len(eagerFirst.Members), eagerFirst.Protocol, len(eagerFirst.Members), eagerLarge, eagerSTW/1000)
		f.Suggestion = advice(EagerLargeGroup)
		out = append(out, f)
	}
	return out
}

// Kafka's rule for the heartbeat interval is at most a third of the
// session timeout (heartbeat.interval.ms: "typically should be set no
// higher than 1/3 of that value"), so that two heartbeats may be lost
// before the session expires. kproxy sees the gaps between heartbeats,
// not the configured interval: a gap is the interval plus the heartbeat's
// round trip and the client's scheduling, so a client configured at
// exactly a third (kafka-python's defaults: 3 s in a 10 s session) shows
// a median a little above it (3.33 s measured through kproxy).
// cadenceTolerance is the jitter allowed above the third: a quarter of
// it, so that a member is reported when fewer than 2.4 heartbeats fit in
// its session.
const cadenceTolerance = 0.25

// minGaps is how many heartbeat gaps a member needs before its median is
// judged.
const minGaps = 5

// slowGap is the largest median heartbeat gap that passes for a session
// timeout: a third of it plus cadenceTolerance.
func slowGap(session time.Duration) time.Duration {
	return time.Duration(float64(session) / 3 * (1 + cadenceTolerance))
}

// cadence makes a heartbeat_too_slow finding per member whose median gap
// between successful heartbeats passed slowGap (at least minGaps gaps
// seen), stamped when it first did; the evidence has the latest median.
func (e *Engine) cadence(g *groupState) []Finding {
	var out []Finding
	for _, id := range sortedKeys(g.members) {
		m := g.members[id]
		if m.slowSince == 0 {
			continue
		}
		median := m.medianInterval()
		facts := e.facts(g, id)
		session := facts.SessionTimeout
		f := newFinding(HeartbeatTooSlow, g.id, Warning, unixnano.Time(m.slowSince), id)
		f.Members = []Member{memberOf(facts)}
		f.Evidence["medianHeartbeatIntervalMs"] = ms(median.Round(time.Millisecond))
		f.Evidence["sessionTimeoutMs"] = ms(session)
		f.Evidence["heartbeatsPerSession"] = float64(session.Round(time.Millisecond)) / float64(median.Round(time.Millisecond))
		f.Evidence["allowedIntervalMs"] = ms(slowGap(session).Round(time.Millisecond))
		f.Explanation = fmt.Sprintf("this member heartbeats every %.1f s with a session timeout of %.1f s: fewer than three heartbeats fit in a session (Kafka's rule is a heartbeat interval of at most a third of the session timeout; kproxy allows %.1f s for jitter), so one or two lost or delayed heartbeats get it evicted",
			median.Seconds(), session.Seconds(), slowGap(session).Seconds())
		f.Suggestion = advice(HeartbeatTooSlow)
		out = append(out, f)
	}
	return out
}

// medianInterval is the median of the member's latest heartbeat gaps.
func (m *memberState) medianInterval() time.Duration {
	s := slices.Clone(m.act.intervals)
	slices.Sort(s)
	return s[len(s)/2]
}
