// Package decode knows the Kafka protocol as kproxy needs it: request and
// response headers, the Exchange (one request and its response, raw, with
// timing and connection facts), and the translation of exchanges into typed
// consumer-group events, including the embedded consumer and connect
// protocols. Everything here is a pure function over bytes: no I/O, no
// clock, and no panics on bad input.
package decode

import "time"

// Exchange is one request and its response as kproxy saw them on one client
// connection. It is what the proxy hands to the pipeline, what the journal
// stores and what replay reads back, so every field must be kept as seen.
type Exchange struct {
	// ConnID identifies the client connection within one kproxy process.
	ConnID uint64
	// ClientAddr is the client's remote address, "ip:port".
	ClientAddr string
	// BrokerID is the upstream node the connection is forwarded to, or -1
	// for the bootstrap listener (whose upstream is any seed broker).
	BrokerID int32
	// APIKey and APIVersion come from the request header.
	APIKey     int16
	APIVersion int16
	// CorrelationID comes from the request header.
	CorrelationID int32
	// ClientID is the request header's client id ("" when null).
	ClientID string
	// ClientCert is the subject of the certificate the client presented
	// on its connection (mutual TLS, the listener's client CA set), as
	// RFC 2253 prints it ("CN=orders,O=Acme"); "" without one. Every
	// exchange of the connection carries it.
	ClientCert string
	// RequestAt is when the first byte of the request frame was read from
	// the client; ResponseAt is when the response frame was read whole from
	// the broker. ResponseAt is zero when there was no response (the
	// connection closed first, or an API whose request alone is observed,
	// such as Fetch: see RequestOnly).
	RequestAt  time.Time
	ResponseAt time.Time
	// Request and Response are the frames without their 4-byte size
	// prefix: header then body, exactly as on the wire. Response is nil
	// when there was no response.
	Request  []byte
	Response []byte
	// Oversized marks an exchange whose request or response was larger
	// than the proxy's maximum observed frame size: that frame was
	// forwarded without being kept, and is nil here, so the exchange
	// tells that it happened but not what it said. It decodes to one
	// event, with Unobserved set.
	Oversized bool
}

// Latency is the time from request to response, or 0 without a response.
func (x *Exchange) Latency() time.Duration {
	if x.ResponseAt.IsZero() {
		return 0
	}
	return x.ResponseAt.Sub(x.RequestAt)
}

// CompletedAt is when the exchange completed: its response's time, or its
// request's when it had no response. Journals and sources hand exchanges
// out in this order.
func (x *Exchange) CompletedAt() time.Time {
	if x.ResponseAt.IsZero() {
		return x.RequestAt
	}
	return x.ResponseAt
}
