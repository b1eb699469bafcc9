package main

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kproxy-dev/kproxy/timeline"
)

// otherGroup is the group label of the groups beyond --metrics-max-groups.
const otherGroup = "_other"

// rebalanceBuckets are the bounds, in seconds, of the stop-the-world
// histogram: from a quick cooperative rebalance to a group waiting out a
// five-minute rebalance timeout.
var rebalanceBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// groupMetrics are the per-group metrics, counted from the timeline's
// entries as they are told (each fact once), so that the counters keep
// counting however little of the history the timeline keeps in memory.
// The first max groups to appear get their own label; the others are
// counted under group="_other", so that a new group never takes a name
// from one already exposed. Record runs on the pipeline's goroutine (the
// live timeline's Config.OnEntry), the collection on the admin server's.
type groupMetrics struct {
	rebalances        *prometheus.CounterVec
	duration          *prometheus.HistogramVec
	generation        *prometheus.GaugeVec
	members           *prometheus.GaugeVec
	revocationCommits *prometheus.CounterVec
	suspects          *prometheus.CounterVec
	storm             *prometheus.GaugeVec
	folded            prometheus.Counter

	mu      sync.Mutex
	max     int
	named   map[string]bool
	other   map[string]*foldedGroup // the groups under _other
	otherGe float64                 // the highest generation under _other
	otherMe float64                 // the members of the groups under _other
	otherSt float64                 // the groups under _other in a storm
}

// foldedGroup is what _other's gauges need of one of its groups.
type foldedGroup struct {
	members float64
	storm   bool
}

var _ prometheus.Collector = (*groupMetrics)(nil)

func newGroupMetrics(max int) *groupMetrics {
	g := []string{"group"}
	return &groupMetrics{max: max, named: map[string]bool{}, other: map[string]*foldedGroup{},
		rebalances: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kproxy_group_rebalances_total",
			Help: "Rebalances that formed a stable generation (KIP-848 and KIP-1071 streams groups: a reconciled group epoch), by group and trigger kind (docs/timeline-json.md)."},
			append(g, "trigger")),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "kproxy_group_rebalance_duration_seconds",
			Help:    "Stop-the-world time of the group's rebalances: from the trigger to the last SyncGroup response (KIP-848, streams groups: 0).",
			Buckets: rebalanceBuckets}, g),
		generation: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kproxy_group_generation",
			Help: "The group's latest stable generation (KIP-848, streams groups: group epoch); _other: the highest."}, g),
		members: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kproxy_group_members",
			Help: "Members of the group's latest stable generation, 0 once the group is empty; _other: their sum."}, g),
		revocationCommits: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kproxy_group_commits_during_revocation_total",
			Help: "Commits made while the group rebalanced, by result: ok, unknown (no response seen), or the name of a partition's error."},
			append(g, "result")),
		suspects: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "kproxy_group_suspect_commits_total",
			Help: "Committed partitions that make the next owner re-process records, by reason (not_owned, backwards)."},
			append(g, "reason")),
		storm: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "kproxy_group_storm",
			Help: "1 while the group is in a rebalance storm, else 0; _other: how many of its groups are."}, g),
		folded: prometheus.NewCounter(prometheus.CounterOpts{Name: "kproxy_group_metrics_folded_groups_total",
			Help: "Groups beyond --metrics-max-groups, counted under group=\"_other\" instead of by name."}),
	}
}

func (m *groupMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.rebalances, m.duration, m.generation, m.members, m.revocationCommits, m.suspects, m.storm, m.folded}
}

// Describe sends the per-group metrics' descriptions.
func (m *groupMetrics) Describe(ch chan<- *prometheus.Desc) {
	for _, c := range m.collectors() {
		c.Describe(ch)
	}
}

// Collect sends the per-group metrics.
func (m *groupMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, c := range m.collectors() {
		c.Collect(ch)
	}
}

// label is group's label value: its name while fewer than max groups are
// named, else _other. Called with m.mu held.
func (m *groupMetrics) label(group string) (string, *foldedGroup) {
	if m.named[group] {
		return group, nil
	}
	if f := m.other[group]; f != nil {
		return otherGroup, f
	}
	if len(m.named) < m.max {
		m.named[group] = true
		return group, nil
	}
	f := &foldedGroup{}
	m.other[group] = f
	m.folded.Inc()
	return otherGroup, f
}

// Record counts what entry e tells; it ignores the kinds it does not
// count, so that it can take every entry.
func (m *groupMetrics) Record(e timeline.Entry) {
	switch e.Kind {
	case timeline.KindStable, timeline.KindGroupEmpty, timeline.KindCommit, timeline.KindSuspectCommit,
		timeline.KindStorm, timeline.KindStormEnded:
	default:
		return
	}
	if e.Kind == timeline.KindCommit && !e.Commit.DuringRevocation {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	group, f := m.label(e.Group)
	switch e.Kind {
	case timeline.KindStable:
		st := e.Stable
		m.rebalances.WithLabelValues(group, st.Trigger).Inc()
		if st.StopTheWorld >= 0 {
			m.duration.WithLabelValues(group).Observe(st.StopTheWorld.Seconds())
		}
		m.setGauges(group, f, float64(e.Generation), float64(st.Members))
	case timeline.KindGroupEmpty:
		m.setGauges(group, f, float64(e.Generation), 0)
		if f != nil {
			// An empty group under _other adds nothing to its gauges:
			// forget it, so that groups created per run (console
			// consumers, jobs) do not grow this map without end. If it
			// comes back it is folded, and counted, again.
			if f.storm {
				m.otherSt--
				m.storm.WithLabelValues(group).Set(m.otherSt)
			}
			delete(m.other, e.Group)
		}
	case timeline.KindCommit:
		for _, r := range commitResults(e) {
			m.revocationCommits.WithLabelValues(group, r).Inc()
		}
	case timeline.KindSuspectCommit:
		for _, r := range e.Suspect.Reasons {
			m.suspects.WithLabelValues(group, r).Inc()
		}
	case timeline.KindStorm, timeline.KindStormEnded:
		on := e.Kind == timeline.KindStorm
		if f == nil {
			v := 0.0
			if on {
				v = 1
			}
			m.storm.WithLabelValues(group).Set(v)
			return
		}
		if f.storm != on {
			f.storm = on
			if on {
				m.otherSt++
			} else {
				m.otherSt--
			}
		}
		m.storm.WithLabelValues(group).Set(m.otherSt)
	}
}

// setGauges sets a group's generation and members; for a group under
// _other (f not nil), _other's highest generation and sum of members.
func (m *groupMetrics) setGauges(group string, f *foldedGroup, gen, members float64) {
	if f == nil {
		m.generation.WithLabelValues(group).Set(gen)
		m.members.WithLabelValues(group).Set(members)
		m.storm.WithLabelValues(group).Add(0) // present from the first generation on
		return
	}
	m.otherGe = max(m.otherGe, gen)
	m.otherMe += members - f.members
	f.members = members
	m.generation.WithLabelValues(group).Set(m.otherGe)
	m.members.WithLabelValues(group).Set(m.otherMe)
	m.storm.WithLabelValues(group).Add(0)
}

// commitResults is a commit entry's result labels: the name of each
// distinct error among its failed partitions, "failed" when the request
// failed without per-partition errors, "unknown" when no response was
// seen, else "ok".
func commitResults(e timeline.Entry) []string {
	switch c := e.Commit; {
	case len(c.Errors) > 0:
		return c.Errors
	case c.Failed:
		return []string{"failed"}
	case !c.Responded:
		return []string{"unknown"}
	}
	return []string{"ok"}
}
