package timeline

import (
	"strings"
	"time"
)

// recentWindow is the span GroupSummary.RebalancesLastHour counts over,
// ending at the group's last seen time (the traffic's clock, never the
// wall clock, so a replay tells the same).
const recentWindow = time.Hour

// GroupSummary is one group at a glance: a row of the web page's group
// list, what an operator scans for. A Snapshot keeps one per group, built
// from the group's state (or, for a report that is not live, with
// Summarize), so that listing every group decodes none.
// Counts cover the generations memory keeps (see Retention).
type GroupSummary struct {
	Group         string `json:"group"`         // the group id
	GroupProtocol string `json:"groupProtocol"` // "classic", "consumer" (KIP-848), "share" (KIP-932) or "streams" (KIP-1071)
	Assignor      string `json:"assignor"`      // the latest generation's assignor; "" unknown
	// State is the latest generation's status, or "rebalancing" while a
	// rebalance has formed no generation yet; "unknown" without either.
	State              string  `json:"state"`
	Generation         int32   `json:"generation"`         // the latest generation (KIP-848, streams: group epoch); 0 none
	Members            int     `json:"members"`            // members of the latest generation; streams groups: live members
	LastRebalance      *string `json:"lastRebalance"`      // start of the latest rebalance; null none seen
	LastTrigger        string  `json:"lastTrigger"`        // its trigger kind; "" none
	RebalancesLastHour int     `json:"rebalancesLastHour"` // rebalances started within the hour before LastSeen
	Storm              bool    `json:"storm"`              // the latest storm is ongoing
	SuspectCommits     int     `json:"suspectCommits"`     // suspect committed partitions in the generations kept
	FailedCommits      int     `json:"failedCommits"`      // failed commits during revocation in the generations kept
	LastSeen           string  `json:"lastSeen"`           // the group's last response seen
	// MemberProtocols counts the latest generation's members by their
	// protocol ("classic", "consumer", "share"): both during an online
	// migration; empty without a generation.
	MemberProtocols map[string]int `json:"memberProtocols"`
	// Migration is the direction ("upgrade" or "downgrade") of an online
	// migration under way at LastSeen; "" if none.
	Migration string `json:"migration"`
}

// Summarize is g at a glance.
func Summarize(g *GroupReport) GroupSummary {
	s := GroupSummary{Group: g.Group, GroupProtocol: g.GroupProtocol, State: "unknown", LastSeen: g.LastSeen,
		MemberProtocols: map[string]int{}}
	if n := len(g.Migrations); n > 0 && g.Migrations[n-1].CompletedAt == nil {
		s.Migration = g.Migrations[n-1].Direction
	}
	last, lastErr := time.Parse(time.RFC3339Nano, g.LastSeen)
	for i := range g.Generations {
		gen := &g.Generations[i]
		if gen.StartedAt != nil && IsRebalance(gen) {
			s.LastRebalance, s.LastTrigger = gen.StartedAt, gen.Trigger.Kind
			if at, err := time.Parse(time.RFC3339Nano, *gen.StartedAt); err == nil && lastErr == nil && last.Sub(at) <= recentWindow {
				s.RebalancesLastHour++
			}
		}
		for _, c := range gen.CommitsDuringRevocation {
			if c.Failed {
				s.FailedCommits++
			}
		}
		s.SuspectCommits += len(gen.SuspectCommits)
	}
	if n := len(g.Generations); n > 0 {
		gen := &g.Generations[n-1]
		s.State, s.Generation, s.Members, s.Assignor = gen.Status, gen.Generation, len(gen.Members), gen.Protocol
		for _, m := range gen.Members {
			s.MemberProtocols[m.Protocol]++
		}
	}
	if p := g.PendingRebalance; p != nil {
		s.State = "rebalancing"
		if p.StartedAt != nil {
			s.LastRebalance, s.LastTrigger = p.StartedAt, p.Trigger.Kind
		}
	}
	if n := len(g.Storms); n > 0 {
		s.Storm = g.Storms[n-1].Ongoing
	}
	if g.Streams != nil {
		summarizeStreams(&s, g.Streams, last, lastErr == nil)
	}
	return s
}

// summarizeStreams fills s from a streams group's story, which has no
// generations: its epochs are its rebalances, and its state is
// streamsSummaryState's.
func summarizeStreams(s *GroupSummary, st *StreamsReport, last time.Time, lastKnown bool) {
	s.Generation, s.Assignor = st.GroupEpoch, st.Assignor
	reached := true
	for _, m := range st.Members {
		if m.Status == "active" {
			s.Members++
			reached = reached && m.MemberEpoch == st.GroupEpoch
		}
	}
	s.State = streamsSummaryState(st.State, s.Members, reached)
	for _, e := range st.Epochs {
		at := e.At
		s.LastRebalance, s.LastTrigger = &at, e.Trigger.Kind
		if t, err := time.Parse(time.RFC3339Nano, e.At); err == nil && lastKnown && last.Sub(t) <= recentWindow {
			s.RebalancesLastHour++
		}
	}
}

// IsRebalance says whether gen was formed by a rebalance kproxy saw start:
// not a generation first seen after its rebalance ("observed"), nor the
// group going away ("empty").
func IsRebalance(gen *GenerationReport) bool {
	return gen.Status != "observed" && gen.Status != "empty"
}

// summary is Summarize(g.report()) built from the group's state, rendering
// no report: what each publish asks of every group that changed. A
// dormant group's is the one it kept when it went to sleep.
// TestSummaryIsSummarize holds the two equal.
func (g *group) summary() GroupSummary {
	if d := g.dormant; d != nil {
		return d.snap.summary
	}
	s := GroupSummary{Group: g.id, GroupProtocol: "classic", State: "unknown", LastSeen: stamp(g.lastSeen),
		MemberProtocols: map[string]int{}}
	switch {
	case g.streams != nil:
		s.GroupProtocol = "streams"
	case g.consumer != nil && g.consumer.share != nil:
		s.GroupProtocol = "share"
	case g.consumer != nil:
		s.GroupProtocol = "consumer"
	}
	if n := len(g.migrations); n > 0 && g.migrations[n-1].completedAt.IsZero() {
		s.Migration = g.migrations[n-1].direction
	}
	// As Summarize reads them: the times in the report, to the nanosecond
	// and without a monotonic reading.
	last := g.lastSeen.Round(0)
	var lastStart time.Time
	for _, gen := range g.gens {
		if !gen.start.IsZero() && !gen.midway && gen.phase != phaseEmpty {
			lastStart, s.LastTrigger = gen.start, gen.triggerKind()
			if last.Sub(gen.start.Round(0)) <= recentWindow {
				s.RebalancesLastHour++
			}
		}
		if f := gen.frozen; f != nil {
			s.FailedCommits += int(f.failed)
		} else {
			for i := range gen.commits {
				if gen.commits[i].failed {
					s.FailedCommits++
				}
			}
		}
		s.SuspectCommits += len(gen.suspects)
	}
	if n := len(g.gens); n > 0 {
		gen := g.gens[n-1]
		s.State, s.Generation, s.Members, s.Assignor = gen.phase.String(), gen.num, len(gen.members), gen.protocol
		if gen.midway {
			s.State = "observed"
		}
		for _, m := range gen.members {
			s.MemberProtocols[memberProtocol(gen, m)]++
		}
	}
	if n := g.next; n != nil && n.empty == nil {
		s.State = "rebalancing"
		if !n.start.IsZero() {
			lastStart, s.LastTrigger = n.start, n.trigger.kind
		}
	}
	s.LastRebalance = stampPtr(lastStart)
	if n := len(g.storm.storms); n > 0 {
		st := g.storm.storms[n-1]
		s.Storm = !st.ended || st.endedAt.IsZero()
	}
	if st := g.streams; st != nil {
		g.summarizeStreams(&s, st, last)
	}
	return s
}

// summarizeStreams is summarizeStreams from the streams group's state.
func (g *group) summarizeStreams(s *GroupSummary, st *streamsState, last time.Time) {
	s.Generation, s.Assignor = st.epoch, st.assignor
	reached := true
	for _, m := range st.members {
		if m.alive {
			s.Members++
			reached = reached && m.epoch == st.epoch
		}
	}
	s.State = streamsSummaryState(st.state, s.Members, reached)
	for _, e := range st.epochs {
		at := stamp(e.at)
		s.LastRebalance, s.LastTrigger = &at, e.trigger.kind
		if last.Sub(e.at.Round(0)) <= recentWindow {
			s.RebalancesLastHour++
		}
	}
}

// streamsSummaryState is a streams group's state in its summary: the last
// describe's state in lower case, else "empty" without live members,
// "stable" when every live member reached the group epoch, else
// "reconciling".
func streamsSummaryState(described string, live int, reached bool) string {
	switch {
	case described != "":
		return strings.ToLower(described)
	case live == 0:
		return "empty"
	case reached:
		return "stable"
	default:
		return "reconciling"
	}
}
