package main

import (
	"cmp"
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kproxy-dev/kproxy/timeline"
	"github.com/kproxy-dev/kproxy/web"
)

// otherGroup is the group label of the groups beyond --metrics-max-groups.
const otherGroup = "_other"

// rebalanceBuckets are the bounds, in seconds, of the stop-the-world
// histogram: from a quick cooperative rebalance to a group waiting out a
// five-minute rebalance timeout.
var rebalanceBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300}

// groupCollector exposes the per-group metrics, computed at each scrape
// from the timeline's report, so that they tell what the timeline tells.
// Groups are named in the order kproxy first saw them, up to max; the
// others are summed under group="_other", so that a new group never takes
// a name from one already exposed.
type groupCollector struct {
	report func() *timeline.Report
	max    int

	rebalances, duration, generation, members, revocationCommits, suspects, storm, folded *prometheus.Desc
}

var _ prometheus.Collector = (*groupCollector)(nil)

func newGroupCollector(report func() *timeline.Report, max int) *groupCollector {
	g := []string{"group"}
	return &groupCollector{report: report, max: max,
		rebalances: prometheus.NewDesc("kproxy_group_rebalances_total",
			"Rebalances the timeline saw form a generation, by group and trigger kind (docs/timeline-json.md).", append(g, "trigger"), nil),
		duration: prometheus.NewDesc("kproxy_group_rebalance_duration_seconds",
			"Stop-the-world time of the group's rebalances: from the trigger to the last SyncGroup response.", g, nil),
		generation: prometheus.NewDesc("kproxy_group_generation",
			"The group's latest generation (KIP-848: group epoch); _other: the highest.", g, nil),
		members: prometheus.NewDesc("kproxy_group_members",
			"Members of the group's latest generation; _other: their sum.", g, nil),
		revocationCommits: prometheus.NewDesc("kproxy_group_commits_during_revocation_total",
			"Commits made while the group rebalanced, by result: ok, unknown (no response), or the name of a partition's error.", append(g, "result"), nil),
		suspects: prometheus.NewDesc("kproxy_group_suspect_commits_total",
			"Committed partitions that make the next owner re-process records, by reason (not_owned, backwards).", append(g, "reason"), nil),
		storm: prometheus.NewDesc("kproxy_group_storm",
			"1 while the group is in a rebalance storm, else 0; _other: how many of its groups are.", g, nil),
		folded: prometheus.NewDesc("kproxy_group_metrics_folded_groups",
			"Groups beyond --metrics-max-groups whose metrics are summed under group=\"_other\".", nil, nil),
	}
}

// Describe sends the per-group metrics' descriptions.
func (c *groupCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.rebalances, c.duration, c.generation, c.members, c.revocationCommits, c.suspects, c.storm, c.folded} {
		ch <- d
	}
}

// groupStats are one label value's per-group figures.
type groupStats struct {
	rebalances        map[string]float64 // by trigger
	durCount          uint64
	durSum            float64
	durBuckets        map[float64]uint64
	generation        float64
	members           float64
	revocationCommits map[string]float64 // by result
	suspects          map[string]float64 // by reason
	storm             float64
}

func newGroupStats() *groupStats {
	return &groupStats{rebalances: map[string]float64{}, durBuckets: map[float64]uint64{},
		revocationCommits: map[string]float64{}, suspects: map[string]float64{}}
}

// add sums g's figures into s.
func (s *groupStats) add(g *timeline.GroupReport) {
	for i := range g.Generations {
		gen := &g.Generations[i]
		if web.IsRebalance(gen) {
			s.rebalances[gen.Trigger.Kind]++
		}
		if gen.StopTheWorldMs != nil {
			sec := *gen.StopTheWorldMs / 1000
			s.durCount++
			s.durSum += sec
			for _, b := range rebalanceBuckets {
				if sec <= b {
					s.durBuckets[b]++
				}
			}
		}
		for _, cm := range gen.CommitsDuringRevocation {
			for _, r := range commitResults(cm) {
				s.revocationCommits[r]++
			}
		}
		for _, sc := range gen.SuspectCommits {
			for _, r := range sc.Reasons {
				s.suspects[r]++
			}
		}
	}
	if n := len(g.Generations); n > 0 {
		last := &g.Generations[n-1]
		s.generation = max(s.generation, float64(last.Generation))
		s.members += float64(len(last.Members))
	}
	if n := len(g.Storms); n > 0 && g.Storms[n-1].Ongoing {
		s.storm++
	}
}

// commitResults is a commit's result label: "ok", "unknown", or the name
// of each distinct error among its failed partitions.
func commitResults(c timeline.CommitReport) []string {
	if !c.Failed {
		return []string{c.Result}
	}
	var names []string
	for _, parts := range c.Errors {
		for _, name := range parts {
			if !slices.Contains(names, name) {
				names = append(names, name)
			}
		}
	}
	if len(names) == 0 {
		return []string{c.Result}
	}
	slices.Sort(names)
	return names
}

// Collect computes every group's figures from one report and sends them.
func (c *groupCollector) Collect(ch chan<- prometheus.Metric) {
	r := c.report()
	groups := make([]*timeline.GroupReport, len(r.Groups))
	for i := range r.Groups {
		groups[i] = &r.Groups[i]
	}
	// RFC 3339 UTC stamps of one layout sort as their times do.
	slices.SortStableFunc(groups, func(a, b *timeline.GroupReport) int {
		return cmp.Or(cmp.Compare(a.FirstSeen, b.FirstSeen), cmp.Compare(a.Group, b.Group))
	})
	var other *groupStats
	folded := 0
	for i, g := range groups {
		if i < c.max {
			s := newGroupStats()
			s.add(g)
			c.send(ch, g.Group, s)
			continue
		}
		if other == nil {
			other = newGroupStats()
		}
		other.add(g)
		folded++
	}
	if other != nil {
		c.send(ch, otherGroup, other)
	}
	ch <- prometheus.MustNewConstMetric(c.folded, prometheus.GaugeValue, float64(folded))
}

func (c *groupCollector) send(ch chan<- prometheus.Metric, group string, s *groupStats) {
	for trigger, n := range s.rebalances {
		ch <- prometheus.MustNewConstMetric(c.rebalances, prometheus.CounterValue, n, group, trigger)
	}
	ch <- prometheus.MustNewConstHistogram(c.duration, s.durCount, s.durSum, s.durBuckets, group)
	ch <- prometheus.MustNewConstMetric(c.generation, prometheus.GaugeValue, s.generation, group)
	ch <- prometheus.MustNewConstMetric(c.members, prometheus.GaugeValue, s.members, group)
	for result, n := range s.revocationCommits {
		ch <- prometheus.MustNewConstMetric(c.revocationCommits, prometheus.CounterValue, n, group, result)
	}
	for reason, n := range s.suspects {
		ch <- prometheus.MustNewConstMetric(c.suspects, prometheus.CounterValue, n, group, reason)
	}
	ch <- prometheus.MustNewConstMetric(c.storm, prometheus.GaugeValue, s.storm, group)
}
