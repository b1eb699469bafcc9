package proxy

import "sync/atomic"

// Stats is a snapshot of a Proxy's counters since New. Counters only grow,
// except ConnectionsOpen.
type Stats struct {
	// ConnectionsOpen is the number of client connections being served.
	ConnectionsOpen int64
	// ConnectionsTotal is the number of client connections accepted.
	ConnectionsTotal uint64
	// RequestFrames and ResponseFrames count frames forwarded whole.
	RequestFrames  uint64
	ResponseFrames uint64
	// BytesFromClients and BytesFromBrokers count bytes forwarded,
	// 4-byte size prefixes included (as received, before any rewrite).
	BytesFromClients uint64
	BytesFromBrokers uint64
	// RewriteFailures counts responses that should have had their
	// addresses rewritten or versions clamped but did not parse. They were
	// forwarded untouched.
	RewriteFailures uint64
	// ObserverDrops counts exchanges not handed out because the Queue was
	// full (ObserverQueue or ObserverQueueBytes).
	ObserverDrops uint64
	// OversizedFrames counts frames larger than MaxFrameSize (or with a
	// negative size); each closed its connection.
	OversizedFrames uint64
	// CorrelationMismatches counts responses whose correlation id was not
	// the one expected; each closed its connection.
	CorrelationMismatches uint64
	// UpstreamDialFailures counts failed dials to brokers.
	UpstreamDialFailures uint64
	// TLSHellos counts TLS ClientHellos received on a plaintext listener.
	TLSHellos uint64
	// SASLOpaqueConnections counts connections forwarded as opaque bytes,
	// unobserved, after a SaslHandshake v0 for a mechanism whose bare
	// token exchange kproxy cannot delimit (GSSAPI, unknown ones).
	SASLOpaqueConnections uint64
	// NodesRefused counts the times a response named a broker node that
	// has no valid listener port (BrokerPortBase plus its id above
	// 65535, and not in BrokerListeners); it was left out of what clients
	// were told.
	NodesRefused uint64
}

// counters are the live counters behind Stats.
type counters struct {
	connsOpen             atomic.Int64
	connsTotal            atomic.Uint64
	requestFrames         atomic.Uint64
	responseFrames        atomic.Uint64
	bytesFromClients      atomic.Uint64
	bytesFromBrokers      atomic.Uint64
	rewriteFailures       atomic.Uint64
	observerDrops         atomic.Uint64
	oversizedFrames       atomic.Uint64
	correlationMismatches atomic.Uint64
	dialFailures          atomic.Uint64
	tlsHellos             atomic.Uint64
	saslOpaque            atomic.Uint64
	nodesRefused          atomic.Uint64
	// queuedBytes is what the observer queue holds (ObserverQueueBytes).
	queuedBytes atomic.Int64
}

func (c *counters) snapshot() Stats {
	return Stats{
		ConnectionsOpen:       c.connsOpen.Load(),
		ConnectionsTotal:      c.connsTotal.Load(),
		RequestFrames:         c.requestFrames.Load(),
		ResponseFrames:        c.responseFrames.Load(),
		BytesFromClients:      c.bytesFromClients.Load(),
		BytesFromBrokers:      c.bytesFromBrokers.Load(),
		RewriteFailures:       c.rewriteFailures.Load(),
		ObserverDrops:         c.observerDrops.Load(),
		OversizedFrames:       c.oversizedFrames.Load(),
		CorrelationMismatches: c.correlationMismatches.Load(),
		UpstreamDialFailures:  c.dialFailures.Load(),
		TLSHellos:             c.tlsHellos.Load(),
		SASLOpaqueConnections: c.saslOpaque.Load(),
		NodesRefused:          c.nodesRefused.Load(),
	}
}
