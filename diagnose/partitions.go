package diagnose

import (
	"fmt"
	"slices"
	"time"

	"github.com/kproxy-dev/kproxy/timeline"
)

// flaps finds partitions whose owner went back to the owner before the
// previous one (A→B→A) within FlapWindow at least twice, over the
// generations whose assignments are known: one finding per group.
func (e *Engine) flaps(g *groupState, gr *timeline.GroupView) []Finding {
	type own struct {
		member string
		at     time.Time
	}
	// hist is, per partition, its latest two owners (last, and prev
	// before it) and how many it had (n, up to 2).
	type owners struct {
		prev, last own
		n          int
	}
	hist := map[tp]owners{}
	flapped := map[tp]bool{}
	returns := map[tp]int{}
	var ids []string
	var gens []int32
	var first time.Time
	count := 0
	for _, gen := range gr.Generations {
		at := gen.Stable
		if at.IsZero() || gen.Status == "observed" {
			continue
		}
		for _, m := range gen.Members {
			for t, ps := range m.Assignment {
				for _, p := range ps {
					k := tp{t, p}
					h := hist[k]
					if h.n > 0 && h.last.member == m.MemberID {
						continue
					}
					if h.n == 2 && h.prev.member == m.MemberID && at.Sub(h.prev.at) <= e.cfg.FlapWindow {
						returns[k]++
						// One return is a member coming and going (scale
						// out, then in); a second is flapping.
						if returns[k] >= 2 {
							flapped[k] = true
							ids = append(ids, m.MemberID, h.last.member)
							gens = append(gens, gen.Generation)
							count++
							if first.IsZero() {
								first = at
							}
						}
					}
					hist[k] = owners{prev: h.last, last: own{m.MemberID, at}, n: min(h.n+1, 2)}
				}
			}
		}
	}
	if len(flapped) == 0 {
		return nil
	}
	f := newFinding(PartitionFlap, g.id, Warning, first, "")
	f.Members = e.infos(g, ids...)
	f.Partitions = partitionsMap(flapped)
	f.Evidence["flaps"] = count
	f.Evidence["generations"] = uniqInt32(gens)
	f.Evidence["windowMs"] = ms(e.cfg.FlapWindow)
	f.Explanation = fmt.Sprintf("partitions kept going back and forth between members (%d returns to the owner before the previous one, each within %s): each move stops the partition, makes the new owner resume from the last commit, and re-processes the records the old owner had not committed. Flapping comes from members repeatedly joining and leaving (restarts, poll-timeout evictions) under an assignor that does not keep assignments (range, roundrobin)",
		count, e.cfg.FlapWindow)
	f.Suggestion = advice(PartitionFlap)
	return []Finding{f}
}

func uniqInt32(v []int32) []int32 {
	seen := map[int32]bool{}
	out := []int32{}
	for _, x := range v {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// unowned finds partitions of subscribed topics that a stable generation
// left without owner for at least UnownedAfter (until the next rebalance
// or the end of the input).
func (e *Engine) unowned(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	for i, gen := range gr.Generations {
		at := gen.Stable
		if at.IsZero() || gen.Status == "observed" || len(gen.Unassigned) == 0 || followedUp(gr, i) {
			continue
		}
		until := lastedUntil(gr, i)
		if until.Sub(at) < e.cfg.UnownedAfter {
			continue
		}
		subscribed := map[string]bool{}
		for _, m := range gen.Members {
			for _, t := range m.Subscription {
				subscribed[t] = true
			}
		}
		set := map[tp]bool{}
		for t, ps := range gen.Unassigned {
			if !subscribed[t] {
				continue // nobody wants it any more: not a fault
			}
			for _, p := range ps {
				set[tp{t, p}] = true
			}
		}
		if len(set) == 0 {
			continue
		}
		f := newFinding(PartitionUnowned, g.id, Critical, at, "")
		// The leader computed the assignment that left them out (none
		// when unknown, or KIP-848's, where the coordinator assigns).
		f.Members = e.infos(g, gen.Leader)
		f.Partitions = partitionsMap(set)
		f.Evidence["generation"] = gen.Generation
		f.Evidence["unownedMs"] = ms(until.Sub(at))
		f.Evidence["until"] = stamp(until)
		f.Evidence["protocol"] = gen.Protocol
		f.Explanation = fmt.Sprintf("generation %d assigned these partitions of subscribed topics to nobody, and they stayed unconsumed for %.1f s: the leader's assignor did not know them (stale metadata, a custom assignor) or the member that should own them never received its assignment",
			gen.Generation, until.Sub(at).Seconds())
		f.Suggestion = advice(PartitionUnowned)
		out = append(out, f)
	}
	return out
}

// idle makes member_without_partitions findings for stable generations
// that left members with nothing for at least UnownedAfter (shorter is a
// passing state of a rebalance). A classic Kafka Streams member with
// standby tasks and no partition is not idle: it keeps state warm, or
// restores a task as a KIP-441 warm-up until a probing rebalance moves it.
func (e *Engine) idle(g *groupState, gr *timeline.GroupView) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for i, gen := range gr.Generations {
		at := gen.Stable
		nothing := idleMembers(gen)
		if at.IsZero() || gen.Status == "observed" || len(nothing) == 0 || followedUp(gr, i) ||
			lastedUntil(gr, i).Sub(at) < e.cfg.UnownedAfter {
			continue // a passing state of a rebalance
		}
		// How many partitions the group could spread: the topics' sizes
		// from Metadata, else what was assigned.
		topics := map[string]bool{}
		assigned := 0
		for _, m := range gen.Members {
			for _, t := range m.Subscription {
				topics[t] = true
			}
			for _, ps := range m.Assignment {
				assigned += len(ps)
			}
		}
		total := 0
		for t := range topics {
			total += int(e.tl.PartitionCount(t))
		}
		for t, ps := range gen.Unassigned {
			if topics[t] {
				assigned += len(ps)
			}
		}
		total = max(total, assigned)
		sev, why := Warning, "there are enough partitions for every member: the assignor (or the members' subscriptions) left these members idle"
		if total < len(gen.Members) {
			sev, why = Info, fmt.Sprintf("the group has more members (%d) than partitions (%d): the extra members wait idle, which is only useful as hot standby", len(gen.Members), total)
		}
		key := fmt.Sprintf("idle:%v:%d:%d", nothing, total, len(gen.Members))
		if seen[key] {
			continue
		}
		seen[key] = true
		f := newFinding(MemberWithoutPartitions, g.id, sev, at, "")
		f.Members = e.infos(g, nothing...)
		f.Evidence["generation"] = gen.Generation
		f.Evidence["members"] = len(gen.Members)
		f.Evidence["partitions"] = total
		f.Evidence["protocol"] = gen.Protocol
		f.Explanation = fmt.Sprintf("in generation %d, %d of %d members were assigned no partition: %s",
			gen.Generation, len(nothing), len(gen.Members), why)
		f.Suggestion = advice(MemberWithoutPartitions)
		out = append(out, f)
	}
	return out
}

// idleMembers is the members gen left with nothing and, for a classic
// Kafka Streams member, no standby task either.
func idleMembers(gen timeline.GenerationView) []string {
	var out []string
	for _, id := range gen.MembersWithNothing {
		i := slices.IndexFunc(gen.Members, func(m timeline.GenerationMember) bool { return m.MemberID == id })
		if i < 0 || len(gen.Members[i].StreamsStandby) == 0 {
			out = append(out, id)
		}
	}
	return out
}

// followedUp reports whether generation i is the first round of a
// cooperative rebalance (KIP-429): its revoked partitions are unowned and
// a newcomer gets nothing until the follow-up generation assigns them,
// by design.
func followedUp(gr *timeline.GroupView, i int) bool {
	if i+1 >= len(gr.Generations) {
		return false
	}
	f := gr.Generations[i+1].FollowUpOf
	return f != 0 && f == gr.Generations[i].Generation
}

// lastedUntil is when generation i stopped being current: the start of the
// next rebalance, or the group's last exchange.
func lastedUntil(gr *timeline.GroupView, i int) time.Time {
	if i+1 < len(gr.Generations) {
		if s := gr.Generations[i+1].Started; !s.IsZero() {
			return s
		}
	}
	return gr.LastSeen
}
