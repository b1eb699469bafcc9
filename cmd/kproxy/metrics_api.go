package main

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kproxy-dev/kproxy/decode"
	"github.com/kproxy-dev/kproxy/pipeline"
)

// apiMetrics counts the exchanges the pipeline reads, per API: the group
// APIs kproxy watches (the proxy hands out no others). It is a consumer of
// the pipeline, of its exchanges (requests, round trips) and of its events
// (error codes), so it adds no work to the proxy's path. The pipeline's
// goroutine alone calls Append and AddEvents, so the label children they
// look up once are cached without a lock.
type apiMetrics struct {
	requests *prometheus.CounterVec
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec

	apis  map[int16]apiChildren           // by API key
	errs  map[apiError]prometheus.Counter // by API key and error code
	codes []int16                         // appendErrors' buffer, reused
}

// apiChildren are one API's request counter and round-trip histogram.
type apiChildren struct {
	requests prometheus.Counter
	duration prometheus.Observer
}

// apiError is an API key and an error code its responses carried.
type apiError struct{ key, code int16 }

var (
	_ pipeline.ExchangeConsumer = (*apiMetrics)(nil)
	_ pipeline.EventConsumer    = (*apiMetrics)(nil)
	_ prometheus.Collector      = (*apiMetrics)(nil)
)

func newAPIMetrics() *apiMetrics {
	return &apiMetrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kproxy_requests_total",
			Help: "Requests of the observed APIs (the consumer group APIs) that kproxy forwarded, by API.",
		}, []string{"api"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "kproxy_request_errors_total",
			Help: "Error codes in responses of the observed APIs, by API and error name (OffsetCommit and OffsetFetch: one per failed partition).",
		}, []string{"api", "error"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "kproxy_request_duration_seconds",
			Help:    "Broker round trip of the observed APIs as kproxy sees it: request read from the client to response read from the broker.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 300},
		}, []string{"api"}),
		apis: map[int16]apiChildren{},
		errs: map[apiError]prometheus.Counter{},
	}
}

// apiName is the label of an API key: its Kafka name (kmsg's "Unknown"
// for a key it does not know).
func apiName(key int16) string { return kmsg.NameForKey(key) }

// Append counts one exchange and its broker round trip.
func (m *apiMetrics) Append(x *decode.Exchange) {
	c, ok := m.apis[x.APIKey]
	if !ok {
		api := apiName(x.APIKey)
		c = apiChildren{requests: m.requests.WithLabelValues(api), duration: m.duration.WithLabelValues(api)}
		m.apis[x.APIKey] = c
	}
	c.requests.Inc()
	if d := x.Latency(); d > 0 {
		c.duration.Observe(d.Seconds())
	}
}

// Dropped ignores the exchanges lost before the pipeline: the proxy counts
// them (kproxy_observer_drops_total), and their requests are unknown.
func (m *apiMetrics) Dropped(uint64, time.Time) {}

// AddEvents counts the error codes the events' responses carry.
func (m *apiMetrics) AddEvents(events []decode.Event) {
	for i := range events {
		ev := &events[i]
		m.codes = appendErrors(m.codes[:0], ev)
		for _, code := range m.codes {
			k := apiError{ev.APIKey, code}
			c, ok := m.errs[k]
			if !ok {
				c = m.errors.WithLabelValues(apiName(ev.APIKey), decode.ErrorName(code))
				m.errs[k] = c
			}
			c.Inc()
		}
	}
}

// appendErrors appends the non-zero error codes of an event's response to
// codes.
func appendErrors(codes []int16, ev *decode.Event) []int16 {
	add := func(c int16) {
		if c != 0 {
			codes = append(codes, c)
		}
	}
	switch {
	case ev.FindCoordinator != nil:
		add(ev.FindCoordinator.ErrorCode)
	case ev.JoinGroup != nil:
		add(ev.JoinGroup.ErrorCode)
	case ev.SyncGroup != nil:
		add(ev.SyncGroup.ErrorCode)
	case ev.Heartbeat != nil:
		add(ev.Heartbeat.ErrorCode)
	case ev.LeaveGroup != nil:
		add(ev.LeaveGroup.ErrorCode)
	case ev.OffsetCommit != nil:
		for _, t := range ev.OffsetCommit.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case ev.OffsetFetch != nil:
		add(ev.OffsetFetch.ErrorCode)
		for _, t := range ev.OffsetFetch.Offsets {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case ev.ConsumerGroupHeartbeat != nil:
		add(ev.ConsumerGroupHeartbeat.ErrorCode)
	case ev.TxnOffsetCommit != nil:
		for _, t := range ev.TxnOffsetCommit.Topics {
			for _, p := range t.Partitions {
				add(p.ErrorCode)
			}
		}
	case ev.EndTxn != nil:
		add(ev.EndTxn.ErrorCode)
	}
	return codes
}

// Describe sends the descriptions of the per-API metrics.
func (m *apiMetrics) Describe(ch chan<- *prometheus.Desc) {
	m.requests.Describe(ch)
	m.errors.Describe(ch)
	m.duration.Describe(ch)
}

// Collect sends the per-API metrics.
func (m *apiMetrics) Collect(ch chan<- prometheus.Metric) {
	m.requests.Collect(ch)
	m.errors.Collect(ch)
	m.duration.Collect(ch)
}
