package main

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kproxy-dev/kproxy/fleet"
)

// eventsMetrics lists what /metrics exposes of the events topic's
// publisher (events-topic): every fleet.PublisherStats field.
var eventsMetrics = []metric[fleet.PublisherStats]{
	{"kproxy_events_published_total", "counter", "Records (exchanges and gaps) the events topic acknowledged.",
		func(s fleet.PublisherStats) float64 { return float64(s.Published) }},
	{"kproxy_events_dropped_total", "counter", "Exchanges not published: the producer's buffer was full (cluster slow or down), the pipeline's queue was, or the cluster did not acknowledge them in time. Noted in the topic as gaps.",
		func(s fleet.PublisherStats) float64 { return float64(s.Dropped) }},
	{"kproxy_events_sasl_refused_total", "counter", "SASL exchanges never published (they carry credentials).",
		func(s fleet.PublisherStats) float64 { return float64(s.Redacted) }},
	{"kproxy_events_topic_ready", "gauge", "1 once the events topic is known to exist (created or found), else 0.",
		func(s fleet.PublisherStats) float64 { return boolMetric(s.TopicReady) }},
}

// fleetMetrics lists what /metrics exposes of the fleet topic's reader
// (fleet-topic).
var fleetMetrics = []metric[fleet.SourceStats]{
	{"kproxy_fleet_records_total", "counter", "Records read from the fleet topic, markers included.",
		func(s fleet.SourceStats) float64 { return float64(s.Records) }},
	{"kproxy_fleet_foreign_records_total", "counter", "Records of the fleet topic kproxy did not write; skipped.",
		func(s fleet.SourceStats) float64 { return float64(s.Foreign) }},
	{"kproxy_fleet_instances", "gauge", "Instance runs seen in the fleet topic.",
		func(s fleet.SourceStats) float64 { return float64(s.Instances) }},
	{"kproxy_fleet_lost_total", "counter", "Exchanges instances observed but the fleet topic does not hold (their gap records, and holes in their sequences).",
		func(s fleet.SourceStats) float64 { return float64(s.Lost) }},
	{"kproxy_fleet_late_total", "counter", "Records that arrived after their place in the merged story had passed (more than the hold late, or behind their run's sequence).",
		func(s fleet.SourceStats) float64 { return float64(s.Late) }},
	{"kproxy_fleet_skew_refused_total", "counter", "Clock offset estimates between instances beyond --max-skew; not applied.",
		func(s fleet.SourceStats) float64 { return float64(s.SkewRefused) }},
	{"kproxy_fleet_instances_corrected", "gauge", "Instances whose clock offset the merge corrects.",
		func(s fleet.SourceStats) float64 { return float64(len(s.Offsets)) }},
	{"kproxy_fleet_silences_total", "counter", "Times an instance went silent (killed or cut off) and the merged story has a gap.",
		func(s fleet.SourceStats) float64 {
			n := 0
			for _, g := range s.Gaps {
				if g.To.IsZero() {
					n++
				}
			}
			return float64(n)
		}},
}

func boolMetric(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// registerFleetMetrics registers the events and fleet metrics when they
// are on.
func registerFleetMetrics(reg *prometheus.Registry, src adminSources) {
	if src.events != nil {
		reg.MustRegister(newStatsCollector(eventsMetrics, src.events))
	}
	if src.fleet != nil {
		reg.MustRegister(newStatsCollector(fleetMetrics, src.fleet))
	}
}
