package journal

import (
	"time"

	"github.com/kproxy-dev/kproxy/decode"
)

// Record payload types, the first byte of a record's payload, exported
// for other carriers of the same payloads (the fleet's events topic, whose
// record values are these payloads; docs/fleet.md).
const (
	// RecordExchange is one exchange (docs/journal-format.md, type 1).
	RecordExchange = recExchange
	// RecordGap counts exchanges dropped before this point (type 2).
	RecordGap = recGap
)

// AppendExchangePayload appends x's record payload (type 1, without the
// frame's marker, length and CRC) to dst. Strings longer than 65535 bytes
// are cut.
func AppendExchangePayload(dst []byte, x *decode.Exchange) []byte {
	return appendExchange(dst, x)
}

// ExchangePayloadLen is the length AppendExchangePayload adds for x.
func ExchangePayloadLen(x *decode.Exchange) int { return exchangePayloadLen(x) }

// ParseExchangePayload parses an exchange payload into x, every field of
// which it sets when it succeeds; when it fails, x is as it was. Request
// and Response alias p: the caller must not reuse p while x is in use.
func ParseExchangePayload(x *decode.Exchange, p []byte) error {
	return parseExchangeInto(x, p)
}

// AppendGapPayload appends a gap payload (type 2) to dst: n exchanges
// dropped, noted at at.
func AppendGapPayload(dst []byte, at time.Time, n uint64) []byte {
	return appendGap(dst, at, n)
}

// ParseGapPayload parses a gap payload: when the gap was noted and how
// many exchanges were dropped.
func ParseGapPayload(p []byte) (at time.Time, n uint64, err error) {
	return parseGap(p)
}

// ErrPayload is returned by the Parse functions for a payload that does not
// parse.
var ErrPayload = errPayload

// IsSASL reports whether x is a SASL exchange (SaslHandshake or
// SaslAuthenticate, by its api key or its request frame's own), which
// carries credentials and is never stored or sent anywhere.
func IsSASL(x *decode.Exchange) bool { return isSASL(x) }
