package main

import (
	"regexp"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kproxy-dev/kproxy/journal"
	"github.com/kproxy-dev/kproxy/pipeline"
	"github.com/kproxy-dev/kproxy/proxy"
)

// metric is one Prometheus metric computed from a stats struct S.
type metric[S any] struct {
	name  string
	kind  string // "counter" or "gauge"
	help  string
	value func(s S) float64
}

// proxyMetrics lists what /metrics exposes of the proxy: every proxy.Stats
// field, one line each (a test checks none is missing).
var proxyMetrics = []metric[proxy.Stats]{
	{"kproxy_connections_open", "gauge", "Client connections being served.",
		func(s proxy.Stats) float64 { return float64(s.ConnectionsOpen) }},
	{"kproxy_connections_total", "counter", "Client connections accepted.",
		func(s proxy.Stats) float64 { return float64(s.ConnectionsTotal) }},
	{"kproxy_request_frames_total", "counter", "Request frames forwarded to brokers.",
		func(s proxy.Stats) float64 { return float64(s.RequestFrames) }},
	{"kproxy_response_frames_total", "counter", "Response frames forwarded to clients.",
		func(s proxy.Stats) float64 { return float64(s.ResponseFrames) }},
	{"kproxy_bytes_from_clients_total", "counter", "Bytes received from clients and forwarded.",
		func(s proxy.Stats) float64 { return float64(s.BytesFromClients) }},
	{"kproxy_bytes_from_brokers_total", "counter", "Bytes received from brokers and forwarded.",
		func(s proxy.Stats) float64 { return float64(s.BytesFromBrokers) }},
	{"kproxy_rewrite_failures_total", "counter", "Responses whose addresses or versions could not be rewritten (forwarded untouched).",
		func(s proxy.Stats) float64 { return float64(s.RewriteFailures) }},
	{"kproxy_endpoints_dropped_total", "counter", "Streamed responses (Fetch v16+, ShareFetch) whose broker addresses did not fit once rewritten and were left out.",
		func(s proxy.Stats) float64 { return float64(s.EndpointsDropped) }},
	{"kproxy_observer_drops_total", "counter", "Exchanges not observed because the observer queue was full.",
		func(s proxy.Stats) float64 { return float64(s.ObserverDrops) }},
	{"kproxy_oversized_frames_total", "counter", "Frames above max-frame-size, and group requests above max-group-frame-size; each closed its connection.",
		func(s proxy.Stats) float64 { return float64(s.OversizedFrames) }},
	{"kproxy_correlation_mismatches_total", "counter", "Responses with an unexpected correlation id; each closed its connection.",
		func(s proxy.Stats) float64 { return float64(s.CorrelationMismatches) }},
	{"kproxy_upstream_dial_failures_total", "counter", "Failed dials to brokers.",
		func(s proxy.Stats) float64 { return float64(s.UpstreamDialFailures) }},
	{"kproxy_tls_hellos_total", "counter", "TLS ClientHellos received on a plaintext listener.",
		func(s proxy.Stats) float64 { return float64(s.TLSHellos) }},
	{"kproxy_plaintext_on_tls_total", "counter", "Connections to a TLS listener that did not start with a TLS ClientHello (a plaintext client, most often); each was closed.",
		func(s proxy.Stats) float64 { return float64(s.PlaintextOnTLS) }},
	{"kproxy_tls_handshake_failures_total", "counter", "Client TLS handshakes that failed (no or unknown client certificate, old TLS version, ...).",
		func(s proxy.Stats) float64 { return float64(s.TLSHandshakeFailures) }},
	{"kproxy_sasl_opaque_connections_total", "counter", "Connections forwarded unobserved after a SaslHandshake v0 whose token exchange kproxy cannot delimit.",
		func(s proxy.Stats) float64 { return float64(s.SASLOpaqueConnections) }},
	{"kproxy_nodes_refused_total", "counter", "Responses naming a broker node without a valid listener port; the node was not shown to clients.",
		func(s proxy.Stats) float64 { return float64(s.NodesRefused) }},
	{"kproxy_upstream_sasl_failures_total", "counter", "Upstream connections kproxy could not authenticate with its own SASL credentials.",
		func(s proxy.Stats) float64 { return float64(s.UpstreamSASLFailures) }},
	{"kproxy_upstream_reauthentications_total", "counter", "SASL sessions kproxy renewed on live upstream connections (KIP-368).",
		func(s proxy.Stats) float64 { return float64(s.UpstreamReauthentications) }},
	{"kproxy_unobserved_frames_total", "counter", "Group requests and responses larger than --max-observed-frame-size, and group responses arriving with --max-buffered-bytes spent, forwarded unobserved.",
		func(s proxy.Stats) float64 { return float64(s.UnobservedFrames) }},
	{"kproxy_buffered_bytes", "gauge", "Bytes of group requests and responses held in memory now (of --max-buffered-bytes; above it while a response kproxy rewrites is read).",
		func(s proxy.Stats) float64 { return float64(s.BufferedBytes) }},
	{"kproxy_buffer_waits_total", "counter", "Client requests that waited for --max-buffered-bytes (reading paused).",
		func(s proxy.Stats) float64 { return float64(s.BufferWaits) }},
	{"kproxy_frame_read_timeouts_total", "counter", "Client connections closed by --frame-read-timeout.",
		func(s proxy.Stats) float64 { return float64(s.FrameReadTimeouts) }},
	{"kproxy_truncated_frames_total", "counter", "Frames cut short by the client or broker closing or resetting the connection.",
		func(s proxy.Stats) float64 { return float64(s.TruncatedFrames) }},
	{"kproxy_short_frames_total", "counter", "Frames too short to be Kafka; each closed its connection.",
		func(s proxy.Stats) float64 { return float64(s.ShortFrames) }},
	{"kproxy_idle_closes_total", "counter", "Client connections closed by --idle-timeout.",
		func(s proxy.Stats) float64 { return float64(s.IdleCloses) }},
	{"kproxy_connections_refused_total", "counter", "Client connections refused by --max-connections.",
		func(s proxy.Stats) float64 { return float64(s.ConnectionsRefused) }},
	{"kproxy_connections_refused_per_ip_total", "counter", "Client connections refused by --max-connections-per-ip.",
		func(s proxy.Stats) float64 { return float64(s.ConnectionsRefusedPerIP) }},
	{"kproxy_accept_errors_total", "counter", "Failed accepts on kproxy's listeners (out of file descriptors, say).",
		func(s proxy.Stats) float64 { return float64(s.AcceptErrors) }},
}

// pipelineMetrics lists what /metrics exposes of the pipeline: every
// pipeline.Stats field, one line each (a test checks none is missing).
var pipelineMetrics = []metric[pipeline.Stats]{
	{"kproxy_observed_exchanges_total", "counter", "Exchanges of interest read from the proxy's queue by the pipeline.",
		func(s pipeline.Stats) float64 { return float64(s.Exchanges) }},
	{"kproxy_malformed_frames_total", "counter", "Observed exchanges that did not decode (forwarded untouched).",
		func(s pipeline.Stats) float64 { return float64(s.Undecoded) }},
}

// journalMetrics lists what /metrics exposes of the journal when one is
// on: every journal.Stats field, one line each (a test checks none is
// missing).
var journalMetrics = []metric[journal.Stats]{
	{"kproxy_journal_queued", "gauge", "Exchanges waiting to be written to the journal.",
		func(s journal.Stats) float64 { return float64(s.Queued) }},
	{"kproxy_journal_accepted_total", "counter", "Exchanges taken into the journal's queue.",
		func(s journal.Stats) float64 { return float64(s.Accepted) }},
	{"kproxy_journal_records_written_total", "counter", "Exchange records written to journal segments.",
		func(s journal.Stats) float64 { return float64(s.Written) }},
	{"kproxy_journal_records_synced_total", "counter", "Exchange records covered by a completed fsync.",
		func(s journal.Stats) float64 { return float64(s.Synced) }},
	{"kproxy_journal_bytes_written_total", "counter", "Bytes written to the journal, headers and framing included.",
		func(s journal.Stats) float64 { return float64(s.Bytes) }},
	{"kproxy_journal_segments_created_total", "counter", "Journal segment files created.",
		func(s journal.Stats) float64 { return float64(s.Segments) }},
	{"kproxy_journal_dropped_total", "counter", "Exchanges not journaled because the journal's queue was full.",
		func(s journal.Stats) float64 { return float64(s.Dropped) }},
	{"kproxy_journal_upstream_dropped_total", "counter", "Exchanges the proxy dropped before the journal (noted in it as gaps).",
		func(s journal.Stats) float64 { return float64(s.UpstreamDropped) }},
	{"kproxy_journal_too_large_total", "counter", "Exchanges not journaled because they exceed the largest record.",
		func(s journal.Stats) float64 { return float64(s.TooLarge) }},
	{"kproxy_journal_discarded_total", "counter", "Exchanges not journaled because journaling was suspended by a write error, or closed.",
		func(s journal.Stats) float64 { return float64(s.Discarded) }},
	{"kproxy_journal_sasl_refused_total", "counter", "SASL exchanges never journaled (they carry credentials).",
		func(s journal.Stats) float64 { return float64(s.Redacted) }},
	{"kproxy_journal_write_failed", "gauge", "1 while a write error has journaling suspended (retried with backoff; the log says why), else 0.",
		func(s journal.Stats) float64 {
			if s.Err != nil {
				return 1
			}
			return 0
		}},
}

// statsCollector exposes a stats struct S, read once per scrape, as the
// metrics ms lists (constant metrics: the struct holds the counts).
type statsCollector[S any] struct {
	metrics []metric[S]
	descs   []*prometheus.Desc
	read    func() S
}

var _ prometheus.Collector = (*statsCollector[proxy.Stats])(nil)

func newStatsCollector[S any](ms []metric[S], read func() S) *statsCollector[S] {
	c := &statsCollector[S]{metrics: ms, read: read}
	for _, m := range ms {
		c.descs = append(c.descs, prometheus.NewDesc(m.name, m.help, nil, nil))
	}
	return c
}

// Describe sends the descriptions of every metric in the list.
func (c *statsCollector[S]) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range c.descs {
		ch <- d
	}
}

// Collect reads the stats once and sends every metric of the list.
func (c *statsCollector[S]) Collect(ch chan<- prometheus.Metric) {
	s := c.read()
	for i, m := range c.metrics {
		kind := prometheus.GaugeValue
		if m.kind == "counter" {
			kind = prometheus.CounterValue
		}
		ch <- prometheus.MustNewConstMetric(c.descs[i], kind, m.value(s))
	}
}

// newMetricsRegistry is what /metrics exposes: the Go and process
// collectors (with go_gc_heap_live_bytes, the heap the last collection
// found live: go_memstats_heap_alloc_bytes also counts the garbage not yet
// collected, so only the live heap shows whether memory is retained), the
// proxy's counters, the pipeline's and the journal's when
// src.pipeline and src.journal are set, and the per-API and per-group
// metrics of src.apis and src.groups when they are not nil.
func newMetricsRegistry(src adminSources) *prometheus.Registry {
	reg := prometheus.NewRegistry()
	goCollector := collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(
		collectors.GoRuntimeMetricsRule{Matcher: regexp.MustCompile(`^/gc/heap/live:bytes$`)}))
	reg.MustRegister(goCollector, collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	if src.proxy != nil {
		reg.MustRegister(newStatsCollector(proxyMetrics, src.proxy))
	}
	if src.capture != nil {
		reg.MustRegister(newStatsCollector(captureMetrics, src.capture))
	}
	if src.pipeline != nil {
		reg.MustRegister(newStatsCollector(pipelineMetrics, src.pipeline))
	}
	if src.journal != nil {
		reg.MustRegister(newStatsCollector(journalMetrics, src.journal))
	}
	registerFleetMetrics(reg, src)
	if src.apis != nil {
		reg.MustRegister(src.apis)
	}
	if src.groups != nil {
		reg.MustRegister(src.groups)
	}
	return reg
}
