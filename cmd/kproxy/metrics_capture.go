package main

import "github.com/kproxy-dev/kproxy/capture"

// captureMetrics lists what /metrics exposes of the packet capture kproxy
// capture reads: every capture.Stats field, one line each.
var captureMetrics = []metric[capture.Stats]{
	{"kproxy_capture_packets_total", "counter", "Packets read from the capture.",
		func(s capture.Stats) float64 { return float64(s.Packets) }},
	{"kproxy_capture_bytes_total", "counter", "Bytes of packets read from the capture, as captured.",
		func(s capture.Stats) float64 { return float64(s.Bytes) }},
	{"kproxy_capture_other_packets_total", "counter", "Packets of the capture that are not TCP to or from a broker port.",
		func(s capture.Stats) float64 { return float64(s.Other) }},
	{"kproxy_capture_connections_total", "counter", "Kafka connections seen in the capture.",
		func(s capture.Stats) float64 { return float64(s.Connections) }},
	{"kproxy_capture_connections_open", "gauge", "Kafka connections of the capture not ended.",
		func(s capture.Stats) float64 { return float64(s.Open) }},
	{"kproxy_capture_tls_connections_total", "counter", "TLS connections recognised in the capture and skipped.",
		func(s capture.Stats) float64 { return float64(s.TLSConnections) }},
	{"kproxy_capture_tls_bytes_total", "counter", "Bytes of the TLS connections skipped.",
		func(s capture.Stats) float64 { return float64(s.TLSBytes) }},
	{"kproxy_capture_sasl_v0_connections_total", "counter", "Connections skipped after a SaslHandshake v0 (their SASL tokens have no Kafka headers).",
		func(s capture.Stats) float64 { return float64(s.SASLv0Connections) }},
	{"kproxy_capture_exchanges_total", "counter", "Exchanges of interest read from the capture.",
		func(s capture.Stats) float64 { return float64(s.Exchanges) }},
	{"kproxy_capture_unfinished_total", "counter", "Requests of interest still awaiting their response when their connection went quiet or the capture ended; not told.",
		func(s capture.Stats) float64 { return float64(s.Unfinished) }},
	{"kproxy_capture_lost_total", "counter", "Exchanges lost in the capture's gaps (each stretch of unknown frames counting one).",
		func(s capture.Stats) float64 { return float64(s.Lost) }},
	{"kproxy_capture_untracked_total", "counter", "Stretches of connections whose frames a gap swallowed.",
		func(s capture.Stats) float64 { return float64(s.Untracked) }},
	{"kproxy_capture_gaps_total", "counter", "Stretches of bytes missing from the capture (dropped by it, or cut by its snap length).",
		func(s capture.Stats) float64 { return float64(s.Gaps) }},
	{"kproxy_capture_gap_bytes_total", "counter", "Bytes missing from the capture.",
		func(s capture.Stats) float64 { return float64(s.GapBytes) }},
	{"kproxy_capture_retransmitted_total", "counter", "Segments whose bytes had all been read already (retransmissions, duplicates).",
		func(s capture.Stats) float64 { return float64(s.Retransmitted) }},
	{"kproxy_capture_resyncs_total", "counter", "Times a direction of a connection found its frames (connections open before the capture began, and after each loss of track).",
		func(s capture.Stats) float64 { return float64(s.Resyncs) }},
	{"kproxy_capture_desyncs_total", "counter", "Frame headers not plausible where one was expected.",
		func(s capture.Stats) float64 { return float64(s.Desyncs) }},
	{"kproxy_capture_learned_ports", "gauge", "Broker ports learned from the capture's Metadata and FindCoordinator responses.",
		func(s capture.Stats) float64 { return float64(s.LearnedPorts) }},
}
