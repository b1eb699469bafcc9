package timeline

import (
	"fmt"
	"sort"
	"time"
)

// stormState tracks one group's recent rebalances for storm detection.
type stormState struct {
	window []stormMark // rebalances within the storm window of the latest
	active *storm
	storms []*storm
	// peak is the most members a generation of the group has had: a
	// rebalance that goes past it is the group growing (forming, scaling
	// out), not churn.
	peak int
}

type stormMark struct {
	at     time.Time
	gen    int32
	kind   string
	member string
	growth bool // it took the group past its peak membership
}

// storm is a run of rebalances, each within the storm window of the
// previous, that reached the storm threshold.
type storm struct {
	from, to time.Time
	// marks are its rebalances (of a storm under way, Retain keeps the
	// latest few).
	marks   []stormMark
	count   int       // rebalances in the storm
	last    stormMark // the latest of them
	ended   bool
	endedAt time.Time
}

// countRebalance adds a formed generation to the storm detector. The very
// first generation seen is the group forming, and an empty generation is
// the group going away: neither is churn. A share group's epoch is not a
// rebalance either: its members share partitions, revoke nothing and never
// stop fetching while the coordinator moves assignments, so a run of joins
// and leaves costs no stop-the-world (what a departing member held is told
// by records_abandoned and redelivered instead). A KIP-441 probing
// rebalance is Kafka Streams checking, at the time its leader scheduled,
// whether warm-up tasks caught up: planned, not churn.
func (g *group) countRebalance(gen *generation) {
	s := &g.storm
	growth := len(gen.members) > s.peak
	s.peak = max(s.peak, len(gen.members))
	if gen.prev == nil || gen.phase == phaseEmpty || gen.mode == ModeShare || gen.trigger.kind == TriggerProbingRebalance {
		return
	}
	mark := stormMark{at: gen.start, gen: gen.num, kind: gen.trigger.kind, member: gen.trigger.member, growth: growth}
	if mark.at.IsZero() {
		mark.at = gen.joinEnd
	}
	w := g.e.cfg.StormWindow
	if s.active != nil && mark.at.Sub(s.active.to) > w {
		g.endStorm(s.active.to.Add(w))
	}
	s.window = append(s.window, mark)
	cut := 0
	for cut < len(s.window) && mark.at.Sub(s.window[cut].at) > w {
		cut++
	}
	s.window = s.window[cut:]
	if st := s.active; st != nil {
		st.marks = append(st.marks, mark)
		st.count++
		st.last, st.to = mark, mark.at
		return
	}
	if len(s.window) < g.e.cfg.StormRebalances {
		return
	}
	st := &storm{from: s.window[0].at, to: mark.at, marks: append([]stormMark(nil), s.window...), count: len(s.window), last: mark}
	s.active = st
	s.storms = append(s.storms, st)
	kind, n := st.dominant()
	g.emit(mark.at, KindStorm, gen.num, "", fmt.Sprintf("storm: %d rebalances within %s (gens %d–%d), mostly %s (%d of %d), members %s",
		st.count, human(st.to.Sub(st.from)), st.marks[0].gen, mark.gen, kind, n, st.count, listNames(st.members(), 5)),
		map[string]any{"rebalances": st.count, "dominant_trigger": kind, "members": st.members()})
}

// endStorm closes the active storm at the end of its window.
func (g *group) endStorm(at time.Time) {
	st := g.storm.active
	if st == nil {
		return
	}
	g.storm.active = nil
	st.ended, st.endedAt = true, at
	g.emit(at, KindStormEnded, st.last.gen, "", fmt.Sprintf("storm over: %d rebalances from %s to %s",
		st.count, clock(st.from, g.e.cfg.Location), clock(st.to, g.e.cfg.Location)), map[string]any{"rebalances": st.count})
}

// dominant is the most frequent trigger kind, ties broken by name.
func (st *storm) dominant() (string, int) {
	counts := map[string]int{}
	for _, m := range st.marks {
		counts[m.kind]++
	}
	best, n := "", 0
	for _, k := range sortedKeys(counts) {
		if counts[k] > n {
			best, n = k, counts[k]
		}
	}
	return best, n
}

// members are the members named by the storm's triggers, most frequent
// first.
func (st *storm) members() []string {
	counts := map[string]int{}
	for _, m := range st.marks {
		if m.member != "" {
			counts[m.member]++
		}
	}
	ms := sortedKeys(counts)
	sort.SliceStable(ms, func(i, j int) bool { return counts[ms[i]] > counts[ms[j]] })
	return ms
}

// growth counts its rebalances that took the group past its peak
// membership.
func (st *storm) growth() int {
	n := 0
	for _, m := range st.marks {
		if m.growth {
			n++
		}
	}
	return n
}

func (st *storm) triggers() map[string]int {
	counts := map[string]int{}
	for _, m := range st.marks {
		counts[m.kind]++
	}
	return counts
}
