package main

import (
	"fmt"
	"io"

	"github.com/kproxy-dev/kproxy/proxy"
)

// metric is one Prometheus metric computed from proxy.Stats.
type metric struct {
	name  string
	kind  string // "counter" or "gauge"
	help  string
	value func(s proxy.Stats) float64
}

// metrics lists what /metrics exposes: every proxy.Stats field, one line
// each (a test checks none is missing).
var metrics = []metric{
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
	{"kproxy_malformed_frames_total", "counter", "Observed exchanges that did not decode (forwarded untouched).",
		func(s proxy.Stats) float64 { return float64(s.MalformedFrames) }},
	{"kproxy_rewrite_failures_total", "counter", "Responses whose addresses or versions could not be rewritten (forwarded untouched).",
		func(s proxy.Stats) float64 { return float64(s.RewriteFailures) }},
	{"kproxy_observer_drops_total", "counter", "Exchanges not observed because the observer queue was full.",
		func(s proxy.Stats) float64 { return float64(s.ObserverDrops) }},
	{"kproxy_oversized_frames_total", "counter", "Frames above max-frame-size; each closed its connection.",
		func(s proxy.Stats) float64 { return float64(s.OversizedFrames) }},
	{"kproxy_correlation_mismatches_total", "counter", "Responses with an unexpected correlation id; each closed its connection.",
		func(s proxy.Stats) float64 { return float64(s.CorrelationMismatches) }},
	{"kproxy_upstream_dial_failures_total", "counter", "Failed dials to brokers.",
		func(s proxy.Stats) float64 { return float64(s.UpstreamDialFailures) }},
	{"kproxy_tls_hellos_total", "counter", "TLS ClientHellos received on a plaintext listener.",
		func(s proxy.Stats) float64 { return float64(s.TLSHellos) }},
}

// writeMetrics writes s in the Prometheus text exposition format (0.0.4).
func writeMetrics(w io.Writer, s proxy.Stats) error {
	for _, m := range metrics {
		if _, err := fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n%s %g\n",
			m.name, m.help, m.name, m.kind, m.name, m.value(s)); err != nil {
			return err
		}
	}
	return nil
}
