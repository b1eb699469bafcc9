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
	// EndpointsDropped counts streamed responses (Fetch v16+, ShareFetch)
	// whose broker addresses could not be rewritten in place, kproxy's
	// being longer than the broker's: they were left out (endpoints.go).
	EndpointsDropped uint64
	// ObserverDrops counts exchanges not handed out because the Queue was
	// full (ObserverQueue or ObserverQueueBytes).
	ObserverDrops uint64
	// OversizedFrames counts frames larger than MaxFrameSize (or with a
	// negative size), and group requests larger than MaxGroupFrameSize;
	// each closed its connection.
	OversizedFrames uint64
	// CorrelationMismatches counts responses whose correlation id was not
	// the one expected; each closed its connection.
	CorrelationMismatches uint64
	// UpstreamDialFailures counts failed dials to brokers.
	UpstreamDialFailures uint64
	// TLSHellos counts TLS ClientHellos received on a plaintext listener.
	TLSHellos uint64
	// PlaintextOnTLS counts connections to a TLS listener whose first
	// bytes were not a TLS ClientHello (most often a plaintext Kafka
	// request); each was closed.
	PlaintextOnTLS uint64
	// TLSHandshakeFailures counts client connections to a TLS listener
	// whose handshake failed (no client certificate, an unknown CA, ...).
	TLSHandshakeFailures uint64
	// SASLOpaqueConnections counts connections forwarded as opaque bytes,
	// unobserved, after a SaslHandshake v0 for a mechanism whose bare
	// token exchange kproxy cannot delimit (GSSAPI, unknown ones).
	SASLOpaqueConnections uint64
	// NodesRefused counts the times a response named a broker node that
	// has no valid listener port (BrokerPortBase plus its id above
	// 65535, and not in BrokerListeners); it was left out of what clients
	// were told.
	NodesRefused uint64
	// UpstreamSASLFailures counts upstream connections kproxy could not
	// authenticate (or re-authenticate) with its own SASL credentials;
	// each closed its client connection.
	UpstreamSASLFailures uint64
	// UpstreamReauthentications counts SASL sessions kproxy renewed on a
	// live upstream connection before the broker's session lifetime
	// ended (KIP-368).
	UpstreamReauthentications uint64
	// UnobservedFrames counts requests and responses of interest larger
	// than MaxObservedFrameSize, and responses of interest that arrived
	// with the MaxBufferedBytes budget spent, forwarded without being
	// observed (their exchanges are marked Oversized).
	UnobservedFrames uint64
	// BufferedBytes is what frames read whole (requests and responses)
	// hold of the MaxBufferedBytes budget now; above it while responses
	// kproxy rewrites overdraw it (takeResponse).
	BufferedBytes int64
	// BufferWaits counts request frames that had to wait for the
	// MaxBufferedBytes budget (reading from their client paused).
	BufferWaits uint64
	// FrameReadTimeouts counts connections closed because a request frame
	// of interest took longer than FrameReadTimeout to arrive.
	FrameReadTimeouts uint64
	// TruncatedFrames counts frames cut short: the client or the broker
	// closed or reset the connection between a frame's first and last byte.
	TruncatedFrames uint64
	// ShortFrames counts frames whose declared size is too small to hold a
	// Kafka header; each closed its connection.
	ShortFrames uint64
	// IdleCloses counts client connections closed by IdleTimeout.
	IdleCloses uint64
	// ConnectionsRefused counts client connections closed as soon as
	// accepted because MaxConnections were open.
	ConnectionsRefused uint64
	// ConnectionsRefusedPerIP counts client connections closed as soon as
	// accepted because MaxConnectionsPerIP were open from their address.
	ConnectionsRefusedPerIP uint64
	// AcceptErrors counts failed accepts (out of file descriptors, say).
	AcceptErrors uint64
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
	endpointsDropped      atomic.Uint64
	observerDrops         atomic.Uint64
	oversizedFrames       atomic.Uint64
	correlationMismatches atomic.Uint64
	dialFailures          atomic.Uint64
	tlsHellos             atomic.Uint64
	plaintextOnTLS        atomic.Uint64
	tlsHandshakeFailures  atomic.Uint64
	saslOpaque            atomic.Uint64
	nodesRefused          atomic.Uint64
	upstreamSASLFailures  atomic.Uint64
	upstreamReauths       atomic.Uint64
	unobservedFrames      atomic.Uint64
	frameTimeouts         atomic.Uint64
	truncatedFrames       atomic.Uint64
	shortFrames           atomic.Uint64
	idleCloses            atomic.Uint64
	connsRefused          atomic.Uint64
	connsRefusedPerIP     atomic.Uint64
	acceptErrors          atomic.Uint64
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
		EndpointsDropped:      c.endpointsDropped.Load(),
		ObserverDrops:         c.observerDrops.Load(),
		OversizedFrames:       c.oversizedFrames.Load(),
		CorrelationMismatches: c.correlationMismatches.Load(),
		UpstreamDialFailures:  c.dialFailures.Load(),
		TLSHellos:             c.tlsHellos.Load(),
		PlaintextOnTLS:        c.plaintextOnTLS.Load(),
		TLSHandshakeFailures:  c.tlsHandshakeFailures.Load(),
		SASLOpaqueConnections: c.saslOpaque.Load(),
		NodesRefused:          c.nodesRefused.Load(),

		UpstreamSASLFailures:      c.upstreamSASLFailures.Load(),
		UpstreamReauthentications: c.upstreamReauths.Load(),

		UnobservedFrames:        c.unobservedFrames.Load(),
		FrameReadTimeouts:       c.frameTimeouts.Load(),
		TruncatedFrames:         c.truncatedFrames.Load(),
		ShortFrames:             c.shortFrames.Load(),
		IdleCloses:              c.idleCloses.Load(),
		ConnectionsRefused:      c.connsRefused.Load(),
		ConnectionsRefusedPerIP: c.connsRefusedPerIP.Load(),
		AcceptErrors:            c.acceptErrors.Load(),
	}
}
